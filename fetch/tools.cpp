#include "fetch/tools.hpp"

#include <cstdlib>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/url.hpp"
#include "cache/tool_releases.hpp"
#include "lockfile/provider_names.hpp"
#include "lockfile/tf_config.hpp"
#include "net/download.hpp"
#include "net/http.hpp"

namespace podplane::fetch {

namespace {

using nlohmann::json;

// One small upstream document (SHA256SUMS or its signature); a 404 names the release.
std::string fetch_document(net::HttpClient& http, const std::string& url, const std::string& name) {
  auto response = http.get(url);
  if (response.status != 200) {
    throw Error("cannot fetch " + name + " from " + net::redact_url(url) + ": " + response.status_text() +
                (response.status == 404 ? " (no such release, or not for this version)" : ""));
  }
  return response.body;
}

// What one release brings to the store: its documents and the zips the store lacked.
struct ReleaseFetch {
  ToolRelease release;
  std::string url;  // the release directory, ending in '/'
  std::string shasums, signature;
  std::string fingerprint;
  std::vector<cache::Artifact> archives;  // digest filled in once downloaded
};

cache::Artifact document_row(cache::ArtifactKind kind, const ReleaseFetch& fetch, const std::string& filename,
                             const std::string& digest, std::size_t size) {
  cache::Artifact row;
  row.kind = kind;
  row.address = std::string(lockfile::engine_name(fetch.release.engine));
  row.version = fetch.release.version;
  row.filename = filename;
  row.digest = digest;
  row.size = static_cast<std::int64_t>(size);
  row.upstream_url = fetch.url + filename;
  row.trust = cache::Trust::signed_upstream;
  return row;
}

}  // namespace

std::string tool_releases_base_url(lockfile::Engine engine) {
  const bool terraform = engine == lockfile::Engine::terraform;
  const char* env = std::getenv(terraform ? "PODPLANE_TERRAFORM_RELEASES_URL" : "PODPLANE_TOFU_RELEASES_URL");
  if (env != nullptr && *env != '\0') return without_trailing_slashes(env);
  return terraform ? "https://releases.hashicorp.com" : "https://github.com";
}

std::string tool_release_url(lockfile::Engine engine, const std::string& base, const std::string& version) {
  const std::string root = without_trailing_slashes(base);
  if (engine == lockfile::Engine::terraform) return root + "/terraform/" + version + "/";
  return root + "/opentofu/opentofu/releases/download/v" + version + "/";
}

std::string tool_versions_url(lockfile::Engine engine, const std::string& base) {
  if (engine == lockfile::Engine::terraform) return without_trailing_slashes(base) + "/terraform/index.json";
  const char* env = std::getenv("PODPLANE_TOFU_VERSIONS_URL");
  if (env != nullptr && *env != '\0') return env;
  return "https://get.opentofu.org/tofu/api.json";
}

std::vector<lockfile::Version> parse_tool_versions(const std::string& document, const std::string& url) {
  json index = json::parse(document, nullptr, /*allow_exceptions=*/false);
  const json* listed = index.is_object() && index.contains("versions") ? &index["versions"] : nullptr;
  if (listed == nullptr || !(listed->is_object() || listed->is_array()))
    throw Error(net::redact_url(url) + " is not a release index: no \"versions\" object or array");
  std::vector<std::string> names;
  if (listed->is_object()) {
    for (const auto& [name, entry] : listed->items()) names.push_back(name);  // releases.hashicorp.com
  } else {
    for (const auto& entry : *listed) {  // OpenTofu
      if (entry.is_object() && entry.contains("id") && entry["id"].is_string()) names.push_back(entry["id"].get<std::string>());
    }
  }
  std::vector<lockfile::Version> versions;
  for (const auto& name : names) {
    try {
      versions.push_back(lockfile::Version::parse(name));
    } catch (const Error&) {
      // Not a version (an index may list other names); it can never be chosen.
    }
  }
  return versions;
}

std::string newest_tool_release(lockfile::Engine engine, const std::vector<RequiredEngineVersion>& required,
                                const std::string& base, const net::HttpOptions& http_options) {
  std::vector<lockfile::Constraints> constraints;
  std::string asked;
  for (const auto& requirement : required) {
    constraints.push_back(lockfile::Constraints::parse(requirement.constraints));
    if (!asked.empty()) asked += "; ";
    asked += "\"" + requirement.constraints + "\" (" + requirement.required_by + ")";
  }
  const std::string url = tool_versions_url(engine, base);
  net::HttpClient http(http_options);
  auto response = http.get(url);
  if (response.status != 200)
    throw Error("cannot fetch the list of " + std::string(lockfile::engine_name(engine)) + " releases from " + net::redact_url(url) +
                ": " + response.status_text() + "; name the release with --version");
  auto available = parse_tool_versions(response.body, url);
  auto newest = lockfile::newest_allowed(available, lockfile::Constraints::merge(constraints));
  if (!newest) {
    throw Error("no " + std::string(lockfile::engine_name(engine)) + " release listed at " + net::redact_url(url) + " satisfies " +
                (asked.empty() ? std::string("any version") : asked) + ": name one with --version");
  }
  return newest->str();
}

std::vector<RequiredEngineVersion> engine_versions_required(const std::vector<std::filesystem::path>& stacks,
                                                            const std::optional<ConfigStack>& config_stack) {
  std::vector<RequiredEngineVersion> required;
  for (const auto& stack : stacks) {
    for (const auto& constraints : lockfile::read_module_requirements(stack).required_versions)
      required.push_back({constraints, stack.string()});
  }
  if (!stacks.empty()) return required;
  if (config_stack) return {{cache::podplane_stack(config_stack->kind).required_engine_version, config_stack->named}};
  for (auto kind : {cache::ProviderKind::aws, cache::ProviderKind::google, cache::ProviderKind::proxmox}) {
    std::string constraints = cache::podplane_stack(kind).required_engine_version;
    bool known = false;
    for (const auto& r : required) known = known || r.constraints == constraints;
    if (!known) required.push_back({constraints, "Podplane's stacks"});
  }
  return required;
}

std::vector<ToolRelease> choose_tool_releases(const std::vector<lockfile::Engine>& engines,
                                              const std::optional<std::string>& version,
                                              const std::vector<RequiredEngineVersion>& required,
                                              const net::HttpOptions& http, std::ostream& out) {
  std::vector<ToolRelease> releases;
  for (auto engine : engines) {
    if (version) {
      releases.push_back({engine, *version});
      continue;
    }
    std::string asked;
    for (const auto& r : required) asked += (asked.empty() ? "" : "; ") + r.constraints + " in " + r.required_by;
    std::string chosen = newest_tool_release(engine, required, tool_releases_base_url(engine), http);
    out << lockfile::engine_name(engine) << ": " << chosen << ", the newest release that every required_version allows ("
        << (asked.empty() ? "none is set" : asked) << ")\n";
    releases.push_back({engine, chosen});
  }
  return releases;
}

DepsToolsResult deps_tools(cache::Store& store, const DepsToolsOptions& options, std::ostream& out) {
  const std::vector<std::string> platforms = options.platforms.empty() ? std::vector<std::string>{"linux_amd64"} : options.platforms;
  DepsToolsResult result;
  std::vector<ReleaseFetch> fetches;
  net::HttpClient http(options.download.http);
  for (const auto& release : options.releases) {
    const std::string engine(lockfile::engine_name(release.engine));
    ReleaseFetch fetch;
    fetch.release = release;
    std::vector<std::string> missing;
    for (const auto& platform : platforms) {
      auto filename = cache::tool_archive_name(release.engine, release.version, platform);
      if (auto stored = store.find_artifact(cache::ArtifactKind::tool_archive, engine, release.version, platform, filename);
          stored && store.has_object(stored->digest)) {
        ++result.present;
      } else {
        missing.push_back(platform);
      }
    }
    if (missing.empty()) {
      out << engine << " " << release.version << ": up to date (" << platforms.size() << " platform(s) stored)\n";
      continue;
    }
    const std::string base = release.engine == lockfile::Engine::terraform
                                 ? (options.terraform_base_url.empty() ? tool_releases_base_url(release.engine) : options.terraform_base_url)
                                 : (options.tofu_base_url.empty() ? tool_releases_base_url(release.engine) : options.tofu_base_url);
    fetch.url = tool_release_url(release.engine, base, release.version);
    const std::string shasums_name = cache::tool_shasums_name(release.engine, release.version);
    const std::string signature_name = cache::tool_signature_name(release.engine, release.version);
    fetch.shasums = fetch_document(http, fetch.url + shasums_name, shasums_name);
    fetch.signature = fetch_document(http, fetch.url + signature_name, signature_name);
    // The signature first: nothing a forged SHA256SUMS lists is even downloaded.
    fetch.fingerprint = cache::verify_tool_shasums(release.engine, release.version, fetch.shasums, fetch.signature);
    for (const auto& platform : missing) {
      cache::Artifact row = document_row(cache::ArtifactKind::tool_archive, fetch,
                                         cache::tool_archive_name(release.engine, release.version, platform), "", 0);
      row.platform = platform;
      row.upstream_digest = "sha256:" + cache::tool_listed_digest(fetch.shasums, row.filename, shasums_name);
      fetch.archives.push_back(std::move(row));
    }
    fetches.push_back(std::move(fetch));
  }

  if (fetches.empty()) return result;

  // Every zip is checked against its signed SHA256SUMS line while it streams into the store.
  std::vector<net::DownloadItem> items;
  std::vector<cache::Artifact*> rows;
  for (auto& fetch : fetches) {
    for (auto& row : fetch.archives) {
      net::DownloadItem item;
      item.url = row.upstream_url;
      item.expected_sha256 = row.upstream_digest.substr(7);
      item.label = row.filename;
      items.push_back(std::move(item));
      rows.push_back(&row);
    }
  }
  net::Downloader downloader(options.download);
  auto outcomes = downloader.fetch_into_store(store, items);
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].ok) {
      failures.push_back(outcomes[i].error);
      continue;
    }
    rows[i]->digest = outcomes[i].digest;
    rows[i]->size = static_cast<std::int64_t>(outcomes[i].size);
  }
  if (!failures.empty()) {
    std::string message = "deps tools: " + std::to_string(failures.size()) + " release zip(s) failed; nothing was indexed";
    for (const auto& failure : failures) message += "\n  " + failure;
    throw Error(message);
  }

  // The documents travel with the zips, so that import and `deps verify` check them again.
  std::vector<std::string_view> documents;
  for (const auto& fetch : fetches) {
    documents.push_back(fetch.shasums);
    documents.push_back(fetch.signature);
  }
  auto digests = store.add_all_bytes(documents);
  store.in_transaction([&] {
    for (std::size_t f = 0; f < fetches.size(); ++f) {
      const auto& fetch = fetches[f];
      const auto& engine = fetch.release.engine;
      const std::string& shasums_digest = digests[2 * f];
      const std::string& signature_digest = digests[2 * f + 1];
      (void)store.add_artifact(document_row(cache::ArtifactKind::tool_shasums, fetch,
                                            cache::tool_shasums_name(engine, fetch.release.version), shasums_digest,
                                            fetch.shasums.size()));
      (void)store.add_artifact(document_row(cache::ArtifactKind::tool_signature, fetch,
                                            cache::tool_signature_name(engine, fetch.release.version), signature_digest,
                                            fetch.signature.size()));
      for (const auto& row : fetch.archives) {
        cache::Provenance provenance;
        provenance.artifact_id = store.add_artifact(row);
        provenance.shasums_digest = shasums_digest;
        provenance.signature_digest = signature_digest;
        provenance.key_fingerprint = fetch.fingerprint;
        provenance.result = "signed";
        store.add_provenance(provenance);
      }
    }
    json fetched = json::array();
    for (const auto& fetch : fetches)
      for (const auto& row : fetch.archives) fetched.push_back(row.filename);
    store.audit("fetch", "deps tools", json{{"fetched", fetched}, {"present", result.present}});
  });
  for (const auto& fetch : fetches) {
    for (const auto& row : fetch.archives) {
      out << lockfile::engine_name(fetch.release.engine) << " " << fetch.release.version << " " << row.platform
          << ": fetched " << row.filename << " (sha256:" << row.digest << ", SHA256SUMS signed by " << fetch.fingerprint
          << ")\n";
      ++result.fetched;
    }
  }
  return result;
}

}  // namespace podplane::fetch
