#include "fetch/podplane_install.hpp"

#include <system_error>
#include <vector>

#include "base/digest.hpp"
#include "base/ed25519.hpp"
#include "base/error.hpp"
#include "base/scratch_dir.hpp"
#include "cache/podplane_releases.hpp"
#include "cache/recheck.hpp"
#include "cache/tool_releases.hpp"
#include "fetch/module_archive.hpp"
#include "fetch/tool_sources.hpp"

namespace podplane::fetch {

namespace {

namespace fs = std::filesystem;

// From the local store: the row's object, rehashed, and listed so in its release's SHA256SUMS.
fs::path tarball_from_store(const cache::Store& store, const PodplaneInstallOptions& options, const std::string& tarball) {
  const std::string address(cache::kPodplaneReleaseAddress);
  auto row = store.find_artifact(cache::ArtifactKind::tool_archive, address, options.version, options.platform, tarball);
  const fs::path object = stored_tool_file(store, row, tarball,
                                           "add it online with `podplane deps tools --podplane-release <the directory of podplane " +
                                               options.version +
                                               "'s release files>` and carry it over in a bundle, or install --from a site mirror");
  auto recheck = cache::recheck_podplane_releases(store, {*row});
  if (!recheck.problems.empty()) throw Error(recheck.problems.front());
  return object;
}

// The release's SHA256SUMS from a mirror is only the mirror's word unless a release key the
// user trusts signed it: checked before any release file is fetched.
void check_release_signature(net::HttpClient& http, const PodplaneInstallOptions& options, const std::string& dir,
                             const std::string& sums, std::ostream& out) {
  const std::string name = cache::podplane_signature_name(options.version);
  auto response = http.get(dir + name);
  if (response.status == 404) {
    if (options.unsigned_releases == UnsignedReleases::allow) {
      out << "warning: podplane " << options.version << " from " << net::redact_url(options.from_url)
          << " is not signed; installing it on --allow-unsigned-release (its SHA256SUMS is only that server's word)\n";
      return;
    }
    throw Error("podplane " + options.version + " from " + net::redact_url(options.from_url) + " is not signed (no " + name +
                "): sign its release online with `podplane deps tools --podplane-release DIR --sign KEY` and install with "
                "--trust KEY.pub, or take it unsigned with --allow-unsigned-release");
  }
  if (response.status != 200)
    throw Error("cannot fetch " + name + " from " + net::redact_url(dir + name) + ": " + response.status_text());
  auto signature = ed25519::DetachedSignature::parse(response.body, name + " from " + net::redact_url(dir + name));
  if (options.trusted_keys.empty())
    throw UsageError("podplane " + options.version + " from " + net::redact_url(options.from_url) + " is signed by " +
                     signature.key_id + ": give --trust with the release key's public key to check it");
  std::string trusted;
  for (const auto& file : options.trusted_keys) {
    auto key = ed25519::PublicKey::load(file);
    trusted += (trusted.empty() ? "" : ", ") + key.key_id() + " (" + file.string() + ")";
    if (key.key_id() != signature.key_id) continue;
    if (!key.verifies(sums, signature.signature_hex))
      throw Error(name + " from " + net::redact_url(dir + name) + " does not verify with " + file.string() +
                  ": the SHA256SUMS was changed after it was signed, or the signature was");
    return;
  }
  throw Error(mismatch_message(name + " from " + net::redact_url(dir + name) + " is by a release key not given with --trust",
                               trusted, signature.key_id));
}

// From a site mirror: the tarball checked against its line of the release's SHA256SUMS there,
// that SHA256SUMS against the release key's signature.
fs::path tarball_from_mirror(const PodplaneInstallOptions& options, const std::string& tarball, const fs::path& scratch,
                             std::ostream& out) {
  const std::string dir = mirror_tool_dir(options.from_url, cache::kPodplaneReleaseAddress, options.version);
  const std::string sums_name = cache::podplane_shasums_name(options.version);
  net::HttpClient http(options.http);
  const std::string sums = fetch_tool_document(http, dir, sums_name);
  check_release_signature(http, options, dir, sums, out);
  return fetch_tool_file(options.http, dir, tarball, cache::tool_listed_digest(sums, tarball, sums_name), scratch);
}

// Creates `dir` and the parents it lacks; on destruction removes those this run created that
// are still empty (all of them, when the install failed), deepest first.
class CreatedDirectories {
 public:
  explicit CreatedDirectories(const fs::path& dir) {
    for (fs::path missing = fs::absolute(dir); !missing.empty() && !fs::exists(missing); missing = missing.parent_path()) {
      created_.push_back(missing);
      if (missing == missing.root_path()) break;
    }
    fs::create_directories(dir);
  }
  ~CreatedDirectories() {
    std::error_code ec;
    for (const auto& dir : created_) {
      if (!fs::is_empty(dir, ec) || ec) break;
      fs::remove(dir, ec);
    }
  }
  CreatedDirectories(const CreatedDirectories&) = delete;
  CreatedDirectories& operator=(const CreatedDirectories&) = delete;

 private:
  std::vector<fs::path> created_;  // deepest first
};

}  // namespace

fs::path install_podplane(const cache::Store* store, const PodplaneInstallOptions& options, std::ostream& out) {
  const std::string tarball = cache::podplane_tarball_name(options.version, options.platform);
  const std::string tree = tarball.substr(0, tarball.size() - std::string_view(".tar.gz").size());
  const fs::path target = options.to / tree;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(target, ec))) {
    throw Error(target.string() + " exists already; remove it (or install into another directory) first");
  }
  ScratchDir download("podplane-tools-");
  fs::path checked;
  if (options.from_url.empty()) {
    if (store == nullptr) throw Error("no store to install " + tarball + " from; pass --from URL of a site mirror");
    checked = tarball_from_store(*store, options, tarball);
  } else {
    checked = tarball_from_mirror(options, tarball, download.path(), out);
  }

  // Only checked bytes are unpacked, beside the target so that one rename puts the whole tree
  // in place; a failure leaves nothing of this run under DIR.
  CreatedDirectories to(options.to);
  const fs::path program = target / "bin" / "podplane";
  {
    ScratchDir staging(options.to, ".podplane-install-");
    const fs::path unpacked = staging.path() / "tree";
    extract_archive(checked, unpacked, tarball);
    // The tarball holds one tree, named as the tarball, with the program at bin/podplane.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(unpacked)) ++entries;
    const fs::path top = unpacked / tree;
    if (entries != 1 || !fs::is_directory(fs::symlink_status(top)) ||
        !fs::is_regular_file(fs::symlink_status(top / "bin" / "podplane"))) {
      throw Error(tarball + " is not a podplane release tree: it must hold " + tree + "/bin/podplane and nothing beside " + tree);
    }
    fs::rename(top, target);
  }
  out << "installed podplane " << options.version << " (" << options.platform << ") at " << program.string() << " from " << tarball
      << " (sha256:" << file_digest_hex(checked) << ")\n";
  return program;
}

}  // namespace podplane::fetch
