#include "cache/cosign_policy.hpp"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/kinds.hpp"
#include "cache/row_rules.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;
using nlohmann::json;

CosignPolicy::CosignPolicy(std::vector<CosignKey> keys) : default_(std::move(keys)) {}

namespace {

// "unsigned", or {"keys": [FILE, …]} with at least one key, files relative to `dir`.
std::vector<CosignKey> keys_of(const json& rule, const fs::path& dir, const std::string& where) {
  if (rule.is_string() && rule.get<std::string>() == "unsigned") return {};
  if (!rule.is_object() || rule.size() != 1 || !rule.contains("keys") || !rule["keys"].is_array() || rule["keys"].empty())
    throw Error(where + ": expected \"unsigned\" or {\"keys\": [\"cosign.pub\", …]} with at least one key");
  std::vector<CosignKey> keys;
  for (const auto& file : rule["keys"]) {
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
      policy.default_ = keys_of(value, dir, where);
    } else if (key == "images") {
      if (!value.is_object()) throw Error(where + ": expected an object of registry[/repository] entries");
      for (const auto& [name, rule] : value.items()) {
        std::string entry = where + "[\"" + name + "\"]";
        // A registry alone, or registry/repository in the store's address grammar.
        bool registry_only = name.find('/') == std::string::npos;
        if (auto problem = image_address_problem(registry_only ? name + "/x" : name))
          throw Error(entry + ": not a registry or registry/repository (" + *problem + ")");
        policy.entries_[name] = keys_of(rule, dir, entry);
      }
    } else {
      throw Error(where + ": unknown key (a policy has \"default\" and \"images\")");
    }
  }
  return policy;
}

const std::vector<CosignKey>& CosignPolicy::keys_for(std::string_view address) const {
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
  for (const auto& [name, keys] : entries_)
    if (!keys.empty()) return true;
  return false;
}

void verify_stored_image_signatures(const Store& store, const std::vector<Artifact>& rows, const CosignPolicy& policy) {
  // The top of an image is what a tag names: its index, or its manifest when it has none. A
  // signature signs the top; the manifests below an index are covered by the index's digests.
  std::set<std::pair<std::string, std::string>> indexed;  // (address, version) with an index row
  for (const auto& row : rows)
    if (row.kind == ArtifactKind::image_index) indexed.insert({row.address, row.version});
  std::set<std::pair<std::string, std::string>> checked;  // (address, digest)
  for (const auto& row : rows) {
    if (kind_info(row).recheck != Recheck::cosign_under_policy) continue;  // the table's images
    if (row.kind == ArtifactKind::image_manifest &&
        (indexed.count({row.address, row.version}) ||
         !store.artifacts({.kind = ArtifactKind::image_index, .address = row.address, .version = row.version}).empty()))
      continue;
    const auto& keys = policy.keys_for(row.address);
    if (keys.empty() || !checked.insert({row.address, row.filename}).second) continue;
    try {
      (void)verify_stored_cosign_signature(store, row.address, row.filename, keys);
    } catch (const Error& error) {
      throw Error("image " + row.address + ":" + row.version + " (" + row.filename + "): " + error.what());
    }
  }
}

CosignPolicy cosign_policy_of(const std::vector<fs::path>& keys, const std::optional<fs::path>& policy_file) {
  if (policy_file && !keys.empty())
    throw UsageError("--cosign-key and --cosign-policy cannot be combined: name the keys in the policy's \"default\"");
  return policy_file ? CosignPolicy::load(*policy_file) : CosignPolicy(load_cosign_keys(keys));
}

}  // namespace podplane::cache
