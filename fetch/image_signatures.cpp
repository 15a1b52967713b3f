#include "fetch/image_signatures.hpp"

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cache/row_rules.hpp"

namespace podplane::fetch {

void check_referrer_limits(const nlohmann::json& listed, const SignatureLimits& limits, const std::string& where) {
  if (listed.size() > limits.referrers)
    throw Error(where + " are " + std::to_string(listed.size()) + " manifests, more than the limit of " +
                std::to_string(limits.referrers) + " referrers of one image");
  std::int64_t total = 0;
  for (const auto& entry : listed) {
    if (!entry.is_object() || !entry.contains("size") || !entry["size"].is_number_integer()) continue;
    const std::int64_t size = entry["size"].get<std::int64_t>();
    const std::string digest = entry.contains("digest") && entry["digest"].is_string() ? entry["digest"].get<std::string>() : "";
    if (size > limits.referrer_bytes)
      throw Error(where + ": the referrer " + digest + " has " + std::to_string(size) + " bytes, more than the limit of " +
                  std::to_string(limits.referrer_bytes) + " bytes for one referrer manifest");
    if (size > 0 && (total += size) > limits.referrers_total_bytes)
      throw Error(where + " add up to more than the limit of " + std::to_string(limits.referrers_total_bytes) +
                  " bytes for the referrer manifests of one image");
  }
}

namespace {

// The attachment's own bytes are only checked by digest; the signature it holds is what the
// provenance row vouches for.
cache::Artifact signature_row(cache::ArtifactKind kind, const net::ImageReference& image, const std::string& version,
                              const std::string& digest, std::int64_t size, const std::string& url) {
  return cache::image_row(kind, image.address(), version, "", digest, size, url);
}

// Refuses, before any of them is fetched, a signature manifest whose blobs are too many or too
// large by their descriptors (small_blob then holds each to its descriptor's size).
void check_signature_blobs(const std::vector<cache::CosignBlob>& blobs, const SignatureLimits& limits, const std::string& where) {
  if (blobs.size() > limits.blobs)
    throw Error(where + " lists " + std::to_string(blobs.size()) + " blobs, more than the limit of " +
                std::to_string(limits.blobs) + " blobs for one signature");
  std::int64_t total = 0;
  for (const auto& blob : blobs) {
    if (blob.size > limits.blob_bytes)
      throw Error(where + " lists the blob " + blob.digest + " of " + std::to_string(blob.size) +
                  " bytes, more than the limit of " + std::to_string(limits.blob_bytes) + " bytes for one signature blob");
    total += blob.size;
  }
  if (total > limits.total_bytes)
    throw Error(where + " lists " + std::to_string(total) + " bytes of blobs, more than the limit of " +
                std::to_string(limits.total_bytes) + " bytes for one signature");
}

// Fetches each blob once, when it is first needed: the payloads as they are checked, the rest
// only once the signature is accepted.
std::string& fetched_blob(OciPuller& puller, const net::ImageReference& image, FetchedSignature& signature,
                          const cache::CosignBlob& blob, const SignatureLimits& limits) {
  auto found = signature.bytes.find(blob.digest);
  if (found != signature.bytes.end()) return found->second;
  return signature.bytes[blob.digest] = puller.small_blob(image, blob.digest, blob.size, limits.blob_bytes);
}

void fetch_remaining_blobs(OciPuller& puller, const net::ImageReference& image, FetchedSignature& signature,
                           const SignatureLimits& limits) {
  for (const auto& blob : signature.blobs) (void)fetched_blob(puller, image, signature, blob, limits);
}

FetchedSignature verified_sig_tag(OciPuller& puller, const net::ImageReference& image, const std::string& image_digest,
                                  const cache::CosignTrust& trust, const SignatureLimits& limits) {
  FetchedSignature signature;
  signature.image_digest = image_digest;
  signature.version = cache::image_signature_tag(image_digest);
  const std::string& tag = signature.version;
  try {
    signature.manifest = puller.manifest(image, tag);
  } catch (const Error& error) {
    throw Error("refused: no cosign signature of " + image_digest + " could be fetched (" + tag + "): " + error.what());
  }
  try {
    std::string where = "the signature manifest " + signature.manifest.digest;
    signature.blobs = cache::cosign_manifest_blobs(signature.manifest.bytes, where);
    check_signature_blobs(signature.blobs, limits, where);
    std::map<std::string, cache::CosignBlob> by_digest;
    for (const auto& blob : signature.blobs) by_digest.emplace(blob.digest, blob);
    signature.verified = cache::verify_cosign_signature(
        image_digest, image.address(), signature.manifest.bytes,
        [&](const std::string& digest) -> std::string {
          auto blob = by_digest.find(digest);
          if (blob == by_digest.end()) throw Error("the payload " + digest + " is not a blob of the signature manifest");
          return fetched_blob(puller, image, signature, blob->second, limits);
        },
        trust);
    fetch_remaining_blobs(puller, image, signature, limits);
  } catch (const Error& error) {
    throw Error("refused: the cosign signature " + tag + " does not verify: " + error.what());
  }
  return signature;
}

// A keyless signature attached as a referrer: a manifest whose one layer is a sigstore bundle.
// Its referrers index lists it; the manifest is fetched by digest and must name the image as
// its subject. nullopt (with `why`) when none verifies.
std::optional<FetchedSignature> verified_referrer(OciPuller& puller, const net::ImageReference& image,
                                                  const std::string& image_digest, const cache::CosignTrust& trust,
                                                  const SignatureLimits& limits, std::string& why) {
  auto index = puller.referrers(image, image_digest);
  if (!index) return std::nullopt;
  const std::string where = "the referrers of " + image.address() + "@" + image_digest;
  auto document = nlohmann::json::parse(index->bytes, nullptr, false);
  if (!document.is_object() || !document.contains("manifests") || !document["manifests"].is_array())
    throw Error(where + " are not an OCI image index");
  const auto& listed = document["manifests"];
  check_referrer_limits(listed, limits, where);
  for (const auto& entry : listed) {
    if (!entry.is_object() || !entry.contains("digest") || !entry["digest"].is_string() || !entry.contains("size") ||
        !entry["size"].is_number_integer())
      continue;
    std::string artifact_type = entry.value("artifactType", "");
    if (!artifact_type.empty() && artifact_type.rfind("application/vnd.dev.sigstore.bundle", 0) != 0) continue;
    const std::string digest = entry["digest"].get<std::string>();
    const std::int64_t size = entry["size"].get<std::int64_t>();
    try {
      FetchedSignature signature;
      signature.image_digest = image_digest;
      signature.version = image_digest;
      signature.manifest = puller.manifest(image, digest);
      if (static_cast<std::int64_t>(signature.manifest.bytes.size()) != size)
        throw Error(mismatch_message("the referrer " + digest + " has another size than the index says", std::to_string(size),
                                     std::to_string(signature.manifest.bytes.size())));
      auto manifest = nlohmann::json::parse(signature.manifest.bytes, nullptr, false);
      std::string subject = manifest.is_object() && manifest.contains("subject") && manifest["subject"].is_object()
                                ? manifest["subject"].value("digest", "")
                                : "";
      if (subject != image_digest)
        throw Error(mismatch_message("the referrer " + digest + " names another subject", image_digest, subject));
      auto layer = cache::sigstore_bundle_layer(signature.manifest.bytes);
      if (!layer) continue;  // a referrer of another kind
      std::string what = "the referrer " + digest;
      signature.blobs = cache::cosign_manifest_blobs(signature.manifest.bytes, what);
      check_signature_blobs(signature.blobs, limits, what);
      const std::string& bundle = fetched_blob(puller, image, signature, *layer, limits);
      signature.verified = cache::verify_sigstore_bundle(image_digest, image.address(), bundle, trust);
      fetch_remaining_blobs(puller, image, signature, limits);
      return signature;
    } catch (const Error& error) {
      why = error.what();
    }
  }
  return std::nullopt;
}

}  // namespace

FetchedSignature fetch_verified_signature(OciPuller& puller, const net::ImageReference& image, const std::string& image_digest,
                                          const cache::CosignTrust& trust, const SignatureLimits& limits) {
  try {
    return verified_sig_tag(puller, image, image_digest, trust, limits);
  } catch (const Error& sig_tag_error) {
    if (!trust.keyless()) throw;
    std::string why;
    std::optional<FetchedSignature> referrer;
    try {
      referrer = verified_referrer(puller, image, image_digest, trust, limits, why);
    } catch (const Error& error) {
      throw Error(std::string(sig_tag_error.what()) + "; and its referrers: " + error.what());
    }
    if (referrer) return std::move(*referrer);
    if (why.empty()) throw;
    throw Error(std::string(sig_tag_error.what()) + "; and no sigstore bundle among its referrers verifies: " + why);
  }
}

std::vector<cache::Artifact> signature_rows(const net::ImageReference& image, const OciPuller& puller,
                                            const FetchedSignature& signature) {
  std::vector<cache::Artifact> rows{signature_row(cache::ArtifactKind::image_attachment, image,
                                                  signature.version, signature.manifest.digest,
                                                  static_cast<std::int64_t>(signature.manifest.bytes.size()),
                                                  signature.manifest.url)};
  for (const auto& blob : signature.blobs)
    rows.push_back(signature_row(cache::ArtifactKind::image_blob, image, signature.manifest.digest, blob.digest, blob.size,
                                 puller.blob_url(image, blob.digest)));
  return rows;
}

ImageSignatureRecord signature_record(const net::ImageReference& image, const FetchedSignature& signature,
                                      const cache::CosignTrust& trust) {
  ImageSignatureRecord record;
  record.attachment.kind = cache::ArtifactKind::image_attachment;
  record.attachment.address = image.address();
  record.attachment.version = signature.version;
  record.attachment.filename = signature.manifest.digest;
  record.provenance.signature_digest = signature.manifest.digest.substr(7);
  record.provenance.key_fingerprint = signature.verified.key_fingerprint;
  if (const auto& keyless = signature.verified.keyless) {
    record.provenance.keys_digest = trust.trusted_root->digest();
    record.trusted_root = trust.trusted_root;
    record.provenance.result = "keyless cosign signature of " + signature.image_digest + " verified: signed at " +
                               keyless->signed_at + " by " + keyless->identity + " (" + keyless->issuer + "), certificate " +
                               keyless->certificate_fingerprint;
  } else {
    record.provenance.result = "cosign signature of " + signature.image_digest + " verified";
  }
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
