#pragma once
// Container images into the store (docs/images.md): from an index (or a single manifest) to
// the selected platforms' manifests, their configs and layers. Manifests are checked against
// the digest they were asked by (and against the vmconfig manifest's pins); every blob streams
// through the download engine into the store, hashed as it comes and committed only when it
// matches its digest; a blob already stored (any image, any repository) is not fetched again.
// Rows (cache::ArtifactKind::image_*) are returned, not indexed: the caller indexes them with
// the rest of its run, all or nothing. Errors are podplane::Error; per-image failures are
// collected so that one bad image names itself and the others are still tried.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/cosign_policy.hpp"
#include "cache/store.hpp"
#include "net/download.hpp"
#include "fetch/image_signatures.hpp"
#include "fetch/oci_registry.hpp"

namespace podplane::fetch {

struct ImageRequest {
  net::ImageReference reference;
  std::vector<std::string> platforms;  // "linux/amd64"; empty: every platform of the index
  std::string pinned_manifest;         // vmconfig "digest": the selected platform manifest must be this
  std::string pinned_index;            // vmconfig "index": the index must be this
  std::string source;                  // where the request came from, for messages
};

struct ImageFetch {
  std::vector<cache::Artifact> rows;
  std::vector<std::string> failures;  // one message per image that failed
  std::size_t blobs_fetched = 0;
  std::size_t blobs_present = 0;      // already in the store: not transferred
  std::uint64_t bytes = 0;
  // The verified cosign signatures (their rows are among `rows`): record_image_signatures()
  // adds their provenance once the rows are indexed.
  std::vector<ImageSignatureRecord> signatures;
};

// "amd64" → "linux/amd64"; "all" → {} (every platform).
std::vector<std::string> image_platforms_of_archs(const std::vector<std::string>& archs);

// `images` of a vmconfig manifest (docs/podplane-layout.md §2.2): each entry's image, digest, platform and
// index. `source` names the manifest. Error naming the entry when one is malformed.
[[nodiscard]] std::vector<ImageRequest> vmconfig_image_requests(const nlohmann::json& document, const std::string& source);

// An image list: one reference a line (tag or digest); '#' comments and blank lines allowed.
[[nodiscard]] std::vector<ImageRequest> parse_image_list(std::string_view text, const std::string& source,
                                                         const std::vector<std::string>& platforms);

// `credentials` answer the registries' 401s (net/oci_auth.hpp); an image whose registry
// wants a login that is not there fails with a message that says how to give one. With
// a `cosign_policy` that names keys, an image must carry a cosign signature by one of its keys.
[[nodiscard]] ImageFetch fetch_images(cache::Store& store, const std::vector<ImageRequest>& requests,
                                      const net::DownloadOptions& options, const net::RegistryCredentials& credentials,
                                      std::ostream& log, const cache::CosignPolicy& cosign_policy = cache::CosignPolicy{});

// The images of a run, fetched through a DownloadRun that other items share (deps download):
//   resolve()  every image's top manifest (index or manifest) at once, with the registry's auth
//              (fetch_tops(), which does not touch the store and may run on another thread);
//              then the platforms each wants, chosen and checked against the pins (resolve_tops())
//   start()    adds every wanted platform manifest to the run, and each one's blobs the store
//              lacks as soon as that manifest has landed (a blob once, whichever image lists it);
//              the referrers' blobs as soon as their lookups, begun by fetch_tops(), have ended
//   finish()   after the run: rows and failures in the order of the requests, as fetch_images
// Not thread-safe, but for fetch_tops() running beside other work; the run calls back on its
// own (the caller's) thread.
class ImageFetcher {
 public:
  ImageFetcher(cache::Store& store, std::vector<ImageRequest> requests, const net::DownloadOptions& options,
               const net::RegistryCredentials& credentials);
  ~ImageFetcher();
  ImageFetcher(const ImageFetcher&) = delete;
  ImageFetcher& operator=(const ImageFetcher&) = delete;

  // Before fetch_tops(): each image's top manifest must carry a cosign signature that one of
  // the keys `policy` gives its address verifies (fetch/image_signatures.hpp), checked before
  // anything of it is stored or its blobs are fetched; the signature is stored and indexed with it.
  void require_signatures(cache::CosignPolicy policy);
  // Before fetch_tops(): each image's referrers (manifests whose subject is its top manifest:
  // attestations, SBOMs) are fetched with it and stored as image_attachment rows whose version
  // is that top digest (OciPuller::referrers; none where the registry has none). So are the
  // attestations and SBOM cosign attached to it by tag (sha256-<hex>.att, .sbom), as
  // image_attachment rows whose version is that tag; neither is verified.
  void take_referrers();
  void resolve();  // fetch_tops(), then resolve_tops()
  void fetch_tops();
  void resolve_tops();
  void start(net::DownloadRun& run);  // the fetcher must outlive the run
  [[nodiscard]] ImageFetch finish(std::ostream& log);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether every row an image request needs is in the store with its object (no network); where
// `cosign_policy` names keys for it, also a stored signature of it that one of them verifies.
[[nodiscard]] bool image_stored(const cache::Store& store, const ImageRequest& request,
                                const cache::CosignPolicy& cosign_policy = cache::CosignPolicy{});

struct DepsImagesOptions {
  // The image list (-f FILE), as the caller read it: its text and its name in messages.
  std::string list_name;
  std::string list_text;
  std::vector<std::string> archs;      // amd64, arm64, all
  net::DownloadOptions download;
  net::RegistryAuthOptions registry_auth;   // --authfile (else the standard auth files)
  std::vector<std::filesystem::path> cosign_keys;  // --cosign-key: every image must be signed by one
  std::optional<std::filesystem::path> cosign_policy;  // --cosign-policy: keys per registry/repository
  cache::KeylessFlags cosign_keyless;  // --certificate-identity…, --trusted-root: keyless signatures
};

// `podplane deps images -f images.txt`: fetches every listed image, indexes the rows in one
// transaction, prints a summary. Error listing every image that failed (nothing indexed then).
void deps_images(cache::Store& store, const DepsImagesOptions& options, std::ostream& out, std::ostream& log);

}  // namespace podplane::fetch
