#include "base/pkcs11.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <p11-kit/pkcs11.h>

#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/url.hpp"

namespace podplane::pkcs11 {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kScheme = "pkcs11:";

std::string percent_decoded(std::string_view text, const std::string& attribute) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const std::string_view digits = text.substr(i + 1, 2);
    if (digits.size() != 2 || !is_hex(digits))
      throw Error("the pkcs11: URI's " + attribute + " has a % that is not followed by two hex digits");
    out += from_hex(digits);
    i += 2;
  }
  return out;
}

std::string rv_name(CK_RV rv) {
  switch (rv) {
    case CKR_PIN_INCORRECT: return "CKR_PIN_INCORRECT";
    case CKR_PIN_LOCKED: return "CKR_PIN_LOCKED";
    case CKR_PIN_LEN_RANGE: return "CKR_PIN_LEN_RANGE";
    case CKR_TOKEN_NOT_PRESENT: return "CKR_TOKEN_NOT_PRESENT";
    case CKR_MECHANISM_INVALID: return "CKR_MECHANISM_INVALID";
    case CKR_KEY_TYPE_INCONSISTENT: return "CKR_KEY_TYPE_INCONSISTENT";
    case CKR_USER_NOT_LOGGED_IN: return "CKR_USER_NOT_LOGGED_IN";
    case CKR_ATTRIBUTE_VALUE_INVALID: return "CKR_ATTRIBUTE_VALUE_INVALID";
    case CKR_TEMPLATE_INCONSISTENT: return "CKR_TEMPLATE_INCONSISTENT";
    default: break;
  }
  char text[32];
  std::snprintf(text, sizeof text, "CKR 0x%lx", static_cast<unsigned long>(rv));
  return text;
}

// A token's label and serial are fixed-size fields padded with spaces.
std::string padded_field(const unsigned char* field, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(field), size);
  text.erase(text.find_last_not_of(' ') + 1);
  return text;
}

// CKA_EC_POINT of an Ed25519 key: the 32 bytes, DER-wrapped in an OCTET STRING by most tokens
// (SoftHSM2, as PKCS#11 3.0 asks), bare by some.
std::string raw_ec_point(const std::string& point) {
  if (point.size() == 34 && point[0] == 0x04 && point[1] == 0x20) return point.substr(2);
  if (point.size() == 32) return point;
  throw Error("the token's Ed25519 public key is not 32 bytes (CKA_EC_POINT of " + std::to_string(point.size()) + " bytes)");
}

// RFC 8410's curve as PKCS#11 names it in CKA_EC_PARAMS: the PrintableString "edwards25519".
const std::string kEdwards25519Params = std::string("\x13\x0c", 2) + "edwards25519";

}  // namespace

bool is_uri(std::string_view text) { return text.substr(0, kScheme.size()) == kScheme; }

Uri Uri::parse(std::string_view text) {
  if (!is_uri(text)) throw Error("not a pkcs11: URI (RFC 7512): " + std::string(text.substr(0, 40)));
  Uri uri;
  std::string_view rest = text.substr(kScheme.size());
  std::string_view path = rest.substr(0, rest.find('?'));
  std::string_view query = rest.find('?') == std::string_view::npos ? std::string_view() : rest.substr(rest.find('?') + 1);
  auto each = [](std::string_view list, char separator, auto take) {
    while (!list.empty()) {
      auto end = list.find(separator);
      std::string_view item = list.substr(0, end);
      if (!item.empty()) {
        auto equals = item.find('=');
        if (equals == std::string_view::npos) throw Error("the pkcs11: URI attribute \"" + std::string(item) + "\" has no value");
        take(std::string(item.substr(0, equals)), item.substr(equals + 1));
      }
      list = end == std::string_view::npos ? std::string_view() : list.substr(end + 1);
    }
  };
  each(path, ';', [&](const std::string& name, std::string_view value) {
    std::string* field = name == "token" ? &uri.token : name == "object" ? &uri.object : name == "id" ? &uri.id
                       : name == "serial" ? &uri.serial : nullptr;
    if (name == "type") {
      if (value != "private") throw Error("the pkcs11: URI's type is \"" + std::string(value) + "\"; a signing key is type=private");
      return;
    }
    if (!field)
      throw Error("the pkcs11: URI attribute \"" + name + "\" is not one podplane reads (token, object, id, serial, type)");
    *field = percent_decoded(value, name);
  });
  each(query, '&', [&](const std::string& name, std::string_view value) {
    std::string* field = name == "pin-value" ? &uri.pin_value : name == "pin-source" ? &uri.pin_source
                       : name == "module-path" ? &uri.module_path : nullptr;
    if (!field)
      throw Error("the pkcs11: URI query attribute \"" + name + "\" is not one podplane reads (pin-value, pin-source, module-path)");
    *field = percent_decoded(value, name);
  });
  if (uri.object.empty() && uri.id.empty()) throw Error("the pkcs11: URI " + uri.str() + " names no key (object= or id=)");
  if (!uri.pin_value.empty() && !uri.pin_source.empty()) throw Error("the pkcs11: URI gives both pin-value and pin-source");
  return uri;
}

std::string Uri::str() const {
  std::string path;
  auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) path += (path.empty() ? "" : ";") + std::string(name) + "=" + percent_encoded(value, "", HexCase::lower);
  };
  add("token", token);
  add("serial", serial);
  add("object", object);
  add("id", id);
  std::string text = "pkcs11:" + path;
  if (!pin_value.empty()) text += "?pin-value=…";
  if (!pin_source.empty()) text += "?pin-source=" + pin_source;
  return text;
}

fs::path module_of(const Uri& uri, const std::optional<fs::path>& flag) {
  if (!uri.module_path.empty()) return uri.module_path;
  if (flag) return *flag;
  if (const char* module = std::getenv("PODPLANE_PKCS11_MODULE"); module && *module) return module;
  throw UsageError("the PKCS#11 module to load is not named: give --pkcs11-module FILE (SoftHSM2's is "
                   "/usr/lib/softhsm/libsofthsm2.so), set PODPLANE_PKCS11_MODULE, or add module-path= to the URI");
}

struct Ed25519Key::Session {
  void* library = nullptr;
  CK_FUNCTION_LIST* functions = nullptr;
  bool initialized = false;
  CK_SESSION_HANDLE session = CK_INVALID_HANDLE;
  bool logged_in = false;
  CK_OBJECT_HANDLE private_key = CK_INVALID_HANDLE;
  std::string public_key;
  std::string where;  // the URI without its PIN, and the module

  ~Session() {
    if (logged_in) (void)functions->C_Logout(session);
    if (session != CK_INVALID_HANDLE) (void)functions->C_CloseSession(session);
    if (initialized) (void)functions->C_Finalize(nullptr);
    if (library) dlclose(library);
  }

  void check(CK_RV rv, const std::string& what) const {
    if (rv != CKR_OK) throw Error(what + " failed for " + where + ": " + rv_name(rv));
  }

  void load(const fs::path& module) {
    library = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) throw Error("cannot load the PKCS#11 module " + module.string() + ": " + dlerror());
    auto get_list = reinterpret_cast<CK_C_GetFunctionList>(dlsym(library, "C_GetFunctionList"));
    if (!get_list) throw Error(module.string() + " is not a PKCS#11 module (no C_GetFunctionList)");
    check(get_list(&functions), "C_GetFunctionList");
    // The module may be called from this thread only, but it must not assume no other user of
    // the process: let it lock with the OS's primitives.
    CK_C_INITIALIZE_ARGS args{};
    args.flags = CKF_OS_LOCKING_OK;
    CK_RV rv = functions->C_Initialize(&args);
    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) check(rv, "C_Initialize");
    initialized = rv == CKR_OK;
  }

  CK_SLOT_ID slot_of(const Uri& uri) const {
    CK_ULONG count = 0;
    check(functions->C_GetSlotList(CK_TRUE, nullptr, &count), "C_GetSlotList");
    std::vector<CK_SLOT_ID> slots(count);
    check(functions->C_GetSlotList(CK_TRUE, slots.data(), &count), "C_GetSlotList");
    std::string found;
    for (CK_ULONG i = 0; i < count; ++i) {
      CK_TOKEN_INFO info{};
      if (functions->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
      std::string label = padded_field(info.label, sizeof info.label);
      std::string serial = padded_field(info.serialNumber, sizeof info.serialNumber);
      if ((uri.token.empty() || uri.token == label) && (uri.serial.empty() || uri.serial == serial)) return slots[i];
      found += (found.empty() ? "" : ", ") + ("\"" + label + "\"");
    }
    throw Error("no PKCS#11 token matches " + where + " (tokens found: " + (found.empty() ? "none" : found) + ")");
  }

  std::string pin_of(const Uri& uri) const {
    if (!uri.pin_source.empty()) {
      std::string pin = read_file_within_limits(uri.pin_source, "the PKCS#11 PIN file");
      while (!pin.empty() && (pin.back() == '\n' || pin.back() == '\r')) pin.pop_back();
      return pin;
    }
    return uri.pin_value;
  }

  void open(const Uri& uri, CK_FLAGS flags) {
    CK_SLOT_ID slot = slot_of(uri);
    check(functions->C_OpenSession(slot, CKF_SERIAL_SESSION | flags, nullptr, nullptr, &session), "C_OpenSession");
    std::string pin = pin_of(uri);
    if (pin.empty()) throw Error("no PIN for " + where + ": add ?pin-value=… or ?pin-source=FILE to the URI");
    CK_RV rv = functions->C_Login(session, CKU_USER, reinterpret_cast<CK_UTF8CHAR*>(pin.data()), pin.size());
    std::fill(pin.begin(), pin.end(), '\0');
    if (rv == CKR_PIN_INCORRECT) throw Error("the PIN for " + where + " is wrong: the token answered CKR_PIN_INCORRECT");
    if (rv != CKR_USER_ALREADY_LOGGED_IN) check(rv, "C_Login");
    logged_in = rv == CKR_OK;
  }

  std::vector<CK_OBJECT_HANDLE> find(const Uri& uri, CK_OBJECT_CLASS object_class) const {
    CK_KEY_TYPE key_type = CKK_EC_EDWARDS;
    std::vector<CK_ATTRIBUTE> wanted{{CKA_CLASS, &object_class, sizeof object_class}, {CKA_KEY_TYPE, &key_type, sizeof key_type}};
    if (!uri.object.empty()) wanted.push_back({CKA_LABEL, const_cast<char*>(uri.object.data()), uri.object.size()});
    if (!uri.id.empty()) wanted.push_back({CKA_ID, const_cast<char*>(uri.id.data()), uri.id.size()});
    check(functions->C_FindObjectsInit(session, wanted.data(), wanted.size()), "C_FindObjectsInit");
    std::vector<CK_OBJECT_HANDLE> objects(8);
    CK_ULONG count = 0;
    CK_RV rv = functions->C_FindObjects(session, objects.data(), objects.size(), &count);
    (void)functions->C_FindObjectsFinal(session);
    check(rv, "C_FindObjects");
    objects.resize(count);
    return objects;
  }

  void read_public_key(const Uri& uri) {
    auto objects = find(uri, CKO_PUBLIC_KEY);
    if (objects.size() != 1)
      throw Error(where + " has " + std::to_string(objects.size()) +
                  " Ed25519 public key objects of that name; the public key is read from exactly one");
    CK_ATTRIBUTE point{CKA_EC_POINT, nullptr, 0};
    check(functions->C_GetAttributeValue(session, objects[0], &point, 1), "reading CKA_EC_POINT");
    std::string bytes(point.ulValueLen, '\0');
    point.pValue = bytes.data();
    check(functions->C_GetAttributeValue(session, objects[0], &point, 1), "reading CKA_EC_POINT");
    public_key = raw_ec_point(bytes);
  }
};

Ed25519Key::Ed25519Key(std::unique_ptr<Session> session) : session_(std::move(session)) {}
Ed25519Key::~Ed25519Key() = default;
Ed25519Key::Ed25519Key(Ed25519Key&&) noexcept = default;
Ed25519Key& Ed25519Key::operator=(Ed25519Key&&) noexcept = default;

Ed25519Key Ed25519Key::open(const Uri& uri, const fs::path& module) {
  auto session = std::make_unique<Session>();
  session->where = uri.str() + " (module " + module.string() + ")";
  session->load(module);
  session->open(uri, 0);
  auto keys = session->find(uri, CKO_PRIVATE_KEY);
  if (keys.size() != 1)
    throw Error(mismatch_message("the token of " + session->where + " does not hold one Ed25519 private key of that name",
                                 "1", std::to_string(keys.size())));
  session->private_key = keys[0];
  session->read_public_key(uri);
  return Ed25519Key(std::move(session));
}

Ed25519Key Ed25519Key::generate(const Uri& uri, const fs::path& module) {
  auto session = std::make_unique<Session>();
  session->where = uri.str() + " (module " + module.string() + ")";
  session->load(module);
  session->open(uri, CKF_RW_SESSION);
  if (!session->find(uri, CKO_PRIVATE_KEY).empty() || !session->find(uri, CKO_PUBLIC_KEY).empty())
    throw Error("the token of " + session->where + " holds a key of that name already; nothing was made");
  CK_MECHANISM mechanism{CKM_EC_EDWARDS_KEY_PAIR_GEN, nullptr, 0};
  CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
  std::string params = kEdwards25519Params;
  std::vector<CK_ATTRIBUTE> public_template{{CKA_TOKEN, &yes, sizeof yes},
                                            {CKA_VERIFY, &yes, sizeof yes},
                                            {CKA_EC_PARAMS, params.data(), params.size()}};
  std::vector<CK_ATTRIBUTE> private_template{{CKA_TOKEN, &yes, sizeof yes},     {CKA_PRIVATE, &yes, sizeof yes},
                                             {CKA_SENSITIVE, &yes, sizeof yes}, {CKA_EXTRACTABLE, &no, sizeof no},
                                             {CKA_SIGN, &yes, sizeof yes}};
  std::string label = uri.object, id = uri.id;
  for (auto* list : {&public_template, &private_template}) {
    if (!label.empty()) list->push_back({CKA_LABEL, label.data(), label.size()});
    if (!id.empty()) list->push_back({CKA_ID, id.data(), id.size()});
  }
  CK_OBJECT_HANDLE public_key = CK_INVALID_HANDLE, private_key = CK_INVALID_HANDLE;
  session->check(session->functions->C_GenerateKeyPair(session->session, &mechanism, public_template.data(),
                                                       public_template.size(), private_template.data(),
                                                       private_template.size(), &public_key, &private_key),
                 "C_GenerateKeyPair (Ed25519)");
  session->private_key = private_key;
  session->read_public_key(uri);
  return Ed25519Key(std::move(session));
}

const std::string& Ed25519Key::public_key_raw() const { return session_->public_key; }

std::string Ed25519Key::sign(std::string_view message) const {
  auto& s = *session_;
  CK_MECHANISM mechanism{CKM_EDDSA, nullptr, 0};
  s.check(s.functions->C_SignInit(s.session, &mechanism, s.private_key), "C_SignInit (CKM_EDDSA)");
  std::string data(message);
  std::string signature(64, '\0');
  CK_ULONG length = signature.size();
  s.check(s.functions->C_Sign(s.session, reinterpret_cast<CK_BYTE*>(data.data()), data.size(),
                              reinterpret_cast<CK_BYTE*>(signature.data()), &length),
          "C_Sign (CKM_EDDSA)");
  if (length != 64) throw Error(mismatch_message("the token's Ed25519 signature has another length", "64", std::to_string(length)));
  return signature;
}

}  // namespace podplane::pkcs11
