#include "cache/openpgp.hpp"

#include <rnp/rnp.h>
#include <rnp/rnp_err.h>

#include <fcntl.h>
#include <unistd.h>

#include <memory>

#include "base/error.hpp"

namespace podplane::mirror {
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

Ffi new_ffi() {
  rnp_ffi_t raw = nullptr;
  auto result = rnp_ffi_create(&raw, RNP_KEYSTORE_GPG, RNP_KEYSTORE_GPG);
  if (result != RNP_SUCCESS) throw Error("librnp: cannot create context: " + result_text(result));
  // librnp logs parse failures to stderr; our errors say what failed, so its log goes
  // nowhere. The context takes ownership of the descriptor (fdopen, fclose on destroy).
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

}  // namespace

SignatureCheck verify_detached_signature(std::string_view data, std::string_view signature,
                                         const std::vector<std::string>& armored_keys, std::string_view what) {
  if (signature.empty()) throw Error("signature of " + std::string(what) + " is empty");
  bool any_invalid = false;
  for (std::size_t i = 0; i < armored_keys.size(); ++i) {
    // One keyring per key, as the engines try each listed key on its own.
    auto ffi = keyring_of(armored_keys[i], what);
    std::string fingerprint;
    switch (verify_with(ffi.get(), data, signature, fingerprint)) {
      case Outcome::valid: return SignatureCheck{fingerprint, std::to_string(i)};
      case Outcome::invalid: any_invalid = true; break;
      case Outcome::unknown_issuer: break;
    }
  }
  if (armored_keys.empty()) throw Error("no signing keys to check the signature of " + std::string(what));
  if (any_invalid) {
    throw Error("signature check failed for " + std::string(what) +
                ": signature invalid (the document or the signature was altered)");
  }
  throw Error("signature check failed for " + std::string(what) +
              ": authentication signature from unknown issuer (signed by none of the registry's " +
              std::to_string(armored_keys.size()) + " key(s))");
}

namespace {

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

}  // namespace

std::vector<std::string> key_fingerprints(std::string_view armored_key) {
  return key_fingerprints_in(keyring_of(armored_key, "key"));
}

std::vector<KeyIdentity> key_identities(std::string_view armored_key) {
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

}  // namespace podplane::mirror
