#include "cache/cosign.hpp"

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

CosignVerified verify_cosign_signature(std::string_view image_digest, std::string_view manifest,
                                       const std::function<std::string(const std::string& digest)>& payload,
                                       const std::vector<CosignKey>& keys) {
  std::string where = "the signature manifest sha256:" + sha256_hex(manifest);
  auto document = parse_signature_manifest(manifest, where);
  std::string names_other;  // a payload a key signed that names another image
  std::size_t signed_layers = 0;
  for (const auto& layer : document["layers"]) {
    if (text_at(layer, {"mediaType"}) != cosign_media::simple_signing) continue;
    ++signed_layers;
    auto blob = blob_of(layer, where);
    auto signature = base64_decode(text_at(layer, {"annotations", cosign_media::signature_annotation}));
    if (!signature || signature->empty()) continue;
    std::string bytes = payload(blob.digest);
    const CosignKey* by = nullptr;
    for (const auto& key : keys)
      if (!by && key.verifies(bytes, *signature)) by = &key;
    if (!by) continue;
    auto claim = json::parse(bytes, nullptr, false);
    std::string named = text_at(claim, {"critical", "image", "docker-manifest-digest"});
    if (named != image_digest) {
      names_other = mismatch_message("the payload " + blob.digest + " signed by " + by->fingerprint() + " (" + by->file() +
                                         ") names another image",
                                     std::string(image_digest), named.empty() ? "(no critical.image.docker-manifest-digest)" : named);
      continue;
    }
    return {by->fingerprint(), blob.digest};
  }
  if (!names_other.empty()) throw Error(names_other);
  if (signed_layers == 0) throw Error(where + " has no " + cosign_media::simple_signing + " layer");
  std::string names;
  for (const auto& key : keys) names += (names.empty() ? "" : ", ") + key.file() + " (" + key.fingerprint() + ")";
  throw Error("the cosign signature is by none of the keys given: " + names);
}

CosignVerified verify_stored_cosign_signature(const Store& store, const std::string& address,
                                              const std::string& image_digest, const std::vector<CosignKey>& keys) {
  std::string tag = image_signature_tag(image_digest);
  // A tag signed again upstream has a row per signature manifest: any one that verifies will do.
  std::string why = "no cosign signature of " + address + "@" + image_digest + " is stored (no " + tag + ")";
  for (const auto& row : store.artifacts({.kind = ArtifactKind::image_attachment, .address = address, .version = tag})) {
    try {
      if (!store.has_object(row.digest)) throw Error("the signature manifest " + row.filename + " is not stored");
      std::string manifest = store.read_object(row.digest);
      return verify_cosign_signature(image_digest, manifest, [&](const std::string& digest) {
        if (!store.find_artifact(ArtifactKind::image_blob, address, row.filename, "", digest) || !store.has_object(digest.substr(7)))
          throw Error("the signature " + address + ":" + tag + " lists the payload " + digest + ", which is not stored");
        return store.read_object(digest.substr(7));
      }, keys);
    } catch (const Error& error) {
      why = error.what();
    }
  }
  throw Error(why);
}

}  // namespace podplane::cache
