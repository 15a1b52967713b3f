#include "cache/cosign_policy.hpp"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/image_tops.hpp"
#include "cache/kinds.hpp"
#include "cache/row_rules.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;
using nlohmann::json;

CosignPolicy::CosignPolicy(CosignTrust trust) : default_(std::move(trust)) {}

namespace {

std::vector<CosignKey> keys_of(const json& files, const fs::path& dir, const std::string& where) {
  std::vector<CosignKey> keys;
  if (!files.is_array()) throw Error(where + ": \"keys\" must be a list of key files");
  for (const auto& file : files) {
    if (!file.is_string() || file.get<std::string>().empty()) throw Error(where + ": a key is not a file name");
    fs::path path = file.get<std::string>();
    try {
      keys.push_back(CosignKey::load(path.is_absolute() ? path : dir / path));
    } catch (const Error& error) {
      throw Error(where + ": " + error.what());
    }
  }
  return keys;
}

std::vector<KeylessIdentity> identities_of(const json& list, const std::string& where) {
  std::vector<KeylessIdentity> identities;
  if (!list.is_array()) throw Error(where + ": \"keyless\" must be a list of {\"identity\", \"issuer\"} objects");
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = where + ".keyless[" + std::to_string(i) + "]";
    if (!list[i].is_object()) throw Error(at + ": expected {\"identity\" or \"identity_regexp\", \"issuer\" or \"issuer_regexp\"}");
    KeylessIdentity identity;
    for (const auto& [key, value] : list[i].items()) {
      std::string* field = key == "identity"          ? &identity.identity
                           : key == "identity_regexp" ? &identity.identity_regexp
                           : key == "issuer"          ? &identity.issuer
                           : key == "issuer_regexp"   ? &identity.issuer_regexp
                                                      : nullptr;
      if (!field || !value.is_string() || value.get<std::string>().empty())
        throw Error(at + ": \"" + key + "\" is not one of identity, identity_regexp, issuer, issuer_regexp with a text value");
      *field = value.get<std::string>();
    }
    try {
      identity.check(at);
    } catch (const Error& error) {
      throw Error(error.what());  // a mistake in the file, not on the command line
    }
    identities.push_back(std::move(identity));
  }
  return identities;
}

// "unsigned", or {"keys": [FILE, …], "keyless": [{…}], "trusted_root": FILE} with at least one
// key or identity, files relative to `dir`.
CosignTrust trust_of(const json& rule, const fs::path& dir, const std::string& where) {
  if (rule.is_string() && rule.get<std::string>() == "unsigned") return {};
  const std::string expected = "expected \"unsigned\" or {\"keys\": [\"cosign.pub\", …]} and/or {\"keyless\": [{\"identity\": …, "
                               "\"issuer\": …}], \"trusted_root\": \"trusted_root.json\"}";
  if (!rule.is_object()) throw Error(where + ": " + expected);
  CosignTrust trust;
  for (const auto& [key, value] : rule.items()) {
    if (key == "keys") {
      trust.keys = keys_of(value, dir, where);
    } else if (key == "keyless") {
      trust.identities = identities_of(value, where);
    } else if (key == "trusted_root" && value.is_string() && !value.get<std::string>().empty()) {
      fs::path path = value.get<std::string>();
      try {
        trust.trusted_root = SigstoreTrustedRoot::load(path.is_absolute() ? path : dir / path);
      } catch (const Error& error) {
        throw Error(where + ": " + error.what());
      }
    } else {
      throw Error(where + ": unknown or malformed \"" + key + "\"; " + expected);
    }
  }
  if (trust.empty()) throw Error(where + ": " + expected + ", with at least one key or identity");
  if (trust.keyless() != static_cast<bool>(trust.trusted_root))
    throw Error(where + ": \"keyless\" and \"trusted_root\" go together (the identities are checked against that root)");
  return trust;
}

}  // namespace

CosignPolicy CosignPolicy::load(const fs::path& file) {
  const std::string text = read_file_within_limits(file, "the cosign policy");
  auto document = json::parse(text, nullptr, false);
  if (!document.is_object()) throw Error("the cosign policy " + file.string() + " is not a JSON object");
  fs::path dir = file.parent_path();
  CosignPolicy policy;
  for (const auto& [key, value] : document.items()) {
    std::string where = file.string() + ": " + key;
    if (key == "default") {
      policy.default_ = trust_of(value, dir, where);
    } else if (key == "images") {
      if (!value.is_object()) throw Error(where + ": expected an object of registry[/repository] entries");
      for (const auto& [name, rule] : value.items()) {
        std::string entry = where + "[\"" + name + "\"]";
        // A registry alone, or registry/repository in the store's address grammar.
        bool registry_only = name.find('/') == std::string::npos;
        if (auto problem = image_address_problem(registry_only ? name + "/x" : name))
          throw Error(entry + ": not a registry or registry/repository (" + *problem + ")");
        policy.entries_[name] = trust_of(rule, dir, entry);
      }
    } else {
      throw Error(where + ": unknown key (a policy has \"default\" and \"images\")");
    }
  }
  return policy;
}

const CosignTrust& CosignPolicy::trust_for(std::string_view address) const {
  // The longest entry that is the address or one of its '/'-separated prefixes.
  for (std::string_view prefix = address;;) {
    if (auto it = entries_.find(prefix); it != entries_.end()) return it->second;
    auto slash = prefix.rfind('/');
    if (slash == std::string_view::npos) return default_;
    prefix = prefix.substr(0, slash);
  }
}

bool CosignPolicy::requires_signatures() const {
  if (!default_.empty()) return true;
  for (const auto& [name, trust] : entries_)
    if (!trust.empty()) return true;
  return false;
}

void verify_stored_image_signatures(const Store& store, const std::vector<Artifact>& rows, const CosignPolicy& policy) {
  // A signature signs an image's top (cache/image_tops.hpp); the manifests below an index are
  // covered by the index's digests.
  const ImageTops tops(rows, &store);
  std::set<std::pair<std::string, std::string>> checked;  // (address, digest)
  for (const auto& row : rows) {
    if (kind_info(row).recheck != Recheck::cosign_under_policy) continue;  // the table's images
    if (!tops.is_top(row)) continue;
    const auto& trust = policy.trust_for(row.address);
    if (trust.empty() || !checked.insert({row.address, row.filename}).second) continue;
    try {
      (void)verify_stored_cosign_signature(store, row.address, row.filename, trust);
    } catch (const Error& error) {
      throw Error("image " + row.address + ":" + row.version + " (" + row.filename + "): " + error.what());
    }
  }
}

CosignPolicy cosign_policy_of(const std::vector<fs::path>& keys, const std::optional<fs::path>& policy_file,
                              const KeylessFlags& keyless) {
  if (policy_file && (!keys.empty() || keyless.given()))
    throw UsageError("--cosign-policy cannot be combined with --cosign-key or the keyless flags: name them in the policy's "
                     "\"default\"");
  if (policy_file) return CosignPolicy::load(*policy_file);
  CosignTrust trust;
  trust.keys = load_cosign_keys(keys);
  if (keyless.given()) {
    keyless.identity.check("keyless signatures");
    if (!keyless.trusted_root)
      throw UsageError("keyless signatures: --trusted-root FILE is needed (the sigstore trusted_root.json the identities are "
                       "checked against)");
    trust.identities.push_back(keyless.identity);
    trust.trusted_root = SigstoreTrustedRoot::load(*keyless.trusted_root);
  }
  return CosignPolicy(std::move(trust));
}

}  // namespace podplane::cache
