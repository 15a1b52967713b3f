#include "cache/sigstore.hpp"

#include <cstdio>
#include <regex>

#include <nlohmann/json.hpp>
#include <openssl/ct.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ts.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/openssl.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Fulcio's OIDC issuer: .1.8 is a DER UTF8String; .1.1, the older one, the raw bytes.
constexpr const char* kIssuerOidV2 = "1.3.6.1.4.1.57264.1.8";
constexpr const char* kIssuerOidV1 = "1.3.6.1.4.1.57264.1.1";

struct Validity {
  std::optional<std::time_t> start, end;
  bool covers(std::time_t when) const { return (!start || *start <= when) && (!end || when <= *end); }
};

std::string sha256_raw(std::string_view bytes) { return from_hex(sha256_hex(bytes)); }

std::string text_of(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

std::string decoded(const json& object, const char* key, const std::string& where) {
  auto raw = base64_decode(text_of(object, key));
  if (!raw || raw->empty()) throw Error(where + ": \"" + key + "\" is not base64");
  return *raw;
}

Validity validity_of(const json& object, const std::string& where) {
  Validity validity;
  if (!object.is_object() || !object.contains("validFor")) return validity;
  const auto& range = object["validFor"];
  for (auto [key, at] : {std::pair{"start", &validity.start}, std::pair{"end", &validity.end}}) {
    std::string text = text_of(range, key);
    if (text.empty()) continue;
    *at = parse_rfc3339(text);
    if (!*at) throw Error(where + ": validFor." + key + " \"" + text + "\" is not an RFC 3339 time");
  }
  return validity;
}

openssl::Certificate certificate_of_der(std::string_view der, const std::string& where) {
  const auto* in = reinterpret_cast<const unsigned char*>(der.data());
  openssl::Certificate certificate(d2i_X509(nullptr, &in, static_cast<long>(der.size())));
  if (!certificate) throw Error(where + " is not a DER X.509 certificate: " + openssl::last_error());
  return certificate;
}

openssl::Key key_of_der(std::string_view der, const std::string& where) {
  const auto* in = reinterpret_cast<const unsigned char*>(der.data());
  openssl::Key key(d2i_PUBKEY(nullptr, &in, static_cast<long>(der.size())));
  if (!key) throw Error(where + " is not a DER public key: " + openssl::last_error());
  return key;
}

std::string der_of(X509* certificate) {
  int length = i2d_X509(certificate, nullptr);
  if (length <= 0) throw Error("cannot encode a certificate: " + openssl::last_error());
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  (void)i2d_X509(certificate, &out);
  return der;
}

std::string public_key_der_of(X509* certificate) {
  int length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(certificate), nullptr);
  if (length <= 0) throw Error("cannot encode a certificate's public key: " + openssl::last_error());
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  (void)i2d_X509_PUBKEY(X509_get_X509_PUBKEY(certificate), &out);
  return der;
}

// Sigstore signs with the key's usual digest: SHA-256 for ECDSA and RSA, none for EdDSA.
bool signature_verifies(EVP_PKEY* key, std::string_view data, std::string_view signature) {
  const int type = EVP_PKEY_get_base_id(key);
  const EVP_MD* md = (type == EVP_PKEY_ED25519 || type == EVP_PKEY_ED448) ? nullptr : EVP_sha256();
  openssl::MdContext ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) != 1)
    throw Error("cannot start a signature verification: " + openssl::last_error());
  int ok = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(data.data()), data.size());
  if (ok != 1) (void)openssl::last_error();  // a malformed signature is a failed one
  return ok == 1;
}

}  // namespace

struct SigstoreTrustedRoot::Impl {
  struct Log {
    std::string log_id;  // raw
    std::string base_url;
    openssl::Key key;
    Validity valid;
  };
  struct CertificateAuthority {
    std::string uri;
    std::vector<openssl::Certificate> chain;  // as listed: the issuing certificate first, the root last
    Validity valid;
  };
  std::vector<CertificateAuthority> authorities, timestamp_authorities;
  std::vector<Log> tlogs, ctlogs;
};

SigstoreTrustedRoot::~SigstoreTrustedRoot() = default;

namespace {

std::vector<SigstoreTrustedRoot::Impl::Log> logs_of(const json& document, const char* key, const std::string& where) {
  std::vector<SigstoreTrustedRoot::Impl::Log> logs;
  if (!document.contains(key) || !document[key].is_array()) return logs;
  for (std::size_t i = 0; i < document[key].size(); ++i) {
    const auto& entry = document[key][i];
    std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
    const json& public_key = entry.is_object() ? entry.value("publicKey", json::object()) : json::object();
    SigstoreTrustedRoot::Impl::Log log;
    log.key = key_of_der(decoded(public_key, "rawBytes", at + ".publicKey"), at + ".publicKey.rawBytes");
    log.valid = validity_of(public_key, at + ".publicKey");
    log.log_id = decoded(entry.value("logId", json::object()), "keyId", at + ".logId");
    log.base_url = text_of(entry, "baseUrl");
    logs.push_back(std::move(log));
  }
  return logs;
}

// Fulcio's CAs and the TSAs: each a certificate chain (the issuing certificate first) and its
// validity.
std::vector<SigstoreTrustedRoot::Impl::CertificateAuthority> authorities_of(const json& document, const char* key,
                                                                            const std::string& where) {
  std::vector<SigstoreTrustedRoot::Impl::CertificateAuthority> authorities;
  if (!document.contains(key) || !document[key].is_array()) return authorities;
  const auto& list = document[key];
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
    SigstoreTrustedRoot::Impl::CertificateAuthority authority;
    authority.uri = text_of(list[i], "uri");
    authority.valid = validity_of(list[i], at);
    const json& chain = list[i].is_object() ? list[i].value("certChain", json::object()) : json::object();
    if (!chain.contains("certificates") || !chain["certificates"].is_array() || chain["certificates"].empty())
      throw Error(at + " has no certChain.certificates");
    for (std::size_t c = 0; c < chain["certificates"].size(); ++c) {
      std::string cert_at = at + ".certChain.certificates[" + std::to_string(c) + "]";
      authority.chain.push_back(certificate_of_der(decoded(chain["certificates"][c], "rawBytes", cert_at), cert_at));
    }
    authorities.push_back(std::move(authority));
  }
  return authorities;
}

}  // namespace

std::shared_ptr<const SigstoreTrustedRoot> SigstoreTrustedRoot::load(const fs::path& file) {
  return parse(read_file_within_limits(file, "the sigstore trusted root"), file.string());
}

std::shared_ptr<const SigstoreTrustedRoot> SigstoreTrustedRoot::parse(std::string_view text, const std::string& where) {
  auto document = json::parse(text, nullptr, false);
  if (!document.is_object()) throw Error("the sigstore trusted root " + where + " is not a JSON object");
  std::shared_ptr<SigstoreTrustedRoot> root(new SigstoreTrustedRoot());
  root->where_ = where;
  root->text_ = std::string(text);
  root->digest_ = sha256_hex(text);
  root->impl_ = std::make_unique<Impl>();
  auto& impl = *root->impl_;
  std::string at = "the sigstore trusted root " + where;
  impl.authorities = authorities_of(document, "certificateAuthorities", at);
  impl.timestamp_authorities = authorities_of(document, "timestampAuthorities", at);
  impl.tlogs = logs_of(document, "tlogs", at);
  impl.ctlogs = logs_of(document, "ctlogs", at);
  if (impl.authorities.empty() || impl.tlogs.empty() || impl.ctlogs.empty())
    throw Error(at + " must list at least one of each: certificateAuthorities (Fulcio), tlogs (Rekor), ctlogs (CT logs)");
  return root;
}

void KeylessIdentity::check(const std::string& where) const {
  if (identity.empty() == identity_regexp.empty())
    throw UsageError(where + ": give exactly one of --certificate-identity and --certificate-identity-regexp");
  if (issuer.empty() == issuer_regexp.empty())
    throw UsageError(where + ": give exactly one of --certificate-oidc-issuer and --certificate-oidc-issuer-regexp");
  for (const auto* pattern : {&identity_regexp, &issuer_regexp}) {
    if (pattern->empty()) continue;
    try {
      std::regex compiled(*pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      throw UsageError(where + ": the regular expression \"" + *pattern + "\" does not compile: " + error.what());
    }
  }
}

bool KeylessIdentity::matches(std::string_view san, std::string_view oidc_issuer) const {
  auto one = [](const std::string& exact, const std::string& pattern, std::string_view value) {
    if (!exact.empty()) return value == exact;
    return std::regex_search(value.begin(), value.end(), std::regex(pattern, std::regex::ECMAScript));
  };
  return one(identity, identity_regexp, san) && one(issuer, issuer_regexp, oidc_issuer);
}

std::string KeylessIdentity::str() const {
  return (identity.empty() ? "identity matching /" + identity_regexp + "/" : "identity " + identity) + ", " +
         (issuer.empty() ? "issuer matching /" + issuer_regexp + "/" : "issuer " + issuer);
}

std::string dsse_pae(std::string_view payload_type, std::string_view payload) {
  return "DSSEv1 " + std::to_string(payload_type.size()) + " " + std::string(payload_type) + " " +
         std::to_string(payload.size()) + " " + std::string(payload);
}

std::string rfc3339_utc(std::time_t when) {
  std::tm parts{};
  gmtime_r(&when, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::optional<std::time_t> parse_rfc3339(std::string_view text) {
  std::tm parts{};
  int consumed = 0;
  std::string copy(text);
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &parts.tm_year, &parts.tm_mon, &parts.tm_mday, &parts.tm_hour,
                  &parts.tm_min, &parts.tm_sec, &consumed) != 6 || consumed != 19)
    return std::nullopt;
  std::string_view rest = text.substr(19);
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  return timegm(&parts);
}

namespace {

using Log = SigstoreTrustedRoot::Impl::Log;

const Log* log_by_id(const std::vector<Log>& logs, std::string_view log_id, std::time_t when) {
  for (const auto& log : logs)
    if (log.log_id == log_id && log.valid.covers(when)) return &log;
  return nullptr;
}

// Rekor's signed entry timestamp is over the canonical JSON of the entry's body (base64),
// integratedTime, logID (hex) and logIndex: keys sorted, no spaces, as nlohmann::json dumps it.
void check_signed_entry_timestamp(const RekorEntry& entry, const Log& log) {
  json promise = {{"body", base64_encode(entry.body)},
                  {"integratedTime", entry.integrated_time},
                  {"logID", to_hex(entry.log_id)},
                  {"logIndex", entry.log_index}};
  if (!signature_verifies(log.key.get(), promise.dump(), entry.signed_entry_timestamp))
    throw Error("the Rekor signed entry timestamp (log index " + std::to_string(entry.log_index) +
                ") does not verify with the Rekor key " + to_hex(entry.log_id) + " of the trusted root");
}

// RFC 6962 §2.1.1: the leaf's audit path to the root of a tree of `tree_size` leaves.
std::string merkle_root_of(const std::string& leaf, std::int64_t index, std::int64_t tree_size,
                           const std::vector<std::string>& path, const std::string& where) {
  if (index < 0 || index >= tree_size) throw Error(where + ": log index " + std::to_string(index) + " is outside the tree");
  auto node = [](const std::string& left, const std::string& right) { return sha256_raw(std::string(1, '\x01') + left + right); };
  std::string hash = sha256_raw(std::string(1, '\0') + leaf);
  std::uint64_t at = static_cast<std::uint64_t>(index), last = static_cast<std::uint64_t>(tree_size - 1);
  for (const auto& sibling : path) {
    if (last == 0) throw Error(where + ": the inclusion proof has more hashes than the tree has levels");
    if ((at & 1) || at == last) {
      hash = node(sibling, hash);
      if (!(at & 1))
        while (at != 0 && !(at & 1)) {
          at >>= 1;
          last >>= 1;
        }
    } else {
      hash = node(hash, sibling);
    }
    at >>= 1;
    last >>= 1;
  }
  if (last != 0) throw Error(where + ": the inclusion proof has fewer hashes than the tree has levels");
  return hash;
}

// A checkpoint is a signed note: "<origin>\n<tree size>\n<base64 root hash>\n[…]\n\n" then
// lines "— <name> <base64 of key hint (4 bytes of the log id) and signature>".
void check_inclusion_proof(const RekorEntry& entry, const Log& log) {
  const auto& proof = *entry.inclusion_proof;
  std::string where = "the Rekor inclusion proof (log index " + std::to_string(entry.log_index) + ")";
  const std::string& envelope = proof.checkpoint;
  auto split = envelope.find("\n\n");
  if (split == std::string::npos) throw Error(where + ": the checkpoint is not a signed note");
  std::string note = envelope.substr(0, split + 1);
  bool signed_by_log = false;
  const std::string dash = "\xE2\x80\x94 ";
  std::size_t at = split + 2;
  while (at < envelope.size()) {
    auto end = envelope.find('\n', at);
    std::string line = envelope.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? envelope.size() : end + 1;
    if (line.rfind(dash, 0) != 0) continue;
    auto space = line.find(' ', dash.size());
    if (space == std::string::npos) continue;
    auto raw = base64_decode(line.substr(space + 1));
    if (!raw || raw->size() < 5 || raw->substr(0, 4) != log.log_id.substr(0, 4)) continue;
    signed_by_log = signed_by_log || signature_verifies(log.key.get(), note, raw->substr(4));
  }
  if (!signed_by_log) throw Error(where + ": the checkpoint is not signed by the Rekor key " + to_hex(log.log_id));
  std::vector<std::string> lines;
  for (std::size_t from = 0; from < note.size();) {
    auto end = note.find('\n', from);
    lines.push_back(note.substr(from, end - from));
    from = end + 1;
  }
  auto root = lines.size() >= 3 ? base64_decode(lines[2]) : std::nullopt;
  if (!root || lines[1] != std::to_string(proof.tree_size) || *root != proof.root_hash)
    throw Error(where + ": the checkpoint names another tree than the proof");
  std::string computed = merkle_root_of(entry.body, proof.log_index, proof.tree_size, proof.hashes, where);
  if (computed != proof.root_hash)
    throw Error(mismatch_message(where + " does not lead to the checkpoint's root", to_hex(proof.root_hash), to_hex(computed)));
}

std::string pem_to_der(std::string_view pem, const std::string& where) {
  openssl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  openssl::Certificate certificate(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!certificate) throw Error(where + " is not a PEM certificate: " + openssl::last_error());
  return der_of(certificate.get());
}

// The log entry must be about this signature: its kind, the payload's digest, the signature,
// and the certificate where the entry names one.
void check_rekor_body(const KeylessEvidence& evidence) {
  auto body = json::parse(evidence.rekor.body, nullptr, false);
  std::string where = "the Rekor entry (log index " + std::to_string(evidence.rekor.log_index) + ")";
  const bool dsse = evidence.entry_kind == KeylessEvidence::Entry::dsse;
  const std::string kind = dsse ? "dsse" : "hashedrekord";
  if (text_of(body, "kind") != kind || text_of(body, "apiVersion") != "0.0.1")
    throw Error(mismatch_message(where + " is of another kind", kind + " 0.0.1",
                                 text_of(body, "kind") + " " + text_of(body, "apiVersion")));
  const json& spec = body.value("spec", json::object());
  json hash, signature_entry;
  std::string certificate_field;
  if (dsse) {
    hash = spec.value("payloadHash", json::object());
    if (!spec.contains("signatures") || !spec["signatures"].is_array() || spec["signatures"].size() != 1)
      throw Error(where + " must log exactly one DSSE signature");
    signature_entry = spec["signatures"][0];
    certificate_field = text_of(signature_entry, "verifier");
  } else {
    hash = spec.value("data", json::object()).value("hash", json::object());
    signature_entry = spec.value("signature", json::object());
    certificate_field = text_of(signature_entry.value("publicKey", json::object()), "content");
    signature_entry = json{{"signature", text_of(signature_entry, "content")}};
  }
  std::string payload_hash = sha256_hex(evidence.payload);
  if (text_of(hash, "algorithm") != "sha256" || text_of(hash, "value") != payload_hash)
    throw Error(mismatch_message(where + " logs another payload", "sha256 " + payload_hash,
                                 text_of(hash, "algorithm") + " " + text_of(hash, "value")));
  auto logged = base64_decode(text_of(signature_entry, "signature"));
  if (!logged || *logged != evidence.signature) throw Error(where + " logs another signature than the one given");
  if (!certificate_field.empty()) {
    auto pem = base64_decode(certificate_field);
    if (!pem || pem_to_der(*pem, where + "'s certificate") != evidence.certificate_der)
      throw Error(where + " logs another certificate than the one the signature carries");
  }
}

// The certificate's chain to one of the trusted root's CAs valid at `when`, checked at `when`.
// Returns the certificate that issued it.
// An authority's chain as OpenSSL verifies against it: its self-signed certificates trusted,
// the others untrusted intermediates, every check made at `when`.
struct AuthorityStore {
  openssl::CertificateStore store;
  openssl::CertificateStack untrusted;
};

AuthorityStore store_of(const SigstoreTrustedRoot::Impl::CertificateAuthority& authority, std::time_t when) {
  AuthorityStore out{openssl::CertificateStore(X509_STORE_new()), openssl::CertificateStack(sk_X509_new_null())};
  if (!out.store || !out.untrusted) throw Error("cannot make a certificate store: " + openssl::last_error());
  for (const auto& certificate : authority.chain) {
    bool self_signed = X509_check_issued(certificate.get(), certificate.get()) == X509_V_OK;
    if (self_signed ? X509_STORE_add_cert(out.store.get(), certificate.get()) != 1
                    : !sk_X509_push(out.untrusted.get(), X509_dup(certificate.get())))
      throw Error("cannot add a certificate authority's certificate: " + openssl::last_error());
  }
  X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(out.store.get()), when);
  return out;
}

openssl::Certificate verify_chain(X509* leaf, const std::vector<std::string>& carried, const SigstoreTrustedRoot::Impl& root,
                                  std::time_t when) {
  std::string last_error = "no certificate authority of the trusted root was valid at " + rfc3339_utc(when);
  for (const auto& authority : root.authorities) {
    if (!authority.valid.covers(when)) continue;
    auto [store, untrusted] = store_of(authority, when);
    for (const auto& der : carried)
      if (!sk_X509_push(untrusted.get(), certificate_of_der(der, "a certificate of the signature's chain").release()))
        throw Error("cannot add a certificate of the signature's chain: " + openssl::last_error());
    openssl::CertificateStoreContext ctx(X509_STORE_CTX_new());
    if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted.get()) != 1)
      throw Error("cannot start a certificate verification: " + openssl::last_error());
    X509_STORE_CTX_set_time(ctx.get(), 0, when);
    if (X509_verify_cert(ctx.get()) == 1) {
      STACK_OF(X509)* chain = X509_STORE_CTX_get0_chain(ctx.get());
      if (sk_X509_num(chain) < 2) throw Error("the certificate is itself a certificate authority's");
      X509* issuer = sk_X509_value(chain, 1);
      X509_up_ref(issuer);
      return openssl::Certificate(issuer);
    }
    last_error = "it does not chain to the certificate authority " + authority.uri + " at " + rfc3339_utc(when) + ": " +
                 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
    (void)openssl::last_error();
  }
  throw Error("the signing certificate is not one Fulcio issued: " + last_error);
}

// RFC 3161: a timestamp authority of the trusted root signed, at its genTime, a message
// imprint of `signature`; its certificate chain is checked at that time, as its `validFor`.
// Returns the genTime.
std::time_t verify_rfc3161_timestamp(std::string_view der, std::string_view signature, const SigstoreTrustedRoot::Impl& root,
                                     std::size_t index) {
  const std::string where = "the RFC 3161 timestamp #" + std::to_string(index + 1) + " of the signature";
  const auto* in = reinterpret_cast<const unsigned char*>(der.data());
  openssl::TimestampResponse response(d2i_TS_RESP(nullptr, &in, static_cast<long>(der.size())));
  TS_TST_INFO* info = response ? TS_RESP_get_tst_info(response.get()) : nullptr;
  std::tm parts{};
  if (!info || ASN1_TIME_to_tm(TS_TST_INFO_get_time(info), &parts) != 1) {
    (void)openssl::last_error();
    throw Error(where + " is not a granted DER TimeStampResp with a time");
  }
  const std::time_t when = timegm(&parts);
  std::string why = "no timestamp authority of the trusted root was valid at " + rfc3339_utc(when);
  for (const auto& authority : root.timestamp_authorities) {
    if (!authority.valid.covers(when)) continue;
    auto [store, untrusted] = store_of(authority, when);
    openssl::TimestampVerifyContext ctx(TS_VERIFY_CTX_new());
    BIO* data = BIO_new_mem_buf(signature.data(), static_cast<int>(signature.size()));
    if (!ctx || !data) {
      BIO_free(data);
      throw Error("cannot start a timestamp verification: " + openssl::last_error());
    }
    // The context owns what is set in it from here on.
    TS_VERIFY_CTX_set_flags(ctx.get(), TS_VFY_VERSION | TS_VFY_SIGNATURE | TS_VFY_DATA);
    TS_VERIFY_CTX_set_data(ctx.get(), data);
    TS_VERIFY_CTX_set_store(ctx.get(), store.release());
    TS_VERIFY_CTX_set_certs(ctx.get(), untrusted.release());
    if (TS_RESP_verify_response(ctx.get(), response.get()) == 1) return when;
    why = "it does not verify with the timestamp authority " + authority.uri + " at " + rfc3339_utc(when) + ": " +
          openssl::last_error();
  }
  throw Error(where + " is not one a timestamp authority of the trusted root made: " + why);
}

void put_be(std::string& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

// RFC 6962 §3.2: an SCT of a precertificate signs the certificate's TBS without the SCT list
// extension, with the issuer's key hash. At least one SCT must verify with a CT log key of the
// trusted root.
void verify_embedded_sct(X509* leaf, X509* issuer, const SigstoreTrustedRoot::Impl& root) {
  openssl::SctList scts(static_cast<STACK_OF(SCT)*>(X509_get_ext_d2i(leaf, NID_ct_precert_scts, nullptr, nullptr)));
  if (!scts || sk_SCT_num(scts.get()) == 0) {
    (void)openssl::last_error();
    throw Error("the signing certificate carries no SCT (no proof that it was logged in a CT log)");
  }
  openssl::Certificate precert(X509_dup(leaf));
  int position = precert ? X509_get_ext_by_NID(precert.get(), NID_ct_precert_scts, -1) : -1;
  if (position < 0) throw Error("cannot read the certificate's SCT list: " + openssl::last_error());
  X509_EXTENSION_free(X509_delete_ext(precert.get(), position));
  unsigned char* tbs = nullptr;
  int tbs_length = i2d_re_X509_tbs(precert.get(), &tbs);
  if (tbs_length <= 0) throw Error("cannot encode the precertificate: " + openssl::last_error());
  std::string tbs_der(reinterpret_cast<char*>(tbs), static_cast<std::size_t>(tbs_length));
  OPENSSL_free(tbs);
  const std::string issuer_key_hash = sha256_raw(public_key_der_of(issuer));
  std::string why = "no CT log of the trusted root logged it";
  for (int i = 0; i < sk_SCT_num(scts.get()); ++i) {
    SCT* sct = sk_SCT_value(scts.get(), i);
    unsigned char* id = nullptr;
    std::size_t id_length = SCT_get0_log_id(sct, &id);
    std::string log_id(reinterpret_cast<char*>(id), id_length);
    const std::time_t logged_at = static_cast<std::time_t>(SCT_get_timestamp(sct) / 1000);
    const Log* log = log_by_id(root.ctlogs, log_id, logged_at);
    if (!log) continue;
    std::string signed_data;
    put_be(signed_data, 0, 1);  // version v1
    put_be(signed_data, 0, 1);  // signature type: certificate_timestamp
    put_be(signed_data, SCT_get_timestamp(sct), 8);
    put_be(signed_data, 1, 2);  // entry type: precert_entry
    signed_data += issuer_key_hash;
    put_be(signed_data, tbs_der.size(), 3);
    signed_data += tbs_der;
    unsigned char* extensions = nullptr;
    std::size_t extensions_length = SCT_get0_extensions(sct, &extensions);
    put_be(signed_data, extensions_length, 2);
    signed_data.append(reinterpret_cast<char*>(extensions), extensions_length);
    unsigned char* signature = nullptr;
    std::size_t signature_length = SCT_get0_signature(sct, &signature);
    if (SCT_get_version(sct) == SCT_VERSION_V1 &&
        signature_verifies(log->key.get(), signed_data, {reinterpret_cast<char*>(signature), signature_length}))
      return;
    why = "the SCT of the CT log " + to_hex(log_id) + " does not verify with its key";
  }
  throw Error("the signing certificate's SCT does not verify: " + why);
}

std::string extension_text(X509* certificate, const char* oid, bool der_utf8) {
  openssl::Asn1Object object(OBJ_txt2obj(oid, 1));
  int position = object ? X509_get_ext_by_OBJ(certificate, object.get(), -1) : -1;
  if (position < 0) return "";
  ASN1_OCTET_STRING* data = X509_EXTENSION_get_data(X509_get_ext(certificate, position));
  std::string raw(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)), static_cast<std::size_t>(ASN1_STRING_length(data)));
  if (!der_utf8) return raw;
  const auto* in = reinterpret_cast<const unsigned char*>(raw.data());
  openssl::Asn1String text(d2i_ASN1_UTF8STRING(nullptr, &in, static_cast<long>(raw.size())));
  if (!text) {
    (void)openssl::last_error();
    return "";
  }
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(text.get())), static_cast<std::size_t>(ASN1_STRING_length(text.get()))};
}

// Fulcio puts the identity in the SAN: an email, or a URI (a CI workflow).
std::string subject_alternative_name(X509* certificate) {
  openssl::GeneralNames names(static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_EMAIL && name->type != GEN_URI) continue;
    const ASN1_IA5STRING* value = name->type == GEN_EMAIL ? name->d.rfc822Name : name->d.uniformResourceIdentifier;
    return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)), static_cast<std::size_t>(ASN1_STRING_length(value))};
  }
  (void)openssl::last_error();
  return "";
}

}  // namespace

KeylessVerified verify_keyless(const KeylessEvidence& evidence, const SigstoreTrustedRoot& trusted_root,
                               const std::vector<KeylessIdentity>& identities) {
  const auto& root = trusted_root.impl();
  const auto& entry = evidence.rekor;
  // Fulcio's certificates live ten minutes: without a signed time of the signature an expired
  // certificate would prove nothing. The times are the SET's and each TSA timestamp's.
  std::vector<std::time_t> signed_at;
  for (std::size_t i = 0; i < evidence.rfc3161_timestamps.size(); ++i)
    signed_at.push_back(verify_rfc3161_timestamp(evidence.rfc3161_timestamps[i], evidence.signature, root, i));
  const bool has_set = !entry.signed_entry_timestamp.empty();
  if (!has_set && signed_at.empty())
    throw Error("the signature carries no Rekor signed entry timestamp and no RFC 3161 timestamp, so no signing time is proven");
  if (!has_set && !entry.inclusion_proof)
    throw Error("the Rekor entry carries neither a signed entry timestamp nor an inclusion proof, so nothing proves it was logged");
  // Without a SET, the entry's integratedTime is the log's unsigned word: the log key is the one
  // valid at the TSA's time.
  const std::time_t log_time = has_set ? static_cast<std::time_t>(entry.integrated_time) : signed_at.front();
  const Log* tlog = log_by_id(root.tlogs, entry.log_id, log_time);
  if (!tlog)
    throw Error("the Rekor entry is in the log " + to_hex(entry.log_id) + ", which the trusted root " + trusted_root.where() +
                " does not list (valid at " + rfc3339_utc(log_time) + ")");
  if (has_set) {
    check_signed_entry_timestamp(entry, *tlog);
    signed_at.insert(signed_at.begin(), log_time);
  }
  if (entry.inclusion_proof) check_inclusion_proof(entry, *tlog);
  check_rekor_body(evidence);

  auto leaf = certificate_of_der(evidence.certificate_der, "the signing certificate");
  openssl::Certificate issuer;
  for (std::time_t when : signed_at) issuer = verify_chain(leaf.get(), evidence.chain_der, root, when);
  if (!(X509_get_extended_key_usage(leaf.get()) & XKU_CODE_SIGN))
    throw Error("the signing certificate is not for code signing (no codeSigning extended key usage)");
  verify_embedded_sct(leaf.get(), issuer.get(), root);

  EVP_PKEY* key = X509_get0_pubkey(leaf.get());
  if (!key || !signature_verifies(key, evidence.signed_bytes, evidence.signature))
    throw Error("the signature does not verify with the signing certificate's key");

  KeylessVerified verified;
  verified.identity = subject_alternative_name(leaf.get());
  verified.issuer = extension_text(leaf.get(), kIssuerOidV2, true);
  if (verified.issuer.empty()) verified.issuer = extension_text(leaf.get(), kIssuerOidV1, false);
  verified.signed_at = rfc3339_utc(signed_at.front());
  verified.certificate_fingerprint = "sha256:" + sha256_hex(evidence.certificate_der);
  for (const auto& identity : identities)
    if (identity.matches(verified.identity, verified.issuer)) return verified;
  std::string wanted;
  for (const auto& identity : identities) wanted += (wanted.empty() ? "" : "; or ") + identity.str();
  throw Error(mismatch_message("the keyless signature is by another identity", wanted,
                               "identity " + (verified.identity.empty() ? "(none)" : verified.identity) + ", issuer " +
                                   (verified.issuer.empty() ? "(none)" : verified.issuer)));
}

}  // namespace podplane::cache
