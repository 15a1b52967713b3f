#include "fetch/image_signatures.hpp"

#include "base/error.hpp"
#include "cache/row_rules.hpp"

namespace podplane::fetch {

namespace {

// A signature's config and payloads are a few hundred bytes each; anything near this is not one.
constexpr std::int64_t kSignatureBlobLimit = 4 * 1024 * 1024;

// The attachment's own bytes are only checked by digest; the signature it holds is what the
// provenance row vouches for.
cache::Artifact signature_row(cache::ArtifactKind kind, const net::ImageReference& image, const std::string& version,
                              const std::string& digest, std::int64_t size, const std::string& url) {
  return cache::image_row(kind, image.address(), version, "", digest, size, url);
}

}  // namespace

FetchedSignature fetch_verified_signature(OciPuller& puller, const net::ImageReference& image, const std::string& image_digest,
                                          const std::vector<cache::CosignKey>& keys) {
  FetchedSignature signature;
  signature.image_digest = image_digest;
  std::string tag = cache::image_signature_tag(image_digest);
  try {
    signature.manifest = puller.manifest(image, tag);
  } catch (const Error& error) {
    throw Error("refused: no cosign signature of " + image_digest + " could be fetched (" + tag + "): " + error.what());
  }
  try {
    signature.blobs = cache::cosign_manifest_blobs(signature.manifest.bytes, "the signature manifest " + signature.manifest.digest);
    for (const auto& blob : signature.blobs)
      if (!signature.bytes.count(blob.digest))
        signature.bytes[blob.digest] = puller.small_blob(image, blob.digest, blob.size, kSignatureBlobLimit);
    signature.verified = cache::verify_cosign_signature(
        image_digest, signature.manifest.bytes,
        [&](const std::string& digest) -> std::string {
          auto found = signature.bytes.find(digest);
          if (found == signature.bytes.end()) throw Error("the payload " + digest + " was not fetched");
          return found->second;
        },
        keys);
  } catch (const Error& error) {
    throw Error("refused: the cosign signature " + tag + " does not verify: " + error.what());
  }
  return signature;
}

std::vector<cache::Artifact> signature_rows(const net::ImageReference& image, const OciPuller& puller,
                                            const FetchedSignature& signature) {
  std::vector<cache::Artifact> rows{signature_row(cache::ArtifactKind::image_attachment, image,
                                                  cache::image_signature_tag(signature.image_digest), signature.manifest.digest,
                                                  static_cast<std::int64_t>(signature.manifest.bytes.size()),
                                                  signature.manifest.url)};
  for (const auto& blob : signature.blobs)
    rows.push_back(signature_row(cache::ArtifactKind::image_blob, image, signature.manifest.digest, blob.digest, blob.size,
                                 puller.blob_url(image, blob.digest)));
  return rows;
}

ImageSignatureRecord signature_record(const net::ImageReference& image, const FetchedSignature& signature) {
  ImageSignatureRecord record;
  record.attachment.kind = cache::ArtifactKind::image_attachment;
  record.attachment.address = image.address();
  record.attachment.version = cache::image_signature_tag(signature.image_digest);
  record.attachment.filename = signature.manifest.digest;
  record.provenance.signature_digest = signature.manifest.digest.substr(7);
  record.provenance.key_fingerprint = signature.verified.key_fingerprint;
  record.provenance.result = "cosign signature of " + signature.image_digest + " verified";
  return record;
}

void record_image_signatures(cache::Store& store, const std::vector<ImageSignatureRecord>& records) {
  for (const auto& record : records) {
    const auto& a = record.attachment;
    auto row = store.find_artifact(a.kind, a.address, a.version, a.platform, a.filename);
    if (!row) throw Error("the signature row " + a.address + ":" + a.version + " was not indexed");
    auto provenance = record.provenance;
    provenance.artifact_id = row->id;
    store.add_provenance(provenance);
  }
}

}  // namespace podplane::fetch
