#include "cache/openpgp.hpp"

#include <rnp/rnp.h>
#include <rnp/rnp_err.h>

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace podplane::cache {
namespace {

// One RAII type per librnp handle.
struct FfiDeleter { void operator()(rnp_ffi_st* ffi) const { rnp_ffi_destroy(ffi); } };
struct InputDeleter { void operator()(rnp_input_st* input) const { rnp_input_destroy(input); } };
struct VerifyDeleter { void operator()(rnp_op_verify_st* op) const { rnp_op_verify_destroy(op); } };
struct KeyDeleter { void operator()(rnp_key_handle_st* key) const { rnp_key_handle_destroy(key); } };
struct BufferDeleter { void operator()(char* buffer) const { rnp_buffer_destroy(buffer); } };
struct IteratorDeleter {
  void operator()(rnp_identifier_iterator_st* it) const { rnp_identifier_iterator_destroy(it); }
};

using Ffi = std::unique_ptr<rnp_ffi_st, FfiDeleter>;
using Input = std::unique_ptr<rnp_input_st, InputDeleter>;
using VerifyOp = std::unique_ptr<rnp_op_verify_st, VerifyDeleter>;
using KeyHandle = std::unique_ptr<rnp_key_handle_st, KeyDeleter>;
using RnpString = std::unique_ptr<char, BufferDeleter>;
using IdentifierIterator = std::unique_ptr<rnp_identifier_iterator_st, IteratorDeleter>;

std::string result_text(rnp_result_t result) { return rnp_result_to_string(result); }

Input memory_input(std::string_view bytes) {
  rnp_input_t raw = nullptr;
  // copy=false: the views outlive every Input made from them within one call.
  auto result = rnp_input_from_memory(&raw, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), false);
  if (result != RNP_SUCCESS) throw Error("librnp: cannot read input: " + result_text(result));
  return Input(raw);
}

// librnp's own log lines ("[signed_validate_signature() …:809] signer's key not found") are
// written with fprintf(stderr) and are always on in Debian's librnp, built without NDEBUG:
// neither RNP_LOG_CONSOLE=0 nor rnp_ffi_set_log_fd (which covers only the FFI's own lines)
// turns them off, and rnp_enable_debug is a no-op. Our errors say what failed, so for the
// length of a call into librnp fd 2 is /dev/null, while this thread holds the lock of stderr's
// FILE: another thread's std::cerr or fprintf(stderr) (the access log of mirror serve, progress)
// waits for the call instead of being lost. Nothing of ours writes to fd 2 but through that FILE.
class QuietLibrnpLog {
 public:
  QuietLibrnpLog() {
    ::flockfile(stderr);
    std::fflush(stderr);
    UniqueFd null_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    saved_ = UniqueFd(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
    // Without either descriptor (fd 2 closed, no /dev/null) librnp writes where it would have.
    if (saved_ && null_fd && ::dup2(null_fd.get(), STDERR_FILENO) < 0) saved_.reset();
  }
  ~QuietLibrnpLog() {
    std::fflush(stderr);
    if (saved_) (void)::dup2(saved_.get(), STDERR_FILENO);
    ::funlockfile(stderr);
  }
  QuietLibrnpLog(const QuietLibrnpLog&) = delete;
  QuietLibrnpLog& operator=(const QuietLibrnpLog&) = delete;

 private:
  UniqueFd saved_;  // the real fd 2, put back on destruction
};

Ffi new_ffi() {
  rnp_ffi_t raw = nullptr;
  auto result = rnp_ffi_create(&raw, RNP_KEYSTORE_GPG, RNP_KEYSTORE_GPG);
  if (result != RNP_SUCCESS) throw Error("librnp: cannot create context: " + result_text(result));
  // The FFI's own log lines go nowhere too (QuietLibrnpLog says why). The context takes
  // ownership of the descriptor (fdopen, fclose on destroy).
  int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd >= 0 && rnp_ffi_set_log_fd(raw, null_fd) != RNP_SUCCESS) close(null_fd);
  return Ffi(raw);
}

// A keyring holding exactly one armored block (which may carry subkeys).
Ffi keyring_of(std::string_view armored_key, std::string_view what) {
  auto ffi = new_ffi();
  auto input = memory_input(armored_key);
  auto result = rnp_load_keys(ffi.get(), RNP_KEYSTORE_GPG, input.get(), RNP_LOAD_SAVE_PUBLIC_KEYS);
  if (result != RNP_SUCCESS) {
    throw Error("cannot read a signing key listed for " + std::string(what) + ": " + result_text(result));
  }
  return ffi;
}

std::string primary_fingerprint(rnp_key_handle_t key) {
  bool primary = true;
  char* raw = nullptr;
  if (rnp_key_is_primary(key, &primary) == RNP_SUCCESS && !primary) {
    if (rnp_key_get_primary_fprint(key, &raw) == RNP_SUCCESS && raw != nullptr) return RnpString(raw).get();
  }
  if (rnp_key_get_fprint(key, &raw) != RNP_SUCCESS || raw == nullptr) return "";
  return RnpString(raw).get();
}

enum class Outcome { valid, unknown_issuer, invalid };

// Verifies with one keyring; reports the fingerprint of the verifying key when valid.
Outcome verify_with(rnp_ffi_t ffi, std::string_view data, std::string_view signature, std::string& fingerprint) {
  auto data_input = memory_input(data);
  auto signature_input = memory_input(signature);
  rnp_op_verify_t raw_op = nullptr;
  if (rnp_op_verify_detached_create(&raw_op, ffi, data_input.get(), signature_input.get()) != RNP_SUCCESS) {
    return Outcome::invalid;
  }
  VerifyOp op(raw_op);
  // Execute fails when no signature verified; the per-signature status says why.
  (void)rnp_op_verify_execute(op.get());
  size_t count = 0;
  if (rnp_op_verify_get_signature_count(op.get(), &count) != RNP_SUCCESS || count == 0) return Outcome::invalid;
  Outcome outcome = Outcome::unknown_issuer;
  for (size_t i = 0; i < count; ++i) {
    rnp_op_verify_signature_t sig = nullptr;
    if (rnp_op_verify_get_signature_at(op.get(), i, &sig) != RNP_SUCCESS) continue;
    auto status = rnp_op_verify_signature_get_status(sig);
    if (status == RNP_SUCCESS || status == RNP_ERROR_SIGNATURE_EXPIRED) {
      // An expired signature is accepted as the engines accept expired keys (with a warning).
      rnp_key_handle_t raw_key = nullptr;
      if (rnp_op_verify_signature_get_key(sig, &raw_key) == RNP_SUCCESS && raw_key != nullptr) {
        KeyHandle key(raw_key);
        fingerprint = primary_fingerprint(key.get());
      }
      return Outcome::valid;
    }
    if (status != RNP_ERROR_KEY_NOT_FOUND) outcome = Outcome::invalid;
  }
  return outcome;
}

// The primary fingerprints of the keys loaded into `ffi`.
std::vector<std::string> key_fingerprints_in(const Ffi& ffi) {
  rnp_identifier_iterator_t raw_it = nullptr;
  std::vector<std::string> out;
  if (rnp_identifier_iterator_create(ffi.get(), &raw_it, "fingerprint") != RNP_SUCCESS) return out;
  IdentifierIterator it(raw_it);
  const char* id = nullptr;
  while (rnp_identifier_iterator_next(it.get(), &id) == RNP_SUCCESS && id != nullptr) {
    rnp_key_handle_t raw_key = nullptr;
    if (rnp_locate_key(ffi.get(), "fingerprint", id, &raw_key) != RNP_SUCCESS || raw_key == nullptr) continue;
    KeyHandle key(raw_key);
    bool primary = false;
    if (rnp_key_is_primary(key.get(), &primary) == RNP_SUCCESS && primary) out.emplace_back(id);
  }
  return out;
}

// Who a signature says made it, as its packets state it: the issuer fingerprint and key id
// subpackets (upper-case hex), read without verifying anything.
struct Issuer {
  std::string fingerprint;  // empty when the signature names only a key id
  std::string key_id;
};

std::string upper(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string text_field(const nlohmann::json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? upper(it->get<std::string>()) : std::string();
}

// The issuers of the signature packets in `signature`; none when it names none or does not
// parse (then verification says why).
std::vector<Issuer> issuers_of(std::string_view signature) {
  auto input = memory_input(signature);
  char* raw = nullptr;
  if (rnp_dump_packets_to_json(input.get(), 0, &raw) != RNP_SUCCESS || raw == nullptr) return {};
  RnpString dumped(raw);
  auto packets = nlohmann::json::parse(dumped.get(), nullptr, false);
  std::vector<Issuer> issuers;
  if (!packets.is_array()) return issuers;
  for (const auto& packet : packets) {
    if (!packet.is_object() || !packet.contains("header") || !packet["header"].is_object() ||
        packet["header"].value("tag", 0) != 2) {
      continue;  // not a signature packet
    }
    Issuer issuer;
    issuer.key_id = text_field(packet, "keyid");  // a v3 signature carries it in the packet
    if (packet.contains("subpackets") && packet["subpackets"].is_array()) {
      for (const auto& sub : packet["subpackets"]) {
        if (!sub.is_object()) continue;
        if (auto fingerprint = text_field(sub, "fingerprint"); !fingerprint.empty()) issuer.fingerprint = fingerprint;
        if (auto key_id = text_field(sub, "issuer keyid"); !key_id.empty()) issuer.key_id = key_id;
      }
    }
    // A v4 key id is the low 64 bits of the fingerprint.
    if (issuer.key_id.empty() && issuer.fingerprint.size() >= 16)
      issuer.key_id = issuer.fingerprint.substr(issuer.fingerprint.size() - 16);
    if (!issuer.key_id.empty()) issuers.push_back(std::move(issuer));
  }
  return issuers;
}

// Whether the keyring holds (as a primary key or a subkey) a key one of `issuers` names.
bool holds_any(rnp_ffi_t ffi, const std::vector<Issuer>& issuers) {
  for (const auto& issuer : issuers) {
    rnp_key_handle_t raw_key = nullptr;
    bool by_fingerprint = !issuer.fingerprint.empty();
    const char* type = by_fingerprint ? "fingerprint" : "keyid";
    const std::string& id = by_fingerprint ? issuer.fingerprint : issuer.key_id;
    if (rnp_locate_key(ffi, type, id.c_str(), &raw_key) == RNP_SUCCESS && raw_key != nullptr) {
      KeyHandle key(raw_key);
      return true;
    }
  }
  return false;
}

std::string describe(const std::vector<Issuer>& issuers) {
  if (issuers.empty()) return "a signature that names no issuer key";
  std::string text;
  for (const auto& issuer : issuers) {
    text += text.empty() ? "a signature by " : ", and by ";
    text += issuer.fingerprint.empty() ? "key id " + issuer.key_id : issuer.fingerprint + " (key id " + issuer.key_id + ")";
  }
  return text;
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

}  // namespace

SignatureCheck verify_detached_signature(std::string_view data, std::string_view signature, const SigningKeys& keys,
                                         std::string_view what) {
  if (signature.empty()) throw Error("signature of " + std::string(what) + " is empty");
  if (keys.armored.empty()) throw Error("no signing keys to check the signature of " + std::string(what));
  QuietLibrnpLog quiet;
  const auto issuers = issuers_of(signature);
  std::vector<std::string> accepted;  // primary fingerprints of `keys`, for the message
  bool any_invalid = false;
  for (std::size_t i = 0; i < keys.armored.size(); ++i) {
    // One keyring per key, as the engines try each listed key on its own.
    auto ffi = keyring_of(keys.armored[i], what);
    auto fingerprints = key_fingerprints_in(ffi);
    accepted.insert(accepted.end(), fingerprints.begin(), fingerprints.end());
    // A keyring without the key the signature names cannot verify it: it is not asked.
    if (!issuers.empty() && !holds_any(ffi.get(), issuers)) continue;
    std::string fingerprint;
    switch (verify_with(ffi.get(), data, signature, fingerprint)) {
      case Outcome::valid: return SignatureCheck{fingerprint, std::to_string(i)};
      case Outcome::invalid: any_invalid = true; break;
      case Outcome::unknown_issuer: break;
    }
  }
  if (any_invalid) {
    throw Error("signature check failed for " + std::string(what) +
                ": signature invalid (the document or the signature was altered; " + describe(issuers) + ")");
  }
  throw Error(mismatch_message(
      "signature check failed for " + std::string(what) + ": authentication signature from unknown issuer",
      "a signature by " + keys.whose + ": " + joined(accepted), describe(issuers) + ", which is none of them"));
}

std::vector<std::string> key_fingerprints(std::string_view armored_key) {
  QuietLibrnpLog quiet;
  return key_fingerprints_in(keyring_of(armored_key, "key"));
}

std::vector<KeyIdentity> key_identities(std::string_view armored_key) {
  QuietLibrnpLog quiet;
  auto ffi = keyring_of(armored_key, "key");
  std::vector<KeyIdentity> out;
  for (const auto& fingerprint : key_fingerprints_in(ffi)) {
    rnp_key_handle_t raw_key = nullptr;
    if (rnp_locate_key(ffi.get(), "fingerprint", fingerprint.c_str(), &raw_key) != RNP_SUCCESS || raw_key == nullptr)
      continue;
    KeyHandle key(raw_key);
    KeyIdentity identity{fingerprint, {}};
    std::size_t count = 0;
    if (rnp_key_get_uid_count(key.get(), &count) == RNP_SUCCESS)
      for (std::size_t i = 0; i < count; ++i) {
        char* raw_uid = nullptr;
        if (rnp_key_get_uid_at(key.get(), i, &raw_uid) != RNP_SUCCESS || raw_uid == nullptr) continue;
        RnpString uid(raw_uid);
        identity.user_ids.emplace_back(uid.get());
      }
    out.push_back(std::move(identity));
  }
  return out;
}

const SignatureMemo::Outcome& SignatureMemo::check(const std::string& key, const std::function<std::string()>& verify) {
  if (auto known = known_.find(key); known != known_.end()) return known->second;
  Outcome outcome;
  try {
    outcome.fingerprint = verify();
  } catch (const Error& error) {
    outcome.error = error.what();
  }
  return known_.emplace(key, std::move(outcome)).first->second;
}

}  // namespace podplane::cache
