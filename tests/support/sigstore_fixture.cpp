#include "tests/support/sigstore_fixture.hpp"

#include <stdexcept>
#include <vector>

#include <openssl/ct.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ts.h>
#include <openssl/x509v3.h>

#include "base/digest.hpp"
#include "base/hex.hpp"
#include "base/openssl.hpp"
#include "cache/sigstore.hpp"

namespace podplane::test {

namespace {

using nlohmann::json;

void must(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("sigstore fixture: ") + what + ": " + openssl::last_error());
}

openssl::Key new_key() {
  openssl::Key key(EVP_EC_gen("P-256"));
  must(key != nullptr, "EVP_EC_gen");
  return key;
}

std::string spki_der(EVP_PKEY* key) {
  int length = i2d_PUBKEY(key, nullptr);
  must(length > 0, "i2d_PUBKEY");
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  must(i2d_PUBKEY(key, &out) == length, "i2d_PUBKEY");
  return der;
}

std::string sha256_raw(std::string_view bytes) { return from_hex(sha256_hex(bytes)); }

std::string sign(EVP_PKEY* key, std::string_view data) {
  openssl::MdContext ctx(EVP_MD_CTX_new());
  must(ctx && EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) == 1, "EVP_DigestSignInit");
  std::size_t length = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(data.data());
  must(EVP_DigestSign(ctx.get(), nullptr, &length, in, data.size()) == 1, "EVP_DigestSign");
  std::string signature(length, '\0');
  must(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, in, data.size()) == 1,
       "EVP_DigestSign");
  signature.resize(length);
  return signature;
}

std::string der_of(X509* certificate) {
  int length = i2d_X509(certificate, nullptr);
  must(length > 0, "i2d_X509");
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  must(i2d_X509(certificate, &out) == length, "i2d_X509");
  return der;
}

std::string pem_of(X509* certificate) {
  openssl::Bio bio(BIO_new(BIO_s_mem()));
  must(bio && PEM_write_bio_X509(bio.get(), certificate) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  long length = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(length)};
}

void add_extension(X509* certificate, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, certificate, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  must(extension != nullptr, "X509V3_EXT_conf_nid");
  must(X509_add_ext(certificate, extension, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(extension);
}

void add_raw_extension(X509* certificate, const char* oid, const std::string& value) {
  openssl::Asn1Object object(OBJ_txt2obj(oid, 1));
  ASN1_OCTET_STRING* data = ASN1_OCTET_STRING_new();
  must(object && data && ASN1_OCTET_STRING_set(data, reinterpret_cast<const unsigned char*>(value.data()),
                                               static_cast<int>(value.size())) == 1,
       "ASN1_OCTET_STRING_set");
  X509_EXTENSION* extension = X509_EXTENSION_create_by_OBJ(nullptr, object.get(), 0, data);
  ASN1_OCTET_STRING_free(data);
  must(extension && X509_add_ext(certificate, extension, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(extension);
}

std::string der_utf8_string(const std::string& text) {
  ASN1_UTF8STRING* string = ASN1_UTF8STRING_new();
  must(string && ASN1_STRING_set(string, text.data(), static_cast<int>(text.size())) == 1, "ASN1_STRING_set");
  int length = i2d_ASN1_UTF8STRING(string, nullptr);
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  (void)i2d_ASN1_UTF8STRING(string, &out);
  ASN1_UTF8STRING_free(string);
  return der;
}

// A certificate for `key`, issued by `issuer` (itself when null) with `issuer_key`.
openssl::Certificate new_certificate(const std::string& common_name, X509* issuer, EVP_PKEY* key, EVP_PKEY* issuer_key,
                                     std::time_t from, std::time_t to, bool ca) {
  openssl::Certificate certificate(X509_new());
  must(certificate != nullptr, "X509_new");
  X509* c = certificate.get();
  must(X509_set_version(c, 2) == 1, "X509_set_version");
  unsigned char serial[16];
  must(RAND_bytes(serial, sizeof serial) == 1, "RAND_bytes");
  serial[0] &= 0x7f;
  BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
  must(number && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(c)) != nullptr, "serial");
  BN_free(number);
  X509_NAME* name = X509_get_subject_name(c);
  if (!common_name.empty()) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("podplane-test"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
  }
  must(X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name) == 1, "X509_set_issuer_name");
  must(X509_time_adj_ex(X509_getm_notBefore(c), 0, 0, &from) && X509_time_adj_ex(X509_getm_notAfter(c), 0, 0, &to), "validity");
  must(X509_set_pubkey(c, key) == 1, "X509_set_pubkey");
  X509* signer = issuer ? issuer : c;
  add_extension(c, signer, NID_subject_key_identifier, "hash");
  add_extension(c, signer, NID_authority_key_identifier, "keyid:always");
  if (ca) {
    add_extension(c, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(c, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  (void)issuer_key;
  return certificate;
}

void sign_certificate(X509* certificate, EVP_PKEY* issuer_key) {
  must(X509_sign(certificate, issuer_key, EVP_sha256()) > 0, "X509_sign");
}

void put_be(std::string& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

struct Authority {
  openssl::Key root_key, key;
  openssl::Certificate root, intermediate;
};

Authority new_authority(const std::string& name, std::time_t from, std::time_t to) {
  Authority authority;
  authority.root_key = new_key();
  authority.key = new_key();
  authority.root = new_certificate(name + "-root", nullptr, authority.root_key.get(), authority.root_key.get(), from, to, true);
  sign_certificate(authority.root.get(), authority.root_key.get());
  authority.intermediate = new_certificate(name + "-intermediate", authority.root.get(), authority.key.get(),
                                           authority.root_key.get(), from, to, true);
  sign_certificate(authority.intermediate.get(), authority.root_key.get());
  return authority;
}

// A timestamp authority: a root and the TSA's own certificate (critical timeStamping
// extended key usage, as RFC 3161 requires of the signer).
struct TimestampAuthority {
  openssl::Key root_key, key;
  openssl::Certificate root, leaf;
};

TimestampAuthority new_timestamp_authority(const std::string& name, std::time_t from, std::time_t to) {
  TimestampAuthority tsa;
  tsa.root_key = new_key();
  tsa.key = new_key();
  tsa.root = new_certificate(name + "-root", nullptr, tsa.root_key.get(), tsa.root_key.get(), from, to, true);
  sign_certificate(tsa.root.get(), tsa.root_key.get());
  tsa.leaf = new_certificate(name, tsa.root.get(), tsa.key.get(), tsa.root_key.get(), from, to, false);
  add_extension(tsa.leaf.get(), tsa.root.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(tsa.leaf.get(), tsa.root.get(), NID_ext_key_usage, "critical,timeStamping");
  sign_certificate(tsa.leaf.get(), tsa.root_key.get());
  return tsa;
}

int timestamp_time(TS_RESP_CTX*, void* data, long* seconds, long* microseconds) {
  *seconds = static_cast<long>(*static_cast<const std::time_t*>(data));
  *microseconds = 0;
  return 1;
}

// The TSA's DER TimeStampResp over `signature` (a SHA-256 message imprint), made at `when`, the
// TSA's certificate included.
std::string rfc3161_timestamp(const TimestampAuthority& tsa, const std::string& signature, std::time_t when) {
  openssl::TimestampRequest request(TS_REQ_new());
  TS_MSG_IMPRINT* imprint = TS_MSG_IMPRINT_new();
  X509_ALGOR* algorithm = X509_ALGOR_new();
  const std::string digest = sha256_raw(signature);
  must(request && imprint && algorithm && X509_ALGOR_set0(algorithm, OBJ_nid2obj(NID_sha256), V_ASN1_NULL, nullptr) == 1 &&
           TS_MSG_IMPRINT_set_algo(imprint, algorithm) == 1 &&
           TS_MSG_IMPRINT_set_msg(imprint, reinterpret_cast<unsigned char*>(const_cast<char*>(digest.data())),
                                  static_cast<int>(digest.size())) == 1 &&
           TS_REQ_set_version(request.get(), 1) == 1 && TS_REQ_set_msg_imprint(request.get(), imprint) == 1 &&
           TS_REQ_set_cert_req(request.get(), 1) == 1,
       "the timestamp request");
  X509_ALGOR_free(algorithm);
  TS_MSG_IMPRINT_free(imprint);
  openssl::Bio request_bio(BIO_new(BIO_s_mem()));
  must(request_bio && i2d_TS_REQ_bio(request_bio.get(), request.get()) == 1, "i2d_TS_REQ_bio");
  openssl::TimestampResponseContext ctx(TS_RESP_CTX_new());
  openssl::Asn1Object policy(OBJ_txt2obj("1.3.6.1.4.1.57264.99.1", 1));
  must(ctx && policy && TS_RESP_CTX_set_signer_cert(ctx.get(), tsa.leaf.get()) == 1 &&
           TS_RESP_CTX_set_signer_key(ctx.get(), tsa.key.get()) == 1 &&
           TS_RESP_CTX_set_signer_digest(ctx.get(), EVP_sha256()) == 1 && TS_RESP_CTX_set_def_policy(ctx.get(), policy.get()) == 1 &&
           TS_RESP_CTX_add_md(ctx.get(), EVP_sha256()) == 1,
       "the timestamp authority");
  TS_RESP_CTX_set_time_cb(ctx.get(), timestamp_time, &when);
  openssl::TimestampResponse response(TS_RESP_create_response(ctx.get(), request_bio.get()));
  must(response && ASN1_INTEGER_get(TS_STATUS_INFO_get0_status(TS_RESP_get_status_info(response.get()))) == TS_STATUS_GRANTED,
       "TS_RESP_create_response");
  int length = i2d_TS_RESP(response.get(), nullptr);
  must(length > 0, "i2d_TS_RESP");
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  must(i2d_TS_RESP(response.get(), &out) == length, "i2d_TS_RESP");
  return der;
}

json log_entry_of(EVP_PKEY* key, const std::string& base_url, std::time_t from) {
  std::string der = spki_der(key);
  return {{"baseUrl", base_url},
          {"hashAlgorithm", "SHA2_256"},
          {"publicKey",
           {{"rawBytes", base64_encode(der)},
            {"keyDetails", "PKIX_ECDSA_P256_SHA_256"},
            {"validFor", {{"start", cache::rfc3339_utc(from)}}}}},
          {"logId", {{"keyId", base64_encode(sha256_raw(der))}}}};
}

std::string node_hash(const std::string& left, const std::string& right) { return sha256_raw("\x01" + left + right); }
std::string leaf_hash(const std::string& leaf) { return sha256_raw(std::string(1, '\0') + leaf); }

}  // namespace

struct SigstoreFixture::Keys {
  std::time_t created = 0;
  Authority fulcio, other_fulcio;
  openssl::Key rekor, other_rekor, ctlog, other_ctlog;
  TimestampAuthority tsa, other_tsa;
  openssl::Key leaf;  // the last signature's key: Fulcio's are one-use
};

SigstoreFixture::SigstoreFixture() : keys_(std::make_unique<Keys>()) {
  keys_->created = std::time(nullptr);
  const std::time_t from = keys_->created - 86400, to = keys_->created + 365 * 86400;
  keys_->fulcio = new_authority("fulcio", from, to);
  keys_->other_fulcio = new_authority("other-fulcio", from, to);
  keys_->rekor = new_key();
  keys_->other_rekor = new_key();
  keys_->ctlog = new_key();
  keys_->other_ctlog = new_key();
  keys_->tsa = new_timestamp_authority("tsa", from, to);
  keys_->other_tsa = new_timestamp_authority("other-tsa", from, to);
}

SigstoreFixture::~SigstoreFixture() = default;

std::string SigstoreFixture::trusted_root_json() const {
  const std::time_t from = keys_->created - 86400;
  json root = {
      {"mediaType", "application/vnd.dev.sigstore.trustedroot+json;version=0.1"},
      {"tlogs", json::array({log_entry_of(keys_->rekor.get(), "https://rekor.local", from)})},
      {"certificateAuthorities",
       json::array({{{"subject", {{"organization", "podplane-test"}, {"commonName", "fulcio"}}},
                     {"uri", "https://fulcio.local"},
                     {"certChain",
                      {{"certificates", json::array({{{"rawBytes", base64_encode(der_of(keys_->fulcio.intermediate.get()))}},
                                                     {{"rawBytes", base64_encode(der_of(keys_->fulcio.root.get()))}}})}}},
                     {"validFor", {{"start", cache::rfc3339_utc(from)}}}}})},
      {"ctlogs", json::array({log_entry_of(keys_->ctlog.get(), "https://ctfe.local", from)})},
      {"timestampAuthorities",
       json::array({{{"subject", {{"organization", "podplane-test"}, {"commonName", "tsa"}}},
                     {"uri", "https://tsa.local"},
                     {"certChain",
                      {{"certificates", json::array({{{"rawBytes", base64_encode(der_of(keys_->tsa.leaf.get()))}},
                                                     {{"rawBytes", base64_encode(der_of(keys_->tsa.root.get()))}}})}}},
                     {"validFor", {{"start", cache::rfc3339_utc(from)}}}}})}};
  return root.dump(2);
}

namespace {

// Fulcio's leaf: no subject, the identity in a critical SAN, the issuer in its OIDs, and the
// SCT of the precertificate (the same TBS without the SCT list) embedded.
openssl::Certificate leaf_certificate(SigstoreFixture::Keys& keys, const SigstoreFixture::Options& options, std::time_t from) {
  Authority& ca = options.issued_by_other_ca ? keys.other_fulcio : keys.fulcio;
  keys.leaf = new_key();
  auto leaf = new_certificate("", ca.intermediate.get(), keys.leaf.get(), ca.key.get(), from, from + 600, false);
  X509* c = leaf.get();
  add_extension(c, ca.intermediate.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(c, ca.intermediate.get(), NID_ext_key_usage, "codeSigning");
  const bool uri = options.identity.find("://") != std::string::npos;
  add_extension(c, ca.intermediate.get(), NID_subject_alt_name, std::string("critical,") + (uri ? "URI:" : "email:") + options.identity);
  add_raw_extension(c, "1.3.6.1.4.1.57264.1.1", options.issuer);
  add_raw_extension(c, "1.3.6.1.4.1.57264.1.8", der_utf8_string(options.issuer));
  sign_certificate(c, ca.key.get());

  unsigned char* tbs = nullptr;
  int tbs_length = i2d_re_X509_tbs(c, &tbs);
  must(tbs_length > 0, "i2d_re_X509_tbs");
  std::string tbs_der(reinterpret_cast<char*>(tbs), static_cast<std::size_t>(tbs_length));
  OPENSSL_free(tbs);
  EVP_PKEY* log_key = options.sct_by_other_log ? keys.other_ctlog.get() : keys.ctlog.get();
  const std::uint64_t timestamp = static_cast<std::uint64_t>(from) * 1000;
  std::string signed_data;
  put_be(signed_data, 0, 1);
  put_be(signed_data, 0, 1);
  put_be(signed_data, timestamp, 8);
  put_be(signed_data, 1, 2);
  signed_data += sha256_raw(spki_der(X509_get0_pubkey(ca.intermediate.get())));
  put_be(signed_data, tbs_der.size(), 3);
  signed_data += tbs_der;
  put_be(signed_data, 0, 2);
  std::string signature = sign(log_key, signed_data);
  std::string log_id = sha256_raw(spki_der(log_key));
  SCT* sct = SCT_new();
  must(sct && SCT_set_version(sct, SCT_VERSION_V1) == 1 && SCT_set_log_entry_type(sct, CT_LOG_ENTRY_TYPE_PRECERT) == 1 &&
           SCT_set1_log_id(sct, reinterpret_cast<const unsigned char*>(log_id.data()), log_id.size()) == 1 &&
           SCT_set_signature_nid(sct, NID_ecdsa_with_SHA256) == 1 &&
           SCT_set1_signature(sct, reinterpret_cast<const unsigned char*>(signature.data()), signature.size()) == 1,
       "SCT");
  SCT_set_timestamp(sct, timestamp);
  openssl::SctList list(sk_SCT_new_null());
  must(list && sk_SCT_push(list.get(), sct) > 0, "sk_SCT_push");
  must(X509_add1_ext_i2d(c, NID_ct_precert_scts, list.get(), 0, X509V3_ADD_DEFAULT) == 1, "the SCT list extension");
  sign_certificate(c, ca.key.get());
  return leaf;
}

// Rekor's answer for `body`: the entry at index 2 of a three-leaf log, its SET, and the
// inclusion proof under a checkpoint the log signed.
json rekor_entry(SigstoreFixture::Keys& keys, const std::string& body, std::time_t when, const SigstoreFixture::Options& options) {
  const std::string log_id = sha256_raw(spki_der(keys.rekor.get()));
  const std::int64_t index = 2;
  json promise = {{"body", base64_encode(body)}, {"integratedTime", when}, {"logID", to_hex(log_id)}, {"logIndex", index}};
  std::string set = sign(options.set_by_other_key ? keys.other_rekor.get() : keys.rekor.get(), promise.dump());
  const std::string left = node_hash(leaf_hash("leaf-0"), leaf_hash("leaf-1"));
  const std::string root = node_hash(left, leaf_hash(body));
  const std::string note = "rekor.local - 1193050959916656506\n3\n" + base64_encode(root) + "\n";
  const std::string checkpoint =
      note + "\n\xE2\x80\x94 rekor.local " + base64_encode(log_id.substr(0, 4) + sign(keys.rekor.get(), note)) + "\n";
  return {{"body", body},
          {"integratedTime", when},
          {"logIndex", index},
          {"logId", log_id},
          {"set", set},
          {"rootHash", root},
          {"hashes", json::array({options.proof_to_other_root ? sha256_raw("other") : left})},
          {"treeSize", 3},
          {"checkpoint", checkpoint}};
}

// The signature's RFC 3161 timestamps, as a bundle's timestampVerificationData lists them.
json timestamps_of(SigstoreFixture::Keys& keys, const std::string& signature, std::time_t when,
                   const SigstoreFixture::Options& options);

json bundle_tlog_entry(const json& entry, const std::string& kind, bool with_set = true) {
  std::string body = entry["body"];
  json hashes = json::array();
  for (const auto& hash : entry["hashes"]) hashes.push_back(base64_encode(hash.get<std::string>()));
  json out = {{"logIndex", std::to_string(entry["logIndex"].get<std::int64_t>())},
          {"logId", {{"keyId", base64_encode(entry["logId"].get<std::string>())}}},
          {"kindVersion", {{"kind", kind}, {"version", "0.0.1"}}},
          {"integratedTime", std::to_string(entry["integratedTime"].get<std::int64_t>())},
          {"inclusionPromise", {{"signedEntryTimestamp", base64_encode(entry["set"].get<std::string>())}}},
          {"inclusionProof",
           {{"logIndex", std::to_string(entry["logIndex"].get<std::int64_t>())},
            {"rootHash", base64_encode(entry["rootHash"].get<std::string>())},
            {"treeSize", std::to_string(entry["treeSize"].get<std::int64_t>())},
            {"hashes", hashes},
            {"checkpoint", {{"envelope", entry["checkpoint"]}}}}},
          {"canonicalizedBody", base64_encode(body)}};
  if (!with_set) out.erase("inclusionPromise");
  return out;
}

}  // namespace

namespace {

json timestamps_of(SigstoreFixture::Keys& keys, const std::string& signature, std::time_t when,
                   const SigstoreFixture::Options& options) {
  if (!options.timestamped) return json::array();
  const auto& tsa = options.timestamp_by_other_tsa ? keys.other_tsa : keys.tsa;
  const std::time_t at = options.timestamp_at ? options.timestamp_at : when;
  return json::array({{{"signedTimestamp", base64_encode(rfc3161_timestamp(tsa, signature, at))}}});
}

}  // namespace

json SigstoreFixture::sig_layer_annotations(const std::string& payload, const Options& options) {
  const std::time_t when = options.signed_at ? options.signed_at : std::time(nullptr);
  auto leaf = leaf_certificate(*keys_, options, options.certificate_at ? options.certificate_at : when - 60);
  const std::string signature = sign(keys_->leaf.get(), payload);
  const std::string certificate_pem = pem_of(leaf.get());
  json body = {{"apiVersion", "0.0.1"},
               {"kind", "hashedrekord"},
               {"spec",
                {{"data", {{"hash", {{"algorithm", "sha256"}, {"value", sha256_hex(payload)}}}}},
                 {"signature", {{"content", base64_encode(signature)}, {"publicKey", {{"content", base64_encode(certificate_pem)}}}}}}}};
  json entry = rekor_entry(*keys_, body.dump(), when, options);
  Authority& ca = options.issued_by_other_ca ? keys_->other_fulcio : keys_->fulcio;
  json rekor_bundle = {{"SignedEntryTimestamp", base64_encode(entry["set"].get<std::string>())},
                       {"Payload",
                        {{"body", base64_encode(entry["body"].get<std::string>())},
                         {"integratedTime", when},
                         {"logIndex", entry["logIndex"]},
                         {"logID", to_hex(entry["logId"].get<std::string>())}}}};
  last_ = {{"certificate", base64_encode(der_of(leaf.get()))},
           {"entry", bundle_tlog_entry(entry, "hashedrekord")},
           {"signature", base64_encode(signature)},
           {"digest", base64_encode(sha256_raw(payload))}};
  last_["entry"].erase("inclusionProof");  // a v0.1 bundle has the SET only, as cosign's annotation
  last_["timestamps"] = timestamps_of(*keys_, signature, when, options);
  json annotations = {{"dev.cosignproject.cosign/signature", base64_encode(signature)},
                      {"dev.sigstore.cosign/certificate", certificate_pem},
                      {"dev.sigstore.cosign/chain", pem_of(ca.intermediate.get()) + pem_of(ca.root.get())},
                      {"dev.sigstore.cosign/bundle", rekor_bundle.dump()}};
  if (!last_["timestamps"].empty())
    annotations["dev.sigstore.cosign/rfc3161timestamp"] =
        json{{"SignedRFC3161Timestamp", last_["timestamps"][0]["signedTimestamp"]}}.dump();
  return annotations;
}

std::string SigstoreFixture::last_signature_as_bundle_v01() const {
  json bundle = {{"mediaType", "application/vnd.dev.sigstore.bundle+json;version=0.1"},
                 {"verificationMaterial",
                  {{"x509CertificateChain", {{"certificates", json::array({{{"rawBytes", last_["certificate"]}}})}}},
                   {"tlogEntries", json::array({last_["entry"]})},
                   {"timestampVerificationData", {{"rfc3161Timestamps", last_["timestamps"]}}}}},
                 {"messageSignature",
                  {{"messageDigest", {{"algorithm", "SHA2_256"}, {"digest", last_["digest"]}}}, {"signature", last_["signature"]}}}};
  return bundle.dump();
}

std::string SigstoreFixture::simple_signing_payload(const std::string& digest, const std::string& reference) {
  return json{{"critical",
               {{"identity", {{"docker-reference", reference}}},
                {"image", {{"docker-manifest-digest", digest}}},
                {"type", "cosign container image signature"}}},
              {"optional", nullptr}}
      .dump();
}

std::string SigstoreFixture::image_statement(const std::string& digest, const std::string& name) {
  return json{{"_type", "https://in-toto.io/Statement/v1"},
              {"subject", json::array({{{"name", name}, {"digest", {{"sha256", digest.substr(digest.find(':') + 1)}}}}})},
              {"predicateType", "https://sigstore.dev/cosign/sign/v1"},
              {"predicate", json::object()}}
      .dump();
}

std::string SigstoreFixture::dsse_bundle(const std::string& statement, const Options& options) {
  const std::time_t when = options.signed_at ? options.signed_at : std::time(nullptr);
  auto leaf = leaf_certificate(*keys_, options, options.certificate_at ? options.certificate_at : when - 60);
  const std::string payload_type = "application/vnd.in-toto+json";
  const std::string signature = sign(keys_->leaf.get(), cache::dsse_pae(payload_type, statement));
  json envelope = {{"payload", base64_encode(statement)},
                   {"payloadType", payload_type},
                   {"signatures", json::array({{{"sig", base64_encode(signature)}, {"keyid", ""}}})}};
  json body = {{"apiVersion", "0.0.1"},
               {"kind", "dsse"},
               {"spec",
                {{"envelopeHash", {{"algorithm", "sha256"}, {"value", sha256_hex(envelope.dump())}}},
                 {"payloadHash", {{"algorithm", "sha256"}, {"value", sha256_hex(statement)}}},
                 {"signatures", json::array({{{"signature", base64_encode(signature)},
                                              {"verifier", base64_encode(pem_of(leaf.get()))}}})}}}};
  json entry = rekor_entry(*keys_, body.dump(), when, options);
  json bundle = {{"mediaType", "application/vnd.dev.sigstore.bundle.v0.3+json"},
                 {"verificationMaterial",
                  {{"certificate", {{"rawBytes", base64_encode(der_of(leaf.get()))}}},
                   {"tlogEntries", json::array({bundle_tlog_entry(entry, "dsse", !options.without_set)})},
                   {"timestampVerificationData", {{"rfc3161Timestamps", timestamps_of(*keys_, signature, when, options)}}}}},
                 {"dsseEnvelope", envelope}};
  return bundle.dump();
}

}  // namespace podplane::test
