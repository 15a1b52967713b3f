#include "cache/cosign.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/openssl.hpp"
#include "cache/row_rules.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;
using nlohmann::json;

struct CosignKey::Handle {
  openssl::Key key;
};

CosignKey CosignKey::load(const fs::path& file) {
  const std::string pem = read_file_within_limits(file, "the cosign public key");
  openssl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw Error("cannot read the cosign public key " + file.string() + ": " + openssl::last_error());
  openssl::Key key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!key)
    throw Error("the cosign public key " + file.string() + " is not a PEM public key (as cosign.pub): " + openssl::last_error());
  char group[64] = {};
  if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_EC ||
      EVP_PKEY_get_utf8_string_param(key.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, nullptr) != 1 ||
      std::string_view(group) != "prime256v1") {
    (void)openssl::last_error();
    throw Error("the cosign public key " + file.string() + " is not an ECDSA P-256 key (cosign generate-key-pair makes one)");
  }
  // The DER SubjectPublicKeyInfo, written into our own buffer (nothing for us to free).
  int length = i2d_PUBKEY(key.get(), nullptr);
  if (length <= 0) throw Error("cannot encode the cosign public key " + file.string() + ": " + openssl::last_error());
  std::string spki(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(spki.data());
  if (i2d_PUBKEY(key.get(), &out) != length)
    throw Error("cannot encode the cosign public key " + file.string() + ": " + openssl::last_error());
  CosignKey loaded;
  loaded.key_ = std::make_shared<Handle>(Handle{std::move(key)});
  loaded.fingerprint_ = "sha256:" + sha256_hex(spki);
  loaded.file_ = file.string();
  return loaded;
}

bool CosignKey::verifies(std::string_view payload, std::string_view der_signature) const {
  openssl::MdContext ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_->key.get()) != 1)
    throw Error("cannot start an ECDSA verification: " + openssl::last_error());
  int ok = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(der_signature.data()), der_signature.size(),
                            reinterpret_cast<const unsigned char*>(payload.data()), payload.size());
  if (ok != 1) (void)openssl::last_error();  // a malformed signature is a failed one, not an error
  return ok == 1;
}

std::vector<CosignKey> load_cosign_keys(const std::vector<fs::path>& files) {
  std::vector<CosignKey> keys;
  for (const auto& file : files) keys.push_back(CosignKey::load(file));
  return keys;
}

namespace {

json parse_signature_manifest(std::string_view manifest, const std::string& where) {
  auto document = json::parse(manifest, nullptr, false);
  if (!document.is_object() || !document.contains("layers") || !document["layers"].is_array())
    throw Error(where + " is not an image manifest with a layers list");
  return document;
}

CosignBlob blob_of(const json& descriptor, const std::string& where) {
  CosignBlob blob;
  if (descriptor.is_object() && descriptor.contains("digest") && descriptor["digest"].is_string())
    blob.digest = descriptor["digest"].get<std::string>();
  if (auto problem = image_digest_problem(blob.digest)) throw Error(where + ": descriptor digest " + *problem);
  if (!descriptor.contains("size") || !descriptor["size"].is_number_integer() || descriptor["size"].get<std::int64_t>() < 0)
    throw Error(where + ": descriptor " + blob.digest + " has no valid size");
  blob.size = descriptor["size"].get<std::int64_t>();
  return blob;
}

std::string text_at(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
  }
  return at->is_string() ? at->get<std::string>() : "";
}

}  // namespace

std::vector<CosignBlob> cosign_manifest_blobs(std::string_view manifest, const std::string& where) {
  auto document = parse_signature_manifest(manifest, where);
  std::vector<CosignBlob> blobs{blob_of(document.value("config", json::object()), where)};
  for (const auto& layer : document["layers"]) blobs.push_back(blob_of(layer, where));
  return blobs;
}

namespace {

// cosign writes docker.io's repositories as index.docker.io/…; the store writes docker.io/….
std::string normalized_reference(std::string reference) {
  if (reference.rfind("index.docker.io/", 0) == 0) reference.replace(0, 15, "docker.io");
  return reference;
}

// Whether a signed repository name is the image's: the same, or the same with a tag or digest.
bool names_repository(std::string_view signed_name, std::string_view address) {
  std::string name = normalized_reference(std::string(signed_name));
  if (name == address) return true;
  return name.size() > address.size() && name.compare(0, address.size(), address) == 0 &&
         (name[address.size()] == ':' || name[address.size()] == '@');
}

std::int64_t number_of(const json& value, const std::string& where) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (!text.empty() && text.size() < 19 && text.find_first_not_of("0123456789") == std::string::npos) return std::stoll(text);
  }
  throw Error(where + " is not a number");
}

std::string base64_field(const json& object, const char* key, const std::string& where) {
  auto raw = base64_decode(text_at(object, {key}));
  if (!raw || raw->empty()) throw Error(where + ": \"" + key + "\" is missing or not base64");
  return *raw;
}

// Every certificate of a PEM text, as DER.
std::vector<std::string> pem_certificates(std::string_view pem, const std::string& where) {
  std::vector<std::string> ders;
  openssl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (bio) {
    openssl::Certificate certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!certificate) break;
    int length = i2d_X509(certificate.get(), nullptr);
    std::string der(static_cast<std::size_t>(std::max(length, 0)), '\0');
    auto* out = reinterpret_cast<unsigned char*>(der.data());
    if (length <= 0 || i2d_X509(certificate.get(), &out) != length) throw Error(where + ": cannot encode a certificate");
    ders.push_back(std::move(der));
  }
  (void)openssl::last_error();  // the end of the text reads as an error
  if (ders.empty()) throw Error(where + " holds no PEM certificate");
  return ders;
}

// cosign's layout: the certificate, its chain and the Rekor bundle ({"SignedEntryTimestamp",
// "Payload": {"body", "integratedTime", "logIndex", "logID"}}) as annotations of the layer.
KeylessEvidence evidence_of_layer(const json& layer, std::string payload, std::string signature, const std::string& where) {
  KeylessEvidence evidence;
  evidence.entry_kind = KeylessEvidence::Entry::hashedrekord;
  evidence.certificate_der = pem_certificates(text_at(layer, {"annotations", cosign_media::certificate_annotation}),
                                              where + " " + cosign_media::certificate_annotation).front();
  if (auto chain = text_at(layer, {"annotations", cosign_media::chain_annotation}); !chain.empty())
    evidence.chain_der = pem_certificates(chain, where + " " + cosign_media::chain_annotation);
  std::string bundle_where = where + " " + cosign_media::bundle_annotation;
  auto bundle = json::parse(text_at(layer, {"annotations", cosign_media::bundle_annotation}), nullptr, false);
  if (!bundle.is_object()) throw Error(bundle_where + " is missing or not JSON: no Rekor entry proves when it was signed");
  const json& entry = bundle.value("Payload", json::object());
  evidence.rekor.signed_entry_timestamp = base64_field(bundle, "SignedEntryTimestamp", bundle_where);
  evidence.rekor.body = base64_field(entry, "body", bundle_where + " Payload");
  evidence.rekor.integrated_time = number_of(entry.value("integratedTime", json()), bundle_where + " Payload.integratedTime");
  evidence.rekor.log_index = number_of(entry.value("logIndex", json()), bundle_where + " Payload.logIndex");
  try {
    evidence.rekor.log_id = from_hex(text_at(entry, {"logID"}));
  } catch (const Error&) {
    throw Error(bundle_where + " Payload.logID is not hex");
  }
  // {"SignedRFC3161Timestamp": base64 of a DER TimeStampResp over the signature}, where a TSA
  // timestamped it.
  if (auto timestamp = text_at(layer, {"annotations", cosign_media::timestamp_annotation}); !timestamp.empty()) {
    auto document = json::parse(timestamp, nullptr, false);
    evidence.rfc3161_timestamps.push_back(
        base64_field(document, "SignedRFC3161Timestamp", where + " " + cosign_media::timestamp_annotation));
  }
  evidence.signature = std::move(signature);
  evidence.signed_bytes = payload;
  evidence.payload = std::move(payload);
  return evidence;
}

CosignVerified keyless_result(KeylessVerified verified, std::string payload_digest) {
  CosignVerified result;
  result.key_fingerprint = "keyless:" + verified.identity + " " + verified.issuer;
  result.payload_digest = std::move(payload_digest);
  result.keyless = std::move(verified);
  return result;
}

std::string keys_named(const CosignTrust& trust) {
  std::string names;
  for (const auto& key : trust.keys) names += (names.empty() ? "" : ", ") + key.file() + " (" + key.fingerprint() + ")";
  for (const auto& identity : trust.identities) names += (names.empty() ? "" : ", ") + std::string("keyless ") + identity.str();
  return names;
}

}  // namespace

CosignVerified verify_cosign_signature(std::string_view image_digest, std::string_view address, std::string_view manifest,
                                       const std::function<std::string(const std::string& digest)>& payload,
                                       const CosignTrust& trust) {
  std::string where = "the signature manifest sha256:" + sha256_hex(manifest);
  auto document = parse_signature_manifest(manifest, where);
  std::string refused;  // why a payload that was signed is still refused: it names another image
  std::size_t signed_layers = 0;
  for (const auto& layer : document["layers"]) {
    if (text_at(layer, {"mediaType"}) != cosign_media::simple_signing) continue;
    ++signed_layers;
    auto blob = blob_of(layer, where);
    auto signature = base64_decode(text_at(layer, {"annotations", cosign_media::signature_annotation}));
    if (!signature || signature->empty()) continue;
    std::string bytes = payload(blob.digest);
    std::optional<CosignVerified> verified;
    for (const auto& key : trust.keys)
      if (!verified && key.verifies(bytes, *signature)) verified = CosignVerified{key.fingerprint(), blob.digest, std::nullopt};
    if (!verified && trust.keyless() && !text_at(layer, {"annotations", cosign_media::certificate_annotation}).empty()) {
      try {
        auto evidence = evidence_of_layer(layer, bytes, *signature, "the payload " + blob.digest);
        verified = keyless_result(verify_keyless(evidence, *trust.trusted_root, trust.identities), blob.digest);
      } catch (const Error& error) {
        refused = "the keyless signature of the payload " + blob.digest + " does not verify: " + error.what();
        continue;
      }
    }
    if (!verified) continue;
    std::string by = verified->keyless ? "the keyless signature of " + verified->keyless->identity : "the key " + verified->key_fingerprint;
    auto claim = json::parse(bytes, nullptr, false);
    std::string named = text_at(claim, {"critical", "image", "docker-manifest-digest"});
    if (named != image_digest) {
      refused = mismatch_message("the payload " + blob.digest + " signed by " + by + " names another image",
                                 std::string(image_digest), named.empty() ? "(no critical.image.docker-manifest-digest)" : named);
      continue;
    }
    // A key is pinned per use (docs/images.md); an identity signs many repositories, so its
    // signature must name this one.
    std::string reference = text_at(claim, {"critical", "identity", "docker-reference"});
    if (verified->keyless && !names_repository(reference, address)) {
      refused = mismatch_message("the payload " + blob.digest + " signed by " + by + " names another repository",
                                 std::string(address), reference.empty() ? "(no critical.identity.docker-reference)" : reference);
      continue;
    }
    return *verified;
  }
  if (!refused.empty()) throw Error(refused);
  if (signed_layers == 0) throw Error(where + " has no " + cosign_media::simple_signing + " layer");
  throw Error("the cosign signature is by none of the keys given: " + keys_named(trust));
}

std::optional<CosignBlob> sigstore_bundle_layer(std::string_view manifest) {
  auto document = json::parse(manifest, nullptr, false);
  if (!document.is_object() || !document.contains("layers") || !document["layers"].is_array() || document["layers"].size() != 1)
    return std::nullopt;
  const auto& layer = document["layers"][0];
  auto is_bundle = [](const std::string& type) { return type.rfind("application/vnd.dev.sigstore.bundle", 0) == 0; };
  if (!is_bundle(text_at(document, {"artifactType"})) && !is_bundle(text_at(layer, {"mediaType"}))) return std::nullopt;
  try {
    return blob_of(layer, "the sigstore bundle manifest");
  } catch (const Error&) {
    return std::nullopt;
  }
}

namespace {

RekorEntry rekor_entry_of_bundle(const json& entry, const std::string& where) {
  RekorEntry rekor;
  rekor.body = base64_field(entry, "canonicalizedBody", where);
  rekor.integrated_time = number_of(entry.value("integratedTime", json()), where + ".integratedTime");
  rekor.log_index = number_of(entry.value("logIndex", json()), where + ".logIndex");
  rekor.log_id = base64_field(entry.value("logId", json::object()), "keyId", where + ".logId");
  if (entry.contains("inclusionPromise"))
    rekor.signed_entry_timestamp = base64_field(entry["inclusionPromise"], "signedEntryTimestamp", where + ".inclusionPromise");
  if (entry.contains("inclusionProof")) {
    const auto& proof = entry["inclusionProof"];
    std::string at = where + ".inclusionProof";
    RekorEntry::InclusionProof inclusion;
    inclusion.log_index = number_of(proof.value("logIndex", json()), at + ".logIndex");
    inclusion.tree_size = number_of(proof.value("treeSize", json()), at + ".treeSize");
    inclusion.root_hash = base64_field(proof, "rootHash", at);
    for (const auto& hash : proof.value("hashes", json::array())) {
      auto raw = hash.is_string() ? base64_decode(hash.get<std::string>()) : std::nullopt;
      if (!raw) throw Error(at + ".hashes holds something that is not base64");
      inclusion.hashes.push_back(*raw);
    }
    inclusion.checkpoint = text_at(proof, {"checkpoint", "envelope"});
    rekor.inclusion_proof = std::move(inclusion);
  }
  return rekor;
}

}  // namespace

CosignVerified verify_sigstore_bundle(std::string_view image_digest, std::string_view address, std::string_view bundle_text,
                                      const CosignTrust& trust) {
  const std::string where = "the sigstore bundle sha256:" + sha256_hex(bundle_text);
  if (!trust.keyless()) throw Error(where + " is a keyless signature, and no --certificate-identity was given");
  auto bundle = json::parse(bundle_text, nullptr, false);
  if (!bundle.is_object() || text_at(bundle, {"mediaType"}).rfind("application/vnd.dev.sigstore.bundle", 0) != 0)
    throw Error(where + " is not a sigstore bundle (no application/vnd.dev.sigstore.bundle… mediaType)");
  if (!bundle.contains("dsseEnvelope"))
    throw Error(where + " signs a message, which names no image: only a DSSE envelope of an in-toto statement is taken");
  KeylessEvidence evidence;
  evidence.entry_kind = KeylessEvidence::Entry::dsse;
  const json& material = bundle.value("verificationMaterial", json::object());
  if (material.contains("certificate")) {
    evidence.certificate_der = base64_field(material["certificate"], "rawBytes", where + " verificationMaterial.certificate");
  } else {
    const json& chain = material.value("x509CertificateChain", json::object()).value("certificates", json::array());
    for (const auto& certificate : chain)
      (evidence.certificate_der.empty() ? evidence.certificate_der : evidence.chain_der.emplace_back()) =
          base64_field(certificate, "rawBytes", where + " verificationMaterial.x509CertificateChain");
    if (evidence.certificate_der.empty()) throw Error(where + " carries no certificate (a keyless signature has one)");
  }
  const json& entries = material.value("tlogEntries", json::array());
  if (!entries.is_array() || entries.empty()) throw Error(where + " carries no Rekor entry");
  evidence.rekor = rekor_entry_of_bundle(entries[0], where + " verificationMaterial.tlogEntries[0]");
  const json& timestamps =
      material.value("timestampVerificationData", json::object()).value("rfc3161Timestamps", json::array());
  for (std::size_t i = 0; timestamps.is_array() && i < timestamps.size(); ++i)
    evidence.rfc3161_timestamps.push_back(base64_field(
        timestamps[i], "signedTimestamp", where + " verificationMaterial.timestampVerificationData.rfc3161Timestamps[" +
                                              std::to_string(i) + "]"));
  const json& envelope = bundle["dsseEnvelope"];
  const std::string payload_type = text_at(envelope, {"payloadType"});
  evidence.payload = base64_field(envelope, "payload", where + " dsseEnvelope");
  const json& signatures = envelope.value("signatures", json::array());
  if (!signatures.is_array() || signatures.size() != 1) throw Error(where + " dsseEnvelope must hold exactly one signature");
  evidence.signature = base64_field(signatures[0], "sig", where + " dsseEnvelope.signatures[0]");
  evidence.signed_bytes = dsse_pae(payload_type, evidence.payload);
  auto verified = verify_keyless(evidence, *trust.trusted_root, trust.identities);

  if (payload_type != cosign_media::in_toto)
    throw Error(mismatch_message(where + " signs another kind of payload", cosign_media::in_toto, payload_type));
  auto statement = json::parse(evidence.payload, nullptr, false);
  const std::string hex(image_digest.substr(image_digest.find(':') + 1));
  const json& subjects = statement.is_object() ? statement.value("subject", json::array()) : json::array();
  std::string named;
  for (const auto& subject : subjects) {
    if (text_at(subject, {"digest", "sha256"}) != hex) {
      named += (named.empty() ? "" : ", ") + ("sha256:" + text_at(subject, {"digest", "sha256"}));
      continue;
    }
    std::string name = text_at(subject, {"name"});
    if (!name.empty() && !names_repository(name, address))
      throw Error(mismatch_message(where + ", signed by " + verified.identity + ", names another repository",
                                   std::string(address), name));
    return keyless_result(std::move(verified), "sha256:" + sha256_hex(bundle_text));
  }
  throw Error(mismatch_message(where + ", signed by " + verified.identity + ", names another image", std::string(image_digest),
                               named.empty() ? "(no subject)" : named));
}

CosignVerified verify_stored_cosign_signature(const Store& store, const std::string& address,
                                              const std::string& image_digest, const CosignTrust& trust) {
  std::string tag = image_signature_tag(image_digest);
  // A tag signed again upstream has a row per signature manifest: any one that verifies will do.
  std::string why = "no cosign signature of " + address + "@" + image_digest + " is stored (no " + tag + ")";
  auto stored_blob = [&](const Artifact& row, const std::string& digest) {
    if (!store.find_artifact(ArtifactKind::image_blob, address, row.filename, "", digest) || !store.has_object(digest.substr(7)))
      throw Error("the signature " + address + ":" + row.version + " lists the blob " + digest + ", which is not stored");
    return store.read_object(digest.substr(7));
  };
  for (const auto& row : store.artifacts({.kind = ArtifactKind::image_attachment, .address = address, .version = tag})) {
    try {
      if (!store.has_object(row.digest)) throw Error("the signature manifest " + row.filename + " is not stored");
      std::string manifest = store.read_object(row.digest);
      return verify_cosign_signature(image_digest, address, manifest,
                                     [&](const std::string& digest) { return stored_blob(row, digest); }, trust);
    } catch (const Error& error) {
      why = error.what();
    }
  }
  if (!trust.keyless()) throw Error(why);
  // Keyless signatures also come as referrers of the image: a sigstore bundle each.
  for (const auto& row : store.artifacts({.kind = ArtifactKind::image_attachment, .address = address, .version = image_digest})) {
    if (!store.has_object(row.digest)) continue;
    auto layer = sigstore_bundle_layer(store.read_object(row.digest));
    if (!layer) continue;
    try {
      return verify_sigstore_bundle(image_digest, address, stored_blob(row, layer->digest), trust);
    } catch (const Error& error) {
      why = error.what();
    }
  }
  throw Error(why);
}

}  // namespace podplane::cache
