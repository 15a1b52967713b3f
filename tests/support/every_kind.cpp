#include "tests/support/every_kind.hpp"

#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/git_refs.hpp"
#include "cache/podplane_releases.hpp"
#include "cache/row_rules.hpp"
#include "cache/tool_releases.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/provider_names.hpp"
#include "tests/support/gpg_keys.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/zip_fixture.hpp"

namespace podplane::test {

namespace {

using cache::Artifact;
using cache::ArtifactKind;
using nlohmann::json;

std::string type_of(const std::string& address) { return address.substr(address.rfind('/') + 1); }

// As Podplane names a downloaded file: the last segment of the URL's path.
std::string url_basename(const std::string& url) {
  const std::string path = url.substr(0, url.find_first_of("?#"));
  return path.substr(path.rfind('/') + 1);
}

std::string sha512_hex(const std::string& bytes) {
  Hasher hasher(DigestAlgorithm::sha512);
  hasher.update(bytes);
  return hasher.finish_hex();
}

// The objects of the examples, made first: some name others (a manifest pins its image, a
// SHA256SUMS lists its zips).
struct Objects {
  std::string provider_zip, provider_h1, provider_sums, provider_signature, provider_keys;
  std::string image_blob, image_manifest, image_index, image_signature;
  std::string vmconfig_manifest, vmconfig_artifact, boot_file, seeds, snapshot, snapshot_sha512;
  std::string engine_zip, engine_sums, engine_signature;
  std::string podplane_tarball, podplane_sums, podplane_signature;
  std::string git_pack, git_refs, git_commit;
};

constexpr const char* kImage = "registry.example.invalid/team/app";
constexpr const char* kImageTag = "1.0";
constexpr const char* kManifestName = "vmconfig_knc_debian-13_amd64";
constexpr const char* kManifestVersion = "20260101";
constexpr const char* kImageVersion = "13.1";
constexpr const char* kBootFile = "vmlinuz-6.12.86+deb13-cloud-amd64";
constexpr const char* kArtifactUrl = "https://example.invalid/containerd/containerd-1.7.0-linux-amd64.tar.gz";
constexpr const char* kPodplaneVersion = "0.1.0";
constexpr const char* kGitRepository = "git.example.invalid/acme/terraform-network";
constexpr const char* kGitTag = "v1.0.0";

std::string add_zip(cache::Store& store, const std::filesystem::path& zip, const std::vector<ZipEntry>& entries) {
  make_zip(zip, entries);
  return store.add_file(zip);
}

// A git source's snapshot as deps tf keeps it: a real repository's one commit, tagged, packed
// whole by git, and the refs document naming the tag.
void add_git_snapshot(cache::Store& store, const std::filesystem::path& dir, Objects& o) {
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", dir.string(), "-c", "user.name=test", "-c", "user.email=test@example.invalid"});
    auto result = run(args);
    if (result.exit_code != 0) throw std::runtime_error("git " + args[7] + " failed: " + result.err);
    return result.out.substr(0, result.out.find('\n'));
  };
  write_file(dir / "main.tf", "variable \"cidr\" {}\n");
  (void)run({"git", "init", "-q", "-b", "main", dir.string()});
  git({"add", "-A"});
  git({"commit", "-q", "--no-gpg-sign", "-m", "v1.0.0"});
  git({"tag", kGitTag});
  git({"repack", "-a", "-d", "-q"});
  o.git_commit = git({"rev-parse", "HEAD"});
  for (const auto& entry : std::filesystem::directory_iterator(dir / ".git" / "objects" / "pack"))
    if (entry.path().extension() == ".pack") o.git_pack = store.add_file(entry.path());
  cache::GitRef ref;
  ref.name = kGitTag;
  ref.kind = cache::GitRef::Kind::tag;
  ref.commit = o.git_commit;
  o.git_refs = store.add_bytes(cache::git_refs_document(ref));
}

Objects add_objects(cache::Store& store, const std::filesystem::path& work, std::filesystem::path& keyring) {
  Objects o;
  auto& keys = gpg_keys();
  // A provider release signed by a key its stored keys document lists.
  const std::string package = lockfile::provider_package_filename("null", "3.2.4", "linux_amd64");
  o.provider_zip = add_zip(store, work / package, {{"terraform-provider-null_v3.2.4_x5", "#!/bin/sh\necho null\n"}});
  o.provider_h1 = lockfile::h1_hash_of_zip(work / package);
  const std::string sums = o.provider_zip + "  " + package + "\n";
  o.provider_sums = store.add_bytes(sums);
  o.provider_signature = store.add_bytes(keys.sign("ed25519", sums));
  o.provider_keys = store.add_bytes(
      json{{"gpg_public_keys", json::array({{{"key_id", keys.fingerprint("ed25519").substr(24)},
                                            {"ascii_armor", keys.armor("ed25519")}}})}}
          .dump());
  // An image: its config, its manifest, the index listing it, and a cosign signature of the index.
  const std::string config = R"({"architecture":"amd64","os":"linux"})";
  o.image_blob = store.add_bytes(config);
  const json config_descriptor{{"mediaType", "application/vnd.oci.image.config.v1+json"},
                               {"digest", "sha256:" + o.image_blob},
                               {"size", config.size()}};
  const std::string manifest =
      json{{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"}, {"config", config_descriptor},
           {"layers", json::array()}}
          .dump();
  o.image_manifest = store.add_bytes(manifest);
  const std::string index =
      json{{"schemaVersion", 2},
           {"mediaType", "application/vnd.oci.image.index.v1+json"},
           {"manifests", json::array({{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                       {"digest", "sha256:" + o.image_manifest},
                                       {"size", manifest.size()},
                                       {"platform", {{"architecture", "amd64"}, {"os", "linux"}}}}})}}
          .dump();
  o.image_index = store.add_bytes(index);
  o.image_signature = store.add_bytes(json{{"schemaVersion", 2},
                                           {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                           {"config", config_descriptor},
                                           {"layers", json::array()},
                                           {"annotations", {{"podplane.test", "a cosign signature of the index"}}}}
                                          .dump());
  // vmconfig: a manifest listing an artifact and its os image's boot files, pinning the image.
  o.vmconfig_artifact = store.add_bytes("containerd 1.7.0 for linux/amd64\n");
  o.boot_file = store.add_bytes("a kernel read out of debian 13.1\n");
  o.vmconfig_manifest = store.add_bytes(
      json{{"vmconfig",
            {{"version", kManifestVersion},
             {"os", {{"image", {{"version", kImageVersion}}}}},
             {"dependencies", {{"containerd", {{"version", "1.7.0"}, {"url", kArtifactUrl}, {"sha256", o.vmconfig_artifact}}}}},
             {"images", json::array({{{"name", kImage}, {"digest", "sha256:" + o.image_index}}})}}}}
          .dump());
  // Seeds: seeds.json and the snapshot it pins by sha512.
  const std::string snapshot = "an etcd snapshot\n";
  o.snapshot = store.add_bytes(snapshot);
  o.snapshot_sha512 = sha512_hex(snapshot);
  o.seeds = store.add_bytes(json{{"seeds", {{"version", "1"}, {"snapshots", json::array({{{"name", "etcd"}, {"sha512", o.snapshot_sha512}}})}}}}.dump());
  // An engine release signed by the same key (the test keyring), and a podplane release.
  const std::string engine_zip = cache::tool_archive_name(lockfile::Engine::terraform, "1.9.8", "linux_amd64");
  o.engine_zip = add_zip(store, work / engine_zip, {{"terraform", "#!/bin/sh\necho terraform\n"}});
  const std::string engine_sums = o.engine_zip + "  " + engine_zip + "\n";
  o.engine_sums = store.add_bytes(engine_sums);
  o.engine_signature = store.add_bytes(keys.sign("ed25519", engine_sums));
  keyring = work / "keyring.asc";
  write_file(keyring, keys.armor("ed25519"));
  const std::string tarball = cache::podplane_tarball_name(kPodplaneVersion, "linux_amd64");
  o.podplane_tarball = store.add_bytes("podplane " + std::string(kPodplaneVersion) + " for linux/amd64\n");
  o.podplane_sums = store.add_bytes(cache::podplane_shasums_document({{tarball, o.podplane_tarball}}));
  add_git_snapshot(store, work / "git", o);
  o.podplane_signature = store.add_bytes(R"({"algorithm":"ed25519","key_id":"sha256:…","public_key":"…","signature":"…"})" "\n");
  return o;
}

// The example row of table row `kind` for the objects `o`; nullopt for a row no store holds.
std::optional<Artifact> example_row(const cache::KindInfo& kind, const Objects& o) {
  const bool podplane = kind.address == cache::kPodplaneReleaseAddress;
  switch (*kind.kind) {
    case ArtifactKind::provider_package: {
      auto row = provider_package_row(o.provider_zip);
      row.h1 = o.provider_h1;
      row.protocols = std::vector<std::string>{"6.0"};
      return row;
    }
    case ArtifactKind::provider_shasums: return provider_document_row(*kind.kind, o.provider_sums);
    case ArtifactKind::provider_signature: return provider_document_row(*kind.kind, o.provider_signature);
    case ArtifactKind::provider_keys: return provider_document_row(*kind.kind, o.provider_keys);
    case ArtifactKind::vmconfig_manifest:
      return vmconfig_manifest_row(o.vmconfig_manifest, kManifestName, kManifestVersion, "linux_amd64");
    case ArtifactKind::vmconfig_artifact:
      return vmconfig_artifact_row(o.vmconfig_artifact, "containerd", "1.7.0", kArtifactUrl, "linux_amd64");
    case ArtifactKind::vmconfig_boot_file: return boot_file_row(o.boot_file, kImageVersion, kBootFile, "linux_amd64");
    case ArtifactKind::image_index:
      return cache::image_row(*kind.kind, kImage, kImageTag, "", "sha256:" + o.image_index, 0, "https://registry.example.invalid/v2/team/app/manifests/1.0");
    case ArtifactKind::image_manifest:
      return cache::image_row(*kind.kind, kImage, kImageTag, "linux_amd64", "sha256:" + o.image_manifest, 0,
                              "https://registry.example.invalid/v2/team/app/manifests/sha256:" + o.image_manifest);
    case ArtifactKind::image_blob:
      return cache::image_row(*kind.kind, kImage, "sha256:" + o.image_manifest, "", "sha256:" + o.image_blob, 0,
                              "https://registry.example.invalid/v2/team/app/blobs/sha256:" + o.image_blob);
    case ArtifactKind::image_attachment:
      return cache::image_row(*kind.kind, kImage, cache::image_signature_tag("sha256:" + o.image_index), "",
                              "sha256:" + o.image_signature, 0, "");
    case ArtifactKind::seed_manifest: return seed_manifest_row(o.seeds, "1");
    case ArtifactKind::seed_snapshot: return seed_snapshot_row(o.snapshot, "etcd", "1.0", "etcd-1.0.netsy", o.snapshot_sha512);
    case ArtifactKind::tool_archive:
      return podplane ? podplane_release_row(*kind.kind, o.podplane_tarball, kPodplaneVersion,
                                             cache::podplane_tarball_name(kPodplaneVersion, "linux_amd64"), "linux_amd64")
                      : engine_release_row(*kind.kind, o.engine_zip);
    case ArtifactKind::tool_shasums:
      return podplane ? podplane_release_row(*kind.kind, o.podplane_sums, kPodplaneVersion) : engine_release_row(*kind.kind, o.engine_sums);
    case ArtifactKind::tool_signature:
      if (podplane) return podplane_release_row(*kind.kind, o.podplane_signature, kPodplaneVersion);
      return engine_release_row(*kind.kind, o.engine_signature);
    case ArtifactKind::git_pack:
    case ArtifactKind::git_refs:
      return cache::git_snapshot_row(*kind.kind, kGitRepository, kGitTag, o.git_commit,
                                     *kind.kind == ArtifactKind::git_pack ? o.git_pack : o.git_refs,
                                     "https://" + std::string(kGitRepository) + ".git");
    case ArtifactKind::count_: break;
  }
  throw std::logic_error("no example of " + std::string(kind.name));
}

// What a fetch records of how the example was checked.
void add_provenance(cache::Store& store, const cache::KindInfo& kind, const Artifact& row, const Objects& o) {
  cache::Provenance p;
  p.artifact_id = row.id;
  switch (kind.signer) {
    case cache::Signer::openpgp_keys_document:
      p.shasums_digest = o.provider_sums;
      p.signature_digest = o.provider_signature;
      p.keys_digest = o.provider_keys;
      p.key_fingerprint = gpg_keys().fingerprint("ed25519");
      p.result = "signed";
      break;
    case cache::Signer::pinned_release_key:
      p.shasums_digest = o.engine_sums;
      p.signature_digest = o.engine_signature;
      p.key_fingerprint = gpg_keys().fingerprint("ed25519");
      p.result = "signed";
      break;
    case cache::Signer::cosign_attachment:
      p.signature_digest = row.digest;
      p.key_fingerprint = "sha256:" + sha256_hex("a test cosign key");
      p.result = "signed";
      break;
    case cache::Signer::unset:
    case cache::Signer::none:
    case cache::Signer::cosign_key:
    case cache::Signer::bundle_signature: return;
  }
  store.add_provenance(p);
}

}  // namespace

cache::Artifact provider_package_row(const std::string& digest, const std::string& platform, const std::string& address,
                                     const std::string& version) {
  Artifact a;
  a.kind = ArtifactKind::provider_package;
  a.address = address;
  a.version = version;
  a.platform = platform;
  a.filename = lockfile::provider_package_filename(type_of(address), version, platform);
  a.digest = digest;
  a.upstream_url = "https://releases.podplane.invalid/" + a.filename;
  a.trust = cache::Trust::signed_upstream;
  return a;
}

cache::Artifact provider_document_row(cache::ArtifactKind kind, const std::string& digest, const std::string& address,
                                      const std::string& version) {
  const std::string base = "terraform-provider-" + type_of(address) + "_" + version;
  Artifact a;
  a.kind = kind;
  a.address = address;
  a.version = version;
  a.filename = kind == ArtifactKind::provider_shasums     ? base + "_SHA256SUMS"
               : kind == ArtifactKind::provider_signature ? base + "_SHA256SUMS.sig"
                                                          : lockfile::provider_signing_keys_filename(type_of(address), version);
  a.digest = digest;
  a.upstream_url = "https://releases.podplane.invalid/" + a.filename;
  a.trust = cache::Trust::signed_upstream;
  return a;
}

cache::Artifact vmconfig_manifest_row(const std::string& digest, const std::string& name, const std::string& version,
                                      const std::string& platform) {
  Artifact a;
  a.kind = ArtifactKind::vmconfig_manifest;
  a.address = name;
  a.version = version;
  a.platform = platform;
  a.filename = name + "_20260101T000000Z_" + digest.substr(0, 12) + ".json";
  a.digest = digest;
  a.upstream_url = "https://deps.podplane.invalid/manifests/" + name + ".json";
  a.trust = cache::Trust::unverified;
  return a;
}

cache::Artifact vmconfig_artifact_row(const std::string& digest, const std::string& name, const std::string& version,
                                      const std::string& url, const std::string& platform) {
  Artifact a;
  a.kind = ArtifactKind::vmconfig_artifact;
  a.address = name;
  a.version = version;
  a.platform = platform;
  a.filename = url_basename(url);
  a.digest = digest;
  a.upstream_digest = "sha256:" + digest;
  a.upstream_url = url;
  a.trust = cache::Trust::checksum;
  return a;
}

cache::Artifact boot_file_row(const std::string& digest, const std::string& image_version, const std::string& filename,
                              const std::string& platform) {
  Artifact a;
  a.kind = ArtifactKind::vmconfig_boot_file;
  a.address = "os-image";
  a.version = image_version;
  a.platform = platform;
  a.filename = filename;
  a.digest = digest;
  a.upstream_digest = "sha256:" + digest;
  a.trust = cache::Trust::checksum;
  return a;
}

cache::Artifact seed_manifest_row(const std::string& digest, const std::string& version) {
  Artifact a;
  a.kind = ArtifactKind::seed_manifest;
  a.address = "seeds";
  a.version = version;
  a.filename = "seeds_20260101T000000Z_" + digest.substr(0, 12) + ".json";
  a.digest = digest;
  a.upstream_url = "https://deps.podplane.invalid/manifests/seeds.json";
  a.trust = cache::Trust::unverified;
  return a;
}

cache::Artifact seed_snapshot_row(const std::string& digest, const std::string& name, const std::string& version,
                                  const std::string& filename, const std::string& sha512) {
  Artifact a;
  a.kind = ArtifactKind::seed_snapshot;
  a.address = name;
  a.version = version;
  a.filename = filename;
  a.digest = digest;
  a.upstream_digest = "sha512:" + sha512;
  a.upstream_url = "https://example.invalid/seeds/" + filename;
  a.trust = cache::Trust::checksum;
  return a;
}

cache::Artifact engine_release_row(cache::ArtifactKind kind, const std::string& digest, const std::string& engine,
                                   const std::string& version, const std::string& platform) {
  const auto which = lockfile::parse_engine(engine);
  Artifact a;
  a.kind = kind;
  a.address = engine;
  a.version = version;
  a.platform = kind == ArtifactKind::tool_archive ? platform : "";
  a.filename = kind == ArtifactKind::tool_archive   ? cache::tool_archive_name(which, version, platform)
               : kind == ArtifactKind::tool_shasums ? cache::tool_shasums_name(which, version)
                                                    : cache::tool_signature_name(which, version);
  a.digest = digest;
  a.upstream_url = "https://releases.hashicorp.invalid/" + engine + "/" + version + "/" + a.filename;
  a.trust = cache::Trust::signed_upstream;
  return a;
}

cache::Artifact podplane_release_row(cache::ArtifactKind kind, const std::string& digest, const std::string& version,
                                     const std::string& filename, const std::string& platform) {
  Artifact a;
  a.kind = kind;
  a.address = std::string(cache::kPodplaneReleaseAddress);
  a.version = version;
  a.platform = platform;
  a.filename = kind == ArtifactKind::tool_shasums     ? cache::podplane_shasums_name(version)
               : kind == ArtifactKind::tool_signature ? cache::podplane_signature_name(version)
                                                      : filename;
  a.digest = digest;
  a.trust = cache::Trust::unverified;
  return a;
}

std::size_t kind_index(const cache::KindInfo& kind) {
  const auto all = cache::kinds();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (&all[i] == &kind) return i;
  throw std::logic_error("not a row of cache::kinds(): " + std::string(kind.name));
}

const cache::Artifact& EveryKind::of(const cache::KindInfo& kind) const {
  auto it = rows.find(kind_index(kind));
  if (it == rows.end()) throw std::logic_error("no stored example of " + std::string(kind.name) + " " + std::string(kind.address));
  return it->second;
}

bool EveryKind::has(const cache::KindInfo& kind) const { return rows.count(kind_index(kind)) != 0; }

EveryKind add_every_kind(cache::Store& store, const std::filesystem::path& work) {
  std::filesystem::create_directories(work);
  EveryKind every;
  const Objects objects = add_objects(store, work, every.keyring);
  const auto all = cache::kinds();
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto row = example_row(all[i], objects);
    if (!row) continue;
    row->id = store.add_artifact(*row);
    add_provenance(store, all[i], *row, objects);
    // As stored: the store fills in size, zh and when it was added.
    for (const auto& stored : store.artifacts({.kind = row->kind, .address = row->address, .version = row->version}))
      if (stored.id == row->id) every.rows.emplace(i, stored);
  }
  cache::ModuleTree& tree = every.module;
  tree.address = "registry.opentofu.org/acme/network/aws";
  tree.version = "1.0.0";
  tree.upstream_url = "https://registry.opentofu.org/v1/modules/acme/network/aws/1.0.0/download";
  tree.files = {{"main.tf", 0644, store.add_bytes("variable \"cidr\" {}\n"), 0}};
  tree.id = store.add_module_tree(tree);
  tree = *store.find_module_tree(tree.address, tree.version);
  return every;
}

}  // namespace podplane::test
