// `mirror export s3://BUCKET/PREFIX` against a real S3: Ceph's radosgw from Debian's packages on
// a one-node cluster started by each test (tests/support/radosgw.hpp). The bucket holds exactly
// the files of `mirror export DIR`, each with its Content-Type, documents uploaded after the
// files they name; nginx in front (docs/nginx/podplane-mirror-s3.conf, as shipped) adds the
// module download header, and a real `terraform init` and a VM's boot fetches run through it.
// A second export uploads nothing; after an import only the new files and the documents that
// changed go up. Bad credentials, a missing bucket, a down endpoint, a foreign prefix and a
// damaged store object each fail with a message naming the object, and change nothing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "base/ascii.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/radosgw.hpp"
#include "tests/support/upstream.hpp"
#include "tests/support/vm_replay.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ListedObject;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::RadosGateway;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

constexpr const char* kBucket = "podplane-mirror";
const std::vector<std::string> kProxyVariables = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"};

// Every regular file of a directory export by its relative path.
std::map<std::string, fs::path> files_of(const fs::path& dir) {
  std::map<std::string, fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) files[fs::relative(entry.path(), dir).string()] = entry.path();
  return files;
}

std::string md5_of(const fs::path& file) { return file_digest_hex(file, DigestAlgorithm::md5); }

// A file that names other files of the site (JSON documents, pages, registry answers): the
// export uploads these after everything they could name.
bool is_document(const std::string& path) {
  return path.starts_with("v1/providers/") || path.ends_with(".json") || path.ends_with(".html") || path.ends_with("/versions") ||
         path.ends_with("/download") ||
         path == "healthz" || path.ends_with("/oci-layout") || path == ".podplane-export";
}

// The stage ordering as the gateway recorded it: every plain file's LastModified is no later
// than the earliest document's. Among `keys` only (those one export run uploaded).
void expect_content_before_documents(const std::map<std::string, ListedObject>& listed, const std::set<std::string>& keys,
                                     const std::string& prefix) {
  std::string latest_content, latest_content_key, earliest_document, earliest_document_key;
  for (const auto& key : keys) {
    const auto& object = listed.at(key);
    const std::string path = key.substr(prefix.size());
    if (path == ".podplane-export" || path.ends_with("/oci-layout")) continue;
    if (is_document(path)) {
      if (earliest_document.empty() || object.last_modified < earliest_document) {
        earliest_document = object.last_modified;
        earliest_document_key = key;
      }
    } else if (object.last_modified > latest_content) {
      latest_content = object.last_modified;
      latest_content_key = key;
    }
  }
  ASSERT_FALSE(latest_content.empty());
  ASSERT_FALSE(earliest_document.empty());
  EXPECT_LE(latest_content, earliest_document) << latest_content_key << " went up after the document " << earliest_document_key;
}

struct Fetched {
  int status = 0;
  std::string content_type, terraform_get, body;
};

// curl through nginx over TLS 1.3 (the shipped config must offer it: nginx 1.22 does not by
// default), trusting the test certificate.
Fetched fetch(const fs::path& work, const std::string& url, const fs::path& ca) {
  const fs::path body = work / "fetched.body", headers = work / "fetched.headers";
  ProcessOptions options;
  options.unset_env = kProxyVariables;
  auto result = run({"curl", "-sS", "--tlsv1.3", "--cacert", ca.string(), "-o", body.string(), "-D", headers.string(), url}, options);
  Fetched fetched;
  if (result.exit_code != 0) {
    ADD_FAILURE() << url << ": curl failed\n" << result.err;
    return fetched;
  }
  fetched.body = read_file(body);
  std::istringstream lines(read_file(headers));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("HTTP/")) fetched.status = std::stoi(line.substr(line.find(' ') + 1, 3));
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon), value = line.substr(colon + 2);
    name = ascii_lower(name);
    if (name == "content-type") fetched.content_type = value.substr(0, value.find(';'));
    if (name == "x-terraform-get") fetched.terraform_get = value;
  }
  return fetched;
}

// The podplane line that sums up an export: "… N uploaded (B bytes), M unchanged, R removed".
std::size_t count_in(const std::string& err, const std::string& what) {
  const auto at = err.find(" " + what);
  if (at == std::string::npos) return static_cast<std::size_t>(-1);
  const auto start = err.find_last_of(" ,:", at - 1) + 1;
  return std::stoul(err.substr(start, at - start));
}

class S3Export : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto missing = RadosGateway::missing_programs(); !missing.empty()) GTEST_SKIP() << missing;
    gateway_ = std::make_unique<RadosGateway>(temp_ / "ceph");
    gateway_->create_bucket(kBucket);
  }

  ProcessOptions aws(const fs::path& deps, const std::map<std::string, std::string>& changes = {}) const {
    ProcessOptions options = podplane::test::with_deps_root(deps);
    for (const auto& [name, value] : gateway_->aws_env()) options.env[name] = value;
    for (const auto& [name, value] : changes) options.env[name] = value;
    options.unset_env = kProxyVariables;
    for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_PROFILE"})
      options.unset_env.push_back(name);
    return options;
  }

  ProcessResult export_to(const fs::path& deps, const std::string& target, const std::vector<std::string>& more = {},
                          const std::map<std::string, std::string>& changes = {}) const {
    std::vector<std::string> args{"mirror", "export", target};
    args.insert(args.end(), more.begin(), more.end());
    return run_podplane(args, aws(deps, changes));
  }

  TempDir temp_;
  std::unique_ptr<RadosGateway> gateway_;
};

// The stack of tests/data/generator/aws, its deps mirror URL replaced, created from the store.
fs::path create_stack(const fs::path& deps, const fs::path& dir, const std::string& mirror) {
  fs::create_directories(dir);
  std::string config = read_file(podplane::test::test_data_dir() / "generator" / "aws" / "podplane.cluster.jsonc");
  config.replace(config.find("http://mirror.internal:8080"), 27, mirror);
  podplane::test::write_file(dir / "podplane.cluster.jsonc", config);
  ProcessOptions options = podplane::test::with_deps_root(deps);
  options.unset_env = {"PODPLANE_DEPS_URL", "TF_CLI_CONFIG_FILE", "SSL_CERT_FILE"};
  options.cwd = dir;
  auto created = run_podplane({"cluster", "create", "--no-apply"}, options);
  EXPECT_EQ(created.exit_code, 0) << show(created);
  return dir;
}

TEST_F(S3Export, TerraformInitAndVmBootFetchesRunThroughNginxInFrontOfTheBucket) {
  if (!podplane::test::have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
  ASSERT_TRUE(fs::exists("/usr/sbin/nginx")) << "nginx is missing: apt-get install nginx-light";
  const fs::path deps = temp_ / "deps";
  {
    podplane::test::FixtureUpstream upstream;
    ProcessOptions online;
    online.env = upstream.env(deps, upstream.write_cli_config(temp_ / "upstream.tfrc"));
    online.unset_env = kProxyVariables;
    auto tf = run_podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--platform", "linux_amd64", "--platform",
                            "linux_arm64"}, online);
    ASSERT_EQ(tf.exit_code, 0) << show(tf);
    auto download = run_podplane({"--quiet", "deps", "download", "--arch", "amd64,arm64", "--providers", "aws"}, online);
    ASSERT_EQ(download.exit_code, 0) << show(download);
  }  // the upstream is gone: only the bucket answers from here on
  const std::string stack_mirror = "https://mirror.site.internal";
  const fs::path stack = create_stack(deps, temp_ / "stack", stack_mirror);

  auto exported = export_to(deps, std::string("s3://") + kBucket + "/site");
  ASSERT_EQ(exported.exit_code, 0) << show(exported) << gateway_->logs();
  auto directory = run_podplane({"mirror", "export", (temp_ / "dir-export").string()}, podplane::test::with_deps_root(deps));
  ASSERT_EQ(directory.exit_code, 0) << show(directory);

  // The bucket holds exactly the directory export's files, byte for byte (the ETag of a single
  // PUT is the MD5 of its bytes).
  const auto listed = gateway_->list(kBucket, "site/");
  const auto files = files_of(temp_ / "dir-export");
  std::set<std::string> keys, expected_keys;
  for (const auto& [key, object] : listed) keys.insert(key);
  for (const auto& [path, file] : files) {
    const std::string key = "site/" + path;
    expected_keys.insert(key);
    auto found = listed.find(key);
    if (found == listed.end()) continue;
    EXPECT_EQ(found->second.size, fs::file_size(file)) << key;
    if (found->second.etag.find('-') == std::string::npos) { EXPECT_EQ(found->second.etag, md5_of(file)) << key; }
  }
  EXPECT_EQ(keys, expected_keys);
  EXPECT_GT(keys.size(), 20u);
  EXPECT_EQ(count_in(exported.err, "uploaded"), keys.size()) << exported.err;
  expect_content_before_documents(listed, keys, "site/");

  // nginx in front, the bucket readable by anyone under the prefix.
  gateway_->allow_public_read(kBucket, "site/");
  podplane::test::NginxInFront nginx(*gateway_, kBucket, "site/", temp_ / "nginx");
  const std::string base = nginx.url();
  const fs::path ca = nginx.ca_file();
  std::size_t downloads = 0;
  for (const auto& [path, file] : files) {
    if (path.starts_with(".")) continue;
    auto got = fetch(temp_.path(), base + "/" + path, ca);
    EXPECT_EQ(got.status, 200) << path;
    EXPECT_TRUE(got.body == read_file(file)) << path;
    if (path.ends_with(".json") || path.starts_with("v1/providers/")) { EXPECT_EQ(got.content_type, "application/json") << path; }
    if (path.ends_with(".html")) { EXPECT_EQ(got.content_type, "text/html") << path; }
    if (path.ends_with(".zip")) { EXPECT_EQ(got.content_type, "application/zip") << path; }
    if (path.starts_with("v1/modules/") && path.ends_with("/download")) {
      ++downloads;
      EXPECT_EQ(got.terraform_get, "./package.tar.gz") << path;
    } else {
      EXPECT_EQ(got.terraform_get, "") << path;
    }
  }
  EXPECT_GT(downloads, 0u);
  EXPECT_EQ(fetch(temp_.path(), base + "/.podplane-export", ca).status, 404);
  EXPECT_EQ(fetch(temp_.path(), base + "/v1/mirror/no/such/file.json", ca).status, 404);
  const auto page = fetch(temp_.path(), base + "/catalogue/", ca);
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body, read_file(temp_ / "dir-export" / "catalogue" / "index.html"));

  // terraform init: providers through the registry protocol (upstream signatures checked by
  // terraform itself) and a registry module, all from the bucket through nginx.
  podplane::test::write_file(temp_ / "terraform.tfrc", podplane::test::mirror_serve_host_blocks(base + "/") + "disable_checkpoint = true\n");
  podplane::test::write_file(temp_ / "tf" / "main.tf", R"(terraform {
  required_providers {
    aws      = { source = "hashicorp/aws", version = ">= 6.0" }
    podplane = { source = "podplane/podplane", version = ">= 1.2.0" }
  }
}

module "account" {
  source  = "nstance-dev/nstance/aws//modules/account"
  version = "~> 2.0"
}
)");
  ProcessOptions tf;
  tf.cwd = temp_ / "tf";
  tf.env = {{"TF_CLI_CONFIG_FILE", (temp_ / "terraform.tfrc").string()},
            {"SSL_CERT_FILE", ca.string()},
            {"HOME", temp_.path().string()},
            {"CHECKPOINT_DISABLE", "1"},
            {"HTTPS_PROXY", "http://127.0.0.1:9"},
            {"https_proxy", "http://127.0.0.1:9"},
            {"NO_PROXY", "127.0.0.1"},
            {"no_proxy", "127.0.0.1"}};
  tf.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR"};
  auto init = podplane::test::run({"terraform", "init", "-backend=false", "-input=false", "-no-color"}, tf);
  ASSERT_EQ(init.exit_code, 0) << init.out << init.err << "\nnginx:\n" << read_file(nginx.error_log());
  EXPECT_NE(init.out.find("Installed hashicorp/aws v6.2.0 (self-signed, key ID"), std::string::npos) << init.out;
  EXPECT_EQ(init.out.find("unauthenticated"), std::string::npos) << init.out;
  EXPECT_TRUE(fs::exists(temp_ / "tf" / ".terraform" / "modules" / "account")) << init.out;
  const std::string access = read_file(nginx.access_log());
  EXPECT_NE(access.find("/download HTTP/1.1\" 200"), std::string::npos) << access;

  // Each VM of the stack boots from the bucket: its artifacts fetched and checked as its userdata does.
  std::set<std::string> replayed;
  for (const auto& userdata : podplane::test::userdata_of(read_file(stack / "podplane.cluster.main.tf"))) {
    if (!replayed.insert(userdata.label).second) continue;
    ASSERT_TRUE(userdata.mirror_url.starts_with(stack_mirror)) << userdata.mirror_url;
    json manifest = json::parse(read_file(stack / userdata.manifest_file));
    const std::string vm_base = base + userdata.mirror_url.substr(stack_mirror.size());
    auto replay = podplane::test::replay_vm(manifest, "aws", vm_base, temp_ / "vm" / userdata.label, ca);
    EXPECT_GT(replay.items, 5u) << userdata.label;
    EXPECT_TRUE(replay.ok()) << userdata.label << " at " << vm_base << "\n" << replay.describe();
  }
  // The stack's control plane is arm64, its workers amd64 and its ingress arm64.
  EXPECT_EQ(replayed, (std::set<std::string>{"knc_arm64", "knd_amd64", "knd_arm64"}));
}

// What changed between two listings: keys added, and keys whose object was put again.
struct Changes {
  std::set<std::string> added, rewritten, unchanged;
};

Changes compare(const std::map<std::string, ListedObject>& before, const std::map<std::string, ListedObject>& after) {
  Changes changes;
  for (const auto& [key, object] : after) {
    auto old = before.find(key);
    if (old == before.end())
      changes.added.insert(key);
    else if (old->second.last_modified != object.last_modified || old->second.etag != object.etag)
      changes.rewritten.insert(key);
    else
      changes.unchanged.insert(key);
  }
  return changes;
}

TEST_F(S3Export, ASecondExportUploadsNothingAndAfterAnImportOnlyNewFilesAndChangedDocumentsGoUp) {
  const fs::path deps = temp_ / "deps", online = temp_ / "online";
  (void)fill_store(deps, temp_ / "work");
  const std::string target = std::string("s3://") + kBucket + "/sites/a";
  auto first = export_to(deps, target);
  ASSERT_EQ(first.exit_code, 0) << show(first) << gateway_->logs();
  const auto after_first = gateway_->list(kBucket, "sites/a/");
  ASSERT_GT(after_first.size(), 10u);
  EXPECT_EQ(count_in(first.err, "uploaded"), after_first.size()) << first.err;
  EXPECT_TRUE(after_first.contains("sites/a/.podplane-export"));

  // Up to date: nothing is put (the gateway's LastModified of every key is as it was).
  auto second = export_to(deps, target);
  ASSERT_EQ(second.exit_code, 0) << show(second);
  EXPECT_EQ(count_in(second.err, "uploaded"), 0u) << second.err;
  EXPECT_EQ(count_in(second.err, "unchanged"), after_first.size()) << second.err;
  const auto after_second = gateway_->list(kBucket, "sites/a/");
  auto same = compare(after_first, after_second);
  EXPECT_TRUE(same.added.empty() && same.rewritten.empty()) << *same.added.begin() << " " << *same.rewritten.begin();
  EXPECT_EQ(same.unchanged.size(), after_first.size());

  // A delta bundle brings a provider release; its import adds rows to the store.
  fs::copy(deps, online, fs::copy_options::recursive);
  add_null_release(online, temp_ / "work", "3.2.9", {"linux_amd64", "linux_arm64"});
  auto inventory = run_podplane({"bundle", "inventory", "-o", (temp_ / "inventory.json").string()}, podplane::test::with_deps_root(deps));
  ASSERT_EQ(inventory.exit_code, 0) << show(inventory);
  auto created = run_podplane({"bundle", "create", (temp_ / "delta.bundle").string(), "--since", (temp_ / "inventory.json").string()},
                              podplane::test::with_deps_root(online));
  ASSERT_EQ(created.exit_code, 0) << show(created);
  auto imported = run_podplane({"bundle", "import", (temp_ / "delta.bundle").string(), "--allow-unsigned"},
                               podplane::test::with_deps_root(deps));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);

  auto third = export_to(deps, target);
  ASSERT_EQ(third.exit_code, 0) << show(third);
  const auto after_third = gateway_->list(kBucket, "sites/a/");
  auto changes = compare(after_second, after_third);
  const std::string null_dir = "sites/a/v1/mirror/registry.opentofu.org/hashicorp/null/";
  // New: the two zips and the release's listing; changed: the documents that list it.
  EXPECT_TRUE(changes.added.contains(null_dir + "terraform-provider-null_3.2.9_linux_amd64.zip")) << show(third);
  EXPECT_TRUE(changes.added.contains(null_dir + "terraform-provider-null_3.2.9_linux_arm64.zip"));
  EXPECT_TRUE(changes.added.contains(null_dir + "3.2.9.json"));
  EXPECT_TRUE(changes.rewritten.contains(null_dir + "index.json"));
  EXPECT_TRUE(changes.rewritten.contains("sites/a/catalogue.json"));
  for (const auto& key : changes.rewritten) EXPECT_TRUE(is_document(key.substr(8))) << key << " is not a document, yet it went up again";
  for (const auto& key : changes.unchanged) EXPECT_EQ(after_third.at(key).etag, after_second.at(key).etag) << key;
  EXPECT_EQ(count_in(third.err, "uploaded"), changes.added.size() + changes.rewritten.size()) << third.err;
  EXPECT_EQ(count_in(third.err, "unchanged"), changes.unchanged.size()) << third.err;
  // The new zips went up before any document that names them.
  std::set<std::string> uploaded = changes.added;
  uploaded.insert(changes.rewritten.begin(), changes.rewritten.end());
  expect_content_before_documents(after_third, uploaded, "sites/a/");

  // A key the export no longer holds (a pruned release's file, here put by hand) is removed, last.
  gateway_->put_object(kBucket, "sites/a/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.0.0_linux_amd64.zip", "old");
  auto fourth = export_to(deps, target);
  ASSERT_EQ(fourth.exit_code, 0) << show(fourth);
  EXPECT_EQ(count_in(fourth.err, "uploaded"), 0u) << fourth.err;
  EXPECT_EQ(count_in(fourth.err, "removed"), 1u) << fourth.err;
  EXPECT_EQ(gateway_->list(kBucket, "sites/a/").size(), after_third.size());

  // Each object carries its media type, as a reader of the bucket gets it.
  EXPECT_EQ(gateway_->get(kBucket, null_dir + "3.2.9.json").second, "application/json");
  EXPECT_EQ(gateway_->get(kBucket, null_dir + "terraform-provider-null_3.2.9_linux_amd64.zip").second, "application/zip");
  EXPECT_EQ(gateway_->get(kBucket, "sites/a/catalogue/index.html").second, "text/html; charset=utf-8");
}

TEST_F(S3Export, BadCredentialsAMissingBucketADownEndpointAndAForeignPrefixFailClearlyAndChangeNothing) {
  const fs::path deps = temp_ / "deps";
  (void)fill_store(deps, temp_ / "work");
  const std::string target = std::string("s3://") + kBucket + "/site";

  auto wrong_secret = export_to(deps, target, {}, {{"AWS_SECRET_ACCESS_KEY", "not-the-secret"}});
  EXPECT_EQ(wrong_secret.exit_code, 1) << show(wrong_secret);
  EXPECT_NE(wrong_secret.err.find("cannot list s3://podplane-mirror/site/ at " + gateway_->endpoint()), std::string::npos) << wrong_secret.err;
  EXPECT_NE(wrong_secret.err.find("SignatureDoesNotMatch (HTTP 403)"), std::string::npos) << wrong_secret.err;
  EXPECT_NE(wrong_secret.err.find("check AWS_SECRET_ACCESS_KEY"), std::string::npos) << wrong_secret.err;
  EXPECT_EQ(wrong_secret.err.find("not-the-secret"), std::string::npos) << "the secret was printed:\n" << wrong_secret.err;

  auto unknown_key = export_to(deps, target, {}, {{"AWS_ACCESS_KEY_ID", "nobody"}});
  EXPECT_EQ(unknown_key.exit_code, 1) << show(unknown_key);
  EXPECT_NE(unknown_key.err.find("InvalidAccessKeyId"), std::string::npos) << unknown_key.err;
  EXPECT_NE(unknown_key.err.find("check AWS_ACCESS_KEY_ID"), std::string::npos) << unknown_key.err;

  auto no_bucket = export_to(deps, "s3://no-such-bucket/site");
  EXPECT_EQ(no_bucket.exit_code, 1) << show(no_bucket);
  EXPECT_NE(no_bucket.err.find("cannot list s3://no-such-bucket/site/"), std::string::npos) << no_bucket.err;
  EXPECT_NE(no_bucket.err.find("NoSuchBucket (HTTP 404)"), std::string::npos) << no_bucket.err;

  const std::string down = "http://127.0.0.1:" + std::to_string(free_port());
  auto unreachable = export_to(deps, target, {}, {{"AWS_ENDPOINT_URL", down}, {"PODPLANE_HTTP_RETRIES", "1"}});
  EXPECT_EQ(unreachable.exit_code, 1) << show(unreachable);
  EXPECT_NE(unreachable.err.find("cannot list s3://podplane-mirror/site/ at " + down), std::string::npos) << unreachable.err;
  EXPECT_NE(unreachable.err.find("onnect"), std::string::npos) << unreachable.err;  // "Couldn't connect", "Connection refused"

  auto no_credentials = run_podplane({"mirror", "export", target}, [&] {
    auto options = aws(deps);
    options.unset_env.push_back("AWS_ACCESS_KEY_ID");
    options.env.erase("AWS_ACCESS_KEY_ID");
    return options;
  }());
  EXPECT_EQ(no_credentials.exit_code, 2) << show(no_credentials);
  EXPECT_NE(no_credentials.err.find("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), std::string::npos) << no_credentials.err;
  for (const std::string bad : {"s3://", "s3://ab", "s3://bucket/../x", "s3://bucket/a//b", "s3://bu/cket"}) {
    auto refused = export_to(deps, bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << "\n" << show(refused);
    EXPECT_NE(refused.err.find("s3://BUCKET[/PREFIX]"), std::string::npos) << refused.err;
  }
  EXPECT_TRUE(gateway_->list(kBucket).empty()) << "a failed export wrote to the bucket";

  // A prefix that holds something else is not taken over.
  gateway_->put_object(kBucket, "theirs/precious.txt", "keep me");
  auto foreign = export_to(deps, std::string("s3://") + kBucket + "/theirs");
  EXPECT_EQ(foreign.exit_code, 1) << show(foreign);
  EXPECT_NE(foreign.err.find("refusing to write to s3://podplane-mirror/theirs/"), std::string::npos) << foreign.err;
  EXPECT_NE(foreign.err.find("no s3://podplane-mirror/theirs/.podplane-export"), std::string::npos) << foreign.err;
  const auto theirs = gateway_->list(kBucket, "theirs/");
  EXPECT_EQ(theirs.size(), 1u);
  EXPECT_EQ(gateway_->get(kBucket, "theirs/precious.txt").first, "keep me");

  // A damaged store object fails the export, named; it is never uploaded, and no document went
  // up (they would name files the bucket lacks).
  auto store = cache::Store::open(deps, cache::Store::Access::read_only);
  std::string damaged_name, damaged_digest;
  for (const auto& artifact : store.artifacts())
    if (artifact.filename.ends_with("linux_amd64.zip")) std::tie(damaged_name, damaged_digest) = std::tie(artifact.filename, artifact.digest);
  ASSERT_FALSE(damaged_digest.empty());
  const fs::path object = store.object_path(damaged_digest);
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream out(object, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(100);
    out.put('\x7f');
  }
  auto damaged = export_to(deps, target);
  EXPECT_EQ(damaged.exit_code, 1) << show(damaged);
  EXPECT_NE(damaged.err.find("not exporting /v1/mirror/"), std::string::npos) << damaged.err;
  EXPECT_NE(damaged.err.find(damaged_name + ": "), std::string::npos) << damaged.err;
  for (const auto& [key, listed] : gateway_->list(kBucket, "site/")) {
    EXPECT_FALSE(key.ends_with("/" + damaged_name)) << key << ": the damaged object went up";
    EXPECT_TRUE(key == "site/.podplane-export" || !is_document(key.substr(5))) << key << " went up before the content it names";
  }
}

// The peak resident memory of one podplane run: the VmHWM of its own address space, sampled
// every 5 ms once it runs podplane (wait4's ru_maxrss would count the test process it was
// forked from). A high-water mark only grows, so a sample misses at most the last 5 ms.
struct Measured {
  int exit_code = -1;
  long peak_kib = 0;
  std::string err;
};

long vm_hwm_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
  return 0;
}

Measured run_measured(const std::vector<std::string>& args, const ProcessOptions& options, const fs::path& err_file) {
  const std::string binary = podplane::test::podplane_binary().string();
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& name : options.unset_env) ::unsetenv(name.c_str());
    for (const auto& [name, value] : options.env) ::setenv(name.c_str(), value.c_str(), 1);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, 2);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  Measured measured;
  const fs::path exe = "/proc/" + std::to_string(pid) + "/exe";
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      measured.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    std::error_code ec;
    if (done == 0 && fs::read_symlink(exe, ec) == fs::path(binary)) measured.peak_kib = std::max(measured.peak_kib, vm_hwm_kib(pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  measured.err = read_file(err_file);
  return measured;
}

TEST_F(S3Export, LargeObjectsGoUpInPartsStreamedFromTheStore) {
  const fs::path deps = temp_ / "deps";
  constexpr std::size_t kArtifactSize = 40u << 20;
  auto contents = fill_store(deps, temp_ / "work", 4096, kArtifactSize);
  const std::string artifact_key = "big/" + contents.artifact_path.substr(1);

  auto exported = run_measured({"mirror", "export", std::string("s3://") + kBucket + "/big"}, aws(deps), temp_ / "export.err");
  ASSERT_EQ(exported.exit_code, 0) << exported.err << gateway_->logs();
  auto listed = gateway_->list(kBucket, "big/");
  ASSERT_TRUE(listed.contains(artifact_key)) << artifact_key;
  // 40 MiB in parts of 16 MiB: three parts, and the ETag S3 gives such an upload.
  EXPECT_TRUE(listed.at(artifact_key).etag.ends_with("-3")) << listed.at(artifact_key).etag;
  EXPECT_EQ(listed.at(artifact_key).size, kArtifactSize);
  auto [bytes, type] = gateway_->get(kBucket, artifact_key);
  EXPECT_EQ(digest_of(bytes), digest_of(contents.artifact_bytes));
  EXPECT_EQ(type, "application/gzip");
  // Streamed: the export of the 40 MiB object takes less memory than one part more than the
  // export of the same store with a 64 KiB object (the baseline: the site, libcurl, the binary).
  const fs::path small_deps = temp_ / "small-deps";
  (void)fill_store(small_deps, temp_ / "small-work", 4096, 64 * 1024);
  auto baseline = run_measured({"mirror", "export", std::string("s3://") + kBucket + "/baseline"}, aws(small_deps), temp_ / "baseline.err");
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  EXPECT_LT(exported.peak_kib - baseline.peak_kib, 8 * 1024) << "peak RSS " << exported.peak_kib << " KiB against "
                                                              << baseline.peak_kib << " KiB for the small store";
  std::cout << "mirror export s3:// peak RSS: " << exported.peak_kib << " KiB with a 40 MiB object, " << baseline.peak_kib
            << " KiB with a 64 KiB one\n";

  // The multipart ETag is computed again, so an up-to-date bucket gets nothing, large files included.
  auto again = export_to(deps, std::string("s3://") + kBucket + "/big");
  ASSERT_EQ(again.exit_code, 0) << show(again);
  EXPECT_EQ(count_in(again.err, "uploaded"), 0u) << again.err;

  // --part-size: 40 MiB in parts of 5 MiB.
  auto small_parts = export_to(deps, std::string("s3://") + kBucket + "/small-parts", {"--part-size", "5M"});
  ASSERT_EQ(small_parts.exit_code, 0) << show(small_parts);
  const std::string small_key = "small-parts/" + contents.artifact_path.substr(1);
  EXPECT_TRUE(gateway_->list(kBucket, "small-parts/").at(small_key).etag.ends_with("-8"));
  EXPECT_EQ(digest_of(gateway_->get(kBucket, small_key).first), digest_of(contents.artifact_bytes));
  auto too_small = export_to(deps, std::string("s3://") + kBucket + "/small-parts", {"--part-size", "1M"});
  EXPECT_EQ(too_small.exit_code, 2) << show(too_small);
}

}  // namespace
}  // namespace podplane::serve_test
