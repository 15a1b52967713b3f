// terraform-provider-<type>: a provider plugin the real engine can run, for tests that need
// `terraform validate` (it starts every provider of a configuration and asks for its schema).
// It speaks the go-plugin handshake the engines use and plugin protocol 6, announcing the
// schemas of provider_schemas.cpp. It plays the provider its own file name says
// (terraform-provider-podplane_v1.3.0 -> podplane), as a zip carries it under that name.
// Test support only: it plans and applies nothing.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <sstream>
#include <string>

#include "tests/tools/tfplugin/auto_mtls.hpp"
#include "tests/tools/tfplugin/provider_schemas.hpp"
#include "tfplugin/grpc_controller.grpc.pb.h"
#include "tfplugin/tfplugin6.grpc.pb.h"

namespace fs = std::filesystem;
using podplane::tfplugin::AttributeSchema;
using podplane::tfplugin::BlockSchema;
using podplane::tfplugin::Presence;
using podplane::tfplugin::ProviderSchemas;

namespace {

// The handshake cookie of Terraform and OpenTofu plugins (go-plugin's HandshakeConfig): a
// plugin started by anything else says so and exits, as the real ones do.
constexpr const char* kCookieKey = "TF_PLUGIN_MAGIC_COOKIE";
constexpr const char* kCookieValue = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

// Set once the engine asks the plugin to exit; main() then stops the server (a handler cannot:
// grpc::Server::Shutdown waits for the handler itself).
struct ExitSignal {
  std::mutex mutex;
  std::condition_variable changed;
  bool requested = false;
  void request() {
    std::lock_guard lock(mutex);
    requested = true;
    changed.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return requested; });
  }
};

void fill_schema(const BlockSchema& block, tfplugin6::Schema* out) {
  auto* body = out->mutable_block();
  for (const AttributeSchema& attribute : block.attributes) {
    auto* a = body->add_attributes();
    a->set_name(attribute.name);
    a->set_type(attribute.cty_type);
    a->set_required(attribute.presence == Presence::required);
    a->set_optional(attribute.presence == Presence::optional);
    a->set_computed(attribute.presence == Presence::computed);
  }
}

class Provider final : public tfplugin6::Provider::Service {
 public:
  explicit Provider(ProviderSchemas schemas) : schemas_(std::move(schemas)) {}

  grpc::Status GetProviderSchema(grpc::ServerContext*, const tfplugin6::GetProviderSchema::Request*,
                                 tfplugin6::GetProviderSchema::Response* response) override {
    fill_schema(schemas_.provider, response->mutable_provider());
    for (const auto& resource : schemas_.resources)
      fill_schema(resource, &(*response->mutable_resource_schemas())[resource.type_name]);
    for (const auto& data_source : schemas_.data_sources)
      fill_schema(data_source, &(*response->mutable_data_source_schemas())[data_source.type_name]);
    return grpc::Status::OK;
  }
  // The engine checks every argument against the schema before it calls these; the real
  // provider adds checks only at plan and apply, which this fixture never reaches.
  grpc::Status ValidateProviderConfig(grpc::ServerContext*, const tfplugin6::ValidateProviderConfig::Request*,
                                      tfplugin6::ValidateProviderConfig::Response*) override {
    return grpc::Status::OK;
  }
  grpc::Status ValidateResourceConfig(grpc::ServerContext*, const tfplugin6::ValidateResourceConfig::Request*,
                                      tfplugin6::ValidateResourceConfig::Response*) override {
    return grpc::Status::OK;
  }
  grpc::Status ValidateDataResourceConfig(grpc::ServerContext*, const tfplugin6::ValidateDataResourceConfig::Request*,
                                          tfplugin6::ValidateDataResourceConfig::Response*) override {
    return grpc::Status::OK;
  }
  grpc::Status StopProvider(grpc::ServerContext*, const tfplugin6::StopProvider::Request*,
                            tfplugin6::StopProvider::Response*) override {
    return grpc::Status::OK;  // nothing runs long enough to be stopped
  }

 private:
  ProviderSchemas schemas_;
};

class Controller final : public plugin::GRPCController::Service {
 public:
  explicit Controller(ExitSignal& exit) : exit_(exit) {}
  grpc::Status Shutdown(grpc::ServerContext*, const plugin::Empty*, plugin::Empty*) override {
    exit_.request();
    return grpc::Status::OK;
  }

 private:
  ExitSignal& exit_;
};

// The private directory of the plugin's socket, removed when the plugin exits (an engine that
// kills the plugin leaves it behind: tests point TMPDIR into their own temp dir).
class SocketDir {
 public:
  // Throws std::runtime_error when the directory cannot be made under `base`.
  explicit SocketDir(const fs::path& base) : path_((base / "tfplugin-XXXXXX").string()) {
    if (mkdtemp(path_.data()) == nullptr) throw std::runtime_error("cannot make a socket directory under " + base.string());
  }
  ~SocketDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  SocketDir(const SocketDir&) = delete;
  SocketDir& operator=(const SocketDir&) = delete;
  [[nodiscard]] std::string socket() const { return path_ + "/plugin.sock"; }

 private:
  std::string path_;
};

// "terraform-provider-podplane_v1.3.0_x6" -> "podplane".
std::string provider_type(const char* argv0) {
  std::string name = fs::path(argv0).filename().string();
  const std::string prefix = "terraform-provider-";
  if (name.rfind(prefix, 0) != 0) return "";
  name = name.substr(prefix.size());
  return name.substr(0, name.find('_'));
}

bool offers_protocol_6() {
  const char* versions = std::getenv("PLUGIN_PROTOCOL_VERSIONS");
  if (versions == nullptr) return true;  // an engine that predates the variable speaks the default
  std::stringstream list(versions);
  for (std::string version; std::getline(list, version, ',');)
    if (version == "6") return true;
  return false;
}

}  // namespace

int main(int, char** argv) {
  const char* cookie = std::getenv(kCookieKey);
  if (cookie == nullptr || std::string(cookie) != kCookieValue) {
    std::cerr << "This binary is a plugin. These are not meant to be executed directly.\n"
                 "Please execute the program that consumes these plugins, which will load any plugins automatically\n";
    return 1;
  }
  if (!offers_protocol_6()) {
    std::cerr << "the engine offers plugin protocols " << std::getenv("PLUGIN_PROTOCOL_VERSIONS")
              << "; this plugin speaks only 6\n";
    return 1;
  }
  ProviderSchemas schemas;
  try {
    schemas = podplane::tfplugin::provider_schemas(provider_type(argv[0]));
  } catch (const std::exception& e) {
    std::cerr << e.what() << " (from its file name " << argv[0] << ")\n";
    return 1;
  }
  // The engine sends an interrupt to the whole process group on Ctrl-C and then asks the
  // plugin to stop through the controller, as go-plugin servers expect.
  std::signal(SIGINT, SIG_IGN);

  const char* socket_base = std::getenv("PLUGIN_UNIX_SOCKET_DIR");
  if (socket_base == nullptr) socket_base = std::getenv("TMPDIR");
  std::optional<SocketDir> socket_dir;
  try {
    socket_dir.emplace(socket_base ? socket_base : "/tmp");
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const std::string socket = socket_dir->socket();

  // AutoMTLS when the engine sent its certificate (terraform 1.11 always does): the engine
  // then dials with TLS whatever the handshake says (TF_LOG=trace shows "tls: first record
  // does not look like a TLS handshake" otherwise), and trusts only the certificate printed.
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  std::string certificate_field;
  if (const char* client_cert = std::getenv("PLUGIN_CLIENT_CERT"); client_cert != nullptr && *client_cert != '\0') {
    podplane::tfplugin::ServerIdentity identity;
    try {
      identity = podplane::tfplugin::make_server_identity();
    } catch (const std::exception& e) {
      std::cerr << "cannot make the plugin's TLS certificate: " << e.what() << "\n";
      return 1;
    }
    grpc::SslServerCredentialsOptions tls(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_root_certs = client_cert;
    tls.pem_key_cert_pairs.push_back({identity.key_pem, identity.certificate_pem});
    credentials = grpc::SslServerCredentials(tls);
    certificate_field = identity.handshake_field;
  }

  ExitSignal shutdown_requested;
  Provider provider(std::move(schemas));
  Controller controller(shutdown_requested);
  grpc::EnableDefaultHealthCheckService(true);  // go-plugin's Ping asks the "plugin" service
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, credentials);
  builder.RegisterService(&provider);
  builder.RegisterService(&controller);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "cannot listen on unix:" << socket << "\n";
    return 1;
  }
  server->GetHealthCheckService()->SetServingStatus("plugin", true);

  // core protocol | app protocol | network | address | protocol | server certificate.
  std::cout << "1|6|unix|" << socket << "|grpc|" << certificate_field << std::endl;

  shutdown_requested.wait();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}
