// podplane mirror serve | export | push: hand the store to tofu/terraform clients and VMs.
#include <chrono>
#include <iostream>
#include <memory>

#include "base/error.hpp"
#include "base/url.hpp"
#include "cache/store.hpp"
#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/export.hpp"
#include "mirror/s3_export.hpp"
#include "mirror/push.hpp"
#include "mirror/serve.hpp"
#include "net/s3_client.hpp"

namespace podplane::cli {

namespace {

struct ServeArgs {
  std::string listen = "127.0.0.1:8443";
  std::string tls_cert, tls_key;
  bool plain_http = false;
  std::size_t threads = 64;
  std::size_t per_client = 64;
  std::size_t header_timeout = 60;
  std::size_t watch_ms = 1000;
  std::string registry_host;
  std::string public_url;
  std::string access_log = "text";
};

struct ExportArgs {
  std::string dir;
  std::string registry_host;
  std::string public_url;
  std::uint64_t part_size = std::uint64_t{16} << 20;
};

struct PushArgs {
  std::string target;
  bool plain_http = false;
  std::string ca_file;
  std::size_t chunk_size = 16 * 1024 * 1024;
  std::string authfile;
  std::string creds_file;
};

// `mirror export` writes a directory or an s3:// bucket; any other "scheme://…" target (gs://,
// https://, …) is a URL, which the path would silently turn into local directories
// ("gs:/bucket/x"). Refused before anything is opened or written.
void refuse_url_target(const std::string& dir) {
  const std::string scheme(url_scheme(dir));
  if (scheme.empty()) return;
  throw UsageError(mismatch_message("mirror export writes a local directory or an s3:// bucket; " + scheme +
                                        ":// targets are not supported (export to a directory, then copy it with your own "
                                        "tool, or serve it with `podplane mirror serve`)",
                                    "DIR, a local directory path (e.g. /srv/podplane-mirror), or s3://BUCKET/PREFIX", dir));
}

void export_to_bucket(const ExportArgs& args, const mirror::SiteOptions& site, bool quiet) {
  const auto target = mirror::parse_s3_target(args.dir);
  net::S3Bucket bucket(net::S3Config::from_environment(), target.bucket);
  mirror::S3ExportOptions options;
  options.site = site;
  options.part_size = args.part_size;
  auto stats = mirror::export_to_s3(cache::default_deps_root(), target, bucket, options);
  if (!quiet)
    std::cerr << "podplane: exported " << stats.files << " files"
              << (stats.git_repositories ? " (" + std::to_string(stats.git_repositories) + " git repositories)" : "") << " to "
              << args.dir << " at " << bucket.endpoint() << ": "
              << stats.uploaded << " uploaded (" << stats.bytes_uploaded << " bytes), " << stats.unchanged
              << " unchanged, " << stats.removed << " removed\n";
}

}  // namespace

void register_mirror_commands(CLI::App& group, const GlobalOptions& global) {
  auto serve_args = std::make_shared<ServeArgs>();
  auto* serve = group.add_subcommand("serve", "Serve the store read-only over HTTPS (registry, network mirror, modules, vmconfig)");
  serve->add_option("--listen", serve_args->listen, "HOST:PORT to listen on (port 0 picks a free port)")
      ->capture_default_str();
  serve->add_option("--tls-cert", serve_args->tls_cert, "PEM certificate chain");
  serve->add_option("--tls-key", serve_args->tls_key, "PEM private key");
  serve->add_flag("--plain-http", serve_args->plain_http, "Serve plain HTTP instead of HTTPS (tofu needs HTTPS)");
  serve->add_option("--threads", serve_args->threads,
                    "Worker threads: requests answered at once (one client address gets at most half)")
      ->capture_default_str()
      ->transform(whole_number(2, 4096));
  serve->add_option("--max-connections-per-client", serve_args->per_client,
                    "Open connections one client address may hold; more are refused")
      ->capture_default_str()
      ->transform(whole_number(1, 100000));
  serve->add_option("--header-timeout", serve_args->header_timeout,
                    "Seconds a client has for the TLS handshake and each request head")
      ->capture_default_str()
      ->transform(whole_number(1, 3600));
  serve->add_option("--registry-host", serve_args->registry_host,
                    "Origin registry that /.well-known/terraform.json answers for (default: by the engine of deps tf)");
  serve->add_option("--public-url", serve_args->public_url,
                    "URL clients reach this mirror at, for the catalogue's snippets (default: the request's Host)");
  serve->add_option("--watch-interval", serve_args->watch_ms,
                    "Milliseconds between checks of the index for a new fill or import, whose site then replaces the "
                    "old one whole (0: only on SIGHUP)")
      ->capture_default_str()
      ->transform(whole_number(0, 3600000));
  serve->add_option("--access-log", serve_args->access_log,
                    "Access log format on stderr: text (one combined-log-like line per request) or json (one object "
                    "per line, same fields)")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  serve->callback([serve_args] {
    mirror::ServeOptions options;
    options.listen = serve_args->listen;
    options.index_poll = std::chrono::milliseconds(serve_args->watch_ms);
    options.access_log = serve_args->access_log == "json" ? mirror::AccessLogFormat::json : mirror::AccessLogFormat::text;
    options.limits.workers = serve_args->threads;
    options.limits.per_client = serve_args->per_client;
    options.limits.head_timeout = std::chrono::seconds(serve_args->header_timeout);
    options.site.primary_host = serve_args->registry_host;
    if (!serve_args->public_url.empty()) options.site.public_url = mirror::checked_public_url(serve_args->public_url);
    if (serve_args->plain_http) {
      if (!serve_args->tls_cert.empty() || !serve_args->tls_key.empty())
        throw UsageError("--plain-http cannot be combined with --tls-cert/--tls-key");
      options.transport = mirror::Transport::plain_http;
    } else {
      if (serve_args->tls_cert.empty() || serve_args->tls_key.empty())
        throw UsageError("mirror serve needs --tls-cert FILE and --tls-key FILE (or --plain-http)");
      options.tls_cert = serve_args->tls_cert;
      options.tls_key = serve_args->tls_key;
    }
    mirror::serve_until_signalled(cache::default_deps_root(), options, [](const std::string& url) {
      std::cout << url << std::endl;  // the readiness signal scripts and tests wait for
    });
  });

  auto export_args = std::make_shared<ExportArgs>();
  auto* exporter = group.add_subcommand("export", "Write the store as a static tree for any web server, or into an s3:// bucket");
  exporter->add_option("DIR", export_args->dir,
                       "Target directory (replaced atomically), or s3://BUCKET/PREFIX (updated in place: see docs/mirror.md)")
      ->required();
  exporter->add_option("--registry-host", export_args->registry_host,
                       "Origin registry that .well-known/terraform.json answers for");
  exporter->add_option("--public-url", export_args->public_url,
                       "URL the export will be served at, for the catalogue's snippets (default: the page's own origin)");
  exporter->add_option("--part-size", export_args->part_size,
                       "s3:// only: files larger than SIZE go up as multipart uploads of SIZE parts (bytes, or with a K, M or G suffix)")
      ->capture_default_str()
      ->transform(size_in_bytes(std::uint64_t{5} << 20, std::uint64_t{5} << 30));
  exporter->callback([export_args, &global] {
    mirror::SiteOptions options;
    options.primary_host = export_args->registry_host;
    if (!export_args->public_url.empty()) options.public_url = mirror::checked_public_url(export_args->public_url);
    if (mirror::is_s3_target(export_args->dir)) {
      export_to_bucket(*export_args, options, global.quiet);
      return;
    }
    refuse_url_target(export_args->dir);
    auto stats = mirror::export_site(cache::default_deps_root(), export_args->dir, options);
    if (!global.quiet)
      std::cerr << "podplane: exported " << stats.files << " files (" << stats.linked << " hard-linked, " << stats.bytes
                << " bytes)" << (stats.git_repositories ? " and " + std::to_string(stats.git_repositories) + " git repositories" : "")
                << " to " << export_args->dir << "\n";
  });

  auto push_args = std::make_shared<PushArgs>();
  auto* push = group.add_subcommand("push", "Publish providers and modules (OpenTofu oci_mirror layout) and container images to an OCI registry");
  push->add_option("TARGET", push_args->target, "oci://REGISTRY[:PORT]/PREFIX")->required();
  push->add_flag("--plain-http", push_args->plain_http, "Talk plain HTTP to the registry");
  push->add_option("--ca-file", push_args->ca_file, "PEM CA bundle for the registry's TLS certificate");
  push->add_option("--chunk-size", push_args->chunk_size,
                   "Blobs larger than SIZE go up in chunks of SIZE (bytes, or with a K, M or G suffix)")
      ->capture_default_str()
      ->transform(size_in_bytes(1024, std::uint64_t{1} << 32));
  push->add_option("--creds-file", push_args->creds_file,
                   "File holding user:password for the registry (never give credentials on the command line)")
      ->check(CLI::ExistingFile);
  add_authfile_option(*push, push_args->authfile);
  push->callback([push_args, &global] {
    mirror::PushOptions options;
    options.transport = push_args->plain_http ? mirror::Transport::plain_http : mirror::Transport::https;
    if (!push_args->ca_file.empty()) options.ca_file = push_args->ca_file;
    options.chunk_size = push_args->chunk_size;
    options.http = net::HttpOptions::from_environment();  // PODPLANE_HTTP_* budgets
    if (!push_args->authfile.empty()) options.registry_auth.authfile = push_args->authfile;
    if (!push_args->creds_file.empty()) options.registry_auth.creds_file = push_args->creds_file;
    auto stats = mirror::push_to_oci(cache::default_deps_root(), push_args->target, options,
                                     global.quiet ? nullptr : &std::cerr);
    std::cout << "pushed " << stats.manifests_pushed << " manifests (" << stats.manifests_present
              << " already present), uploaded " << stats.blobs_uploaded << " blobs (" << stats.bytes_uploaded
              << " bytes), skipped " << stats.blobs_present << " blobs the registry had";
    if (stats.blobs_mounted > 0) std::cout << ", mounted " << stats.blobs_mounted << " from another repository";
    std::cout << "\n";
    // Not progress: what the registry did not get, and where it goes instead (even with --quiet).
    std::cerr << mirror::git_repositories_note(stats);
  });
}

}  // namespace podplane::cli
