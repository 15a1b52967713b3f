#pragma once
// The read side of the OCI distribution API as a client, for fetching container images into
// the store: manifests by tag or digest, blob URLs, and the registry's auth (a 401's challenge
// is answered by net/oci_auth.hpp: Basic with the user's login, or a Bearer token from the
// realm, anonymous unless a login is configured; cached per repository). Every request goes through the
// one HttpClient (net/http.hpp: SSL_CERT_FILE, proxies, retry budget). Registries are
// reached over https, except hosts listed in $PODPLANE_PLAIN_HTTP_REGISTRIES (host[:port],
// comma-separated), as with `skopeo --tls-verify=false`. Not thread-safe. Errors: podplane::Error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/http.hpp"
#include "net/oci_auth.hpp"
#include "net/oci_reference.hpp"

namespace podplane::fetch {

// One manifest as fetched: its bytes, verified against the digest it was asked for.
struct FetchedManifest {
  std::string bytes;
  std::string digest;      // "sha256:…" of bytes
  std::string media_type;  // from the document, else the Content-Type
  std::string url;
};

class OciPuller {
 public:
  OciPuller(net::HttpOptions options, net::RegistryCredentials credentials);

  // GET /v2/<repository>/manifests/<reference>. By digest: the bytes must hash to it. By tag:
  // the registry's Docker-Content-Digest, when given, must match the bytes.
  [[nodiscard]] FetchedManifest manifest(const net::ImageReference& image, const std::string& reference);
  // The same, nullopt when the registry answers 404: for tags that are often absent (cosign's
  // sha256-<hex>.att and .sbom). Any other failure is still an error.
  [[nodiscard]] std::optional<FetchedManifest> manifest_if_present(const net::ImageReference& image, const std::string& reference);
  // GET /v2/<repository>/blobs/<digest> into memory, for the small blobs read before anything
  // is stored (a signature's payloads): `size` is the descriptor's, at most `limit`; the bytes
  // must have that size and hash to `digest`.
  [[nodiscard]] std::string small_blob(const net::ImageReference& image, const std::string& digest, std::int64_t size,
                                       std::int64_t limit);
  // The index of the manifests whose `subject` is `digest` (attestations, SBOMs, signatures):
  // GET /v2/<repository>/referrers/<digest> (OCI 1.1), else, where the registry does not
  // implement it, the index at the referrers tag schema's tag sha256-<hex>; nullopt when
  // neither is there. The index is only the registry's word: the caller checks each manifest
  // it names against its digest and its subject.
  [[nodiscard]] std::optional<FetchedManifest> referrers(const net::ImageReference& image, const std::string& digest);
  // Where a manifest is, for a download through the engine (with auth_headers and an Accept
  // of image_media::accept_all).
  std::string manifest_url(const net::ImageReference& image, const std::string& reference) const;
  // The blob URL and the headers (auth) a download of it needs.
  std::string blob_url(const net::ImageReference& image, const std::string& digest) const;
  std::vector<std::string> auth_headers(const net::ImageReference& image) const;
  // Another puller with the same options and what this one's auth has learned so far (its
  // tokens), for lookups made at the same time as this one's on other threads.
  [[nodiscard]] OciPuller sibling() const;

 private:
  std::string base(const net::ImageReference& image) const;
  net::HttpResponse get(const net::ImageReference& image, const std::string& url, const std::string& accept);

  net::HttpOptions options_;
  net::HttpClient http_;
  net::RegistryAuth auth_;
};

}  // namespace podplane::fetch
