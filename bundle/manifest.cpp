#include "bundle/manifest.hpp"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "cache/row_rules.hpp"

namespace podplane::bundle {

using nlohmann::json;

namespace {

// Hostile text must not reach a path or a row unchecked, so every read goes through these.
const json& field(const json& object, const char* name) {
  if (!object.is_object()) throw Error(std::string("expected a JSON object around field '") + name + "'");
  auto it = object.find(name);
  if (it == object.end()) throw Error(std::string("missing field '") + name + "'");
  return *it;
}

std::string text(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_string()) throw Error(std::string("field '") + name + "' is not a string");
  return value.get<std::string>();
}

std::uint64_t number(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
    throw Error(std::string("field '") + name + "' is not a non-negative integer");
  return value.get<std::uint64_t>();
}

const json& array(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_array()) throw Error(std::string("field '") + name + "' is not an array");
  return value;
}

std::string digest_field(const json& object, const char* name, bool may_be_empty) {
  std::string value = text(object, name);
  if (value.empty() && may_be_empty) return value;
  if (!is_sha256_hex(value)) throw Error(std::string("field '") + name + "' is not a sha256 hex digest: '" + value + "'");
  return value;
}

json artifact_json(const TravellingArtifact& travelling) {
  const cache::Artifact& a = travelling.artifact;
  json provenance = json::array();
  for (const auto& p : travelling.provenance) {
    provenance.push_back({{"shasums_digest", p.shasums_digest},
                          {"signature_digest", p.signature_digest},
                          {"keys_digest", p.keys_digest},
                          {"key_fingerprint", p.key_fingerprint},
                          {"result", p.result},
                          {"checked_at", p.checked_at}});
  }
  json row = {{"kind", std::string(cache::to_string(a.kind))},
          {"address", a.address},
          {"version", a.version},
          {"platform", a.platform},
          {"filename", a.filename},
          {"digest", a.digest},
          {"size", a.size},
          {"h1", a.h1},
          {"zh", a.zh},
          {"upstream_digest", a.upstream_digest},
          {"upstream_url", a.upstream_url},
          {"trust", std::string(cache::to_string(a.trust))},
          {"added_at", a.added_at},
          {"provenance", provenance}};
  // Only where known: a bundle of rows without them reads as before, in any podplane.
  if (a.protocols) row["protocols"] = *a.protocols;
  return row;
}

TravellingArtifact parse_artifact(const json& j) {
  TravellingArtifact travelling;
  cache::Artifact& a = travelling.artifact;
  a.kind = cache::parse_artifact_kind(text(j, "kind"));
  a.address = text(j, "address");
  check_safe_relative_path("artifact address", a.address);
  a.version = text(j, "version");
  if (!a.version.empty()) check_safe_name("artifact version", a.version);
  a.platform = text(j, "platform");
  if (!a.platform.empty()) check_safe_name("artifact platform", a.platform);
  a.filename = text(j, "filename");
  check_safe_name("artifact filename", a.filename);
  a.digest = digest_field(j, "digest", false);
  a.size = static_cast<std::int64_t>(number(j, "size"));
  a.h1 = text(j, "h1");
  a.zh = text(j, "zh");
  a.upstream_digest = text(j, "upstream_digest");
  a.upstream_url = text(j, "upstream_url");
  a.trust = cache::parse_trust(text(j, "trust"));
  a.added_at = text(j, "added_at");
  // Optional (bundles made before protocols were recorded have none: not known).
  if (j.contains("protocols")) a.protocols = cache::parse_protocols_column(field(j, "protocols").dump());
  for (const auto& p : array(j, "provenance")) {
    cache::Provenance row;
    row.shasums_digest = digest_field(p, "shasums_digest", true);
    row.signature_digest = digest_field(p, "signature_digest", true);
    row.keys_digest = digest_field(p, "keys_digest", true);
    row.key_fingerprint = text(p, "key_fingerprint");
    row.result = text(p, "result");
    row.checked_at = text(p, "checked_at");
    travelling.provenance.push_back(std::move(row));
  }
  return travelling;
}

json module_json(const cache::ModuleTree& tree) {
  json files = json::array();
  for (const auto& f : tree.files)
    files.push_back({{"path", f.path}, {"mode", f.mode}, {"digest", f.digest}, {"size", f.size}});
  return {{"address", tree.address}, {"version", tree.version},       {"h1", tree.h1},
          {"upstream_url", tree.upstream_url}, {"added_at", tree.added_at}, {"files", files}};
}

cache::ModuleTree parse_module(const json& j) {
  cache::ModuleTree tree;
  tree.address = text(j, "address");
  check_safe_relative_path("module address", tree.address);
  tree.version = text(j, "version");
  check_safe_name("module version", tree.version);
  tree.h1 = text(j, "h1");
  tree.upstream_url = text(j, "upstream_url");
  tree.added_at = text(j, "added_at");
  std::set<std::string> seen;
  for (const auto& f : array(j, "files")) {
    cache::ModuleFile file;
    file.path = text(f, "path");
    check_safe_relative_path("module file path", file.path);
    if (!seen.insert(file.path).second) throw Error("module " + tree.address + " lists file '" + file.path + "' twice");
    std::uint64_t mode = number(f, "mode");
    if ((mode & ~std::uint64_t{0777}) != 0)
      throw Error("module file '" + file.path + "' has mode " + std::to_string(mode) + " beyond permission bits");
    file.mode = static_cast<std::uint32_t>(mode);
    file.digest = digest_field(f, "digest", false);
    file.size = static_cast<std::int64_t>(number(f, "size"));
    tree.files.push_back(std::move(file));
  }
  return tree;
}

json selection_json(const cache::TfSelection& s) {
  json providers = json::array();
  for (const auto& p : s.providers)
    providers.push_back({{"address", p.address}, {"version", p.version}, {"constraints", p.constraints}});
  return {{"providers", providers},           {"platforms", s.platforms},
          {"module_address", s.module_address}, {"module_version", s.module_version},
          {"engine", s.engine}};
}

cache::TfSelection parse_selection(const json& j) {
  cache::TfSelection s;
  for (const auto& p : array(j, "providers")) {
    cache::TfSelection::Provider provider{text(p, "address"), text(p, "version"), text(p, "constraints")};
    check_safe_relative_path("selected provider address", provider.address);
    check_safe_name("selected provider version", provider.version);
    s.providers.push_back(std::move(provider));
  }
  for (const auto& platform : array(j, "platforms")) {
    if (!platform.is_string()) throw Error("tf selection platforms must be strings");
    check_safe_name("selected platform", platform.get<std::string>());
    s.platforms.push_back(platform.get<std::string>());
  }
  s.module_address = text(j, "module_address");
  if (!s.module_address.empty()) check_safe_relative_path("selected module address", s.module_address);
  s.module_version = text(j, "module_version");
  if (!s.module_version.empty()) check_safe_name("selected module version", s.module_version);
  s.engine = text(j, "engine");
  if (s.engine != "tofu" && s.engine != "terraform") throw Error("tf selection engine '" + s.engine + "' is not tofu or terraform");
  return s;
}

// SAX events → JSON values, except the elements of the manifest's row arrays ("objects",
// "artifacts", "module_trees"): each is handed to `on_row` as soon as it is complete and
// dropped, so the document never holds them all.
class StreamingManifestReader : public nlohmann::json_sax<json> {
 public:
  using OnRow = std::function<void(const std::string& array, json element)>;
  explicit StreamingManifestReader(OnRow on_row) : on_row_(std::move(on_row)) {}

  json take_document() { return std::move(root_); }

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool value) override { return put(json(value)); }
  bool number_integer(number_integer_t value) override { return put(json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return put(json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return put(json(value)); }
  bool string(string_t& value) override { return put(json(std::move(value))); }
  bool binary(binary_t& value) override { return put(json::binary(std::move(value))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool key(string_t& name) override {
    // A key given twice at the top would let a second row array add to the first.
    if (stack_.size() == 1 && stack_.back()->is_object() && !top_keys_.insert(name).second) {
      throw Error("bundle manifest has the key '" + name + "' twice");
    }
    key_ = std::move(name);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    throw Error(std::string("bundle manifest is not valid JSON: ") + error.what());
  }

 private:
  static constexpr std::size_t kMaxDepth = 32;  // a manifest nests 5 levels deep

  // Where a value completed at the current position goes.
  bool put(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return true;
    }
    json& parent = *stack_.back();
    if (&parent == rows_) on_row_(rows_name_, std::move(value));
    else if (parent.is_object()) parent[key_] = std::move(value);
    else parent.push_back(std::move(value));
    return true;
  }

  bool open(json container) {
    if (stack_.size() >= kMaxDepth) throw Error("bundle manifest nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (stack_.empty()) {
      root_ = std::move(container);
      stack_.push_back(&root_);
      return true;
    }
    json& parent = *stack_.back();
    json* slot = nullptr;
    if (parent.is_object()) {
      slot = &(parent[key_] = std::move(container));
      if (stack_.size() == 1 && slot->is_array() && (key_ == "objects" || key_ == "artifacts" || key_ == "module_trees")) {
        rows_ = slot;
        rows_name_ = key_;
      }
    } else {
      parent.push_back(std::move(container));
      slot = &parent.back();
    }
    stack_.push_back(slot);
    return true;
  }

  bool close() {
    json* done = stack_.back();
    stack_.pop_back();
    if (done == rows_) rows_ = nullptr;
    if (!stack_.empty() && stack_.back() == rows_) {
      json element = std::move(rows_->back());
      rows_->erase(rows_->end() - 1);
      on_row_(rows_name_, std::move(element));
    }
    return true;
  }

  OnRow on_row_;
  json root_;
  std::vector<json*> stack_;  // the containers being built, innermost last
  std::string key_;
  json* rows_ = nullptr;      // the row array being streamed, if any
  std::string rows_name_;
  std::set<std::string> top_keys_;
};

json parse_json(std::string_view text_bytes, const char* what) {
  try {
    return json::parse(text_bytes.begin(), text_bytes.end());
  } catch (const json::exception& e) {
    throw Error(std::string(what) + " is not valid JSON: " + e.what());
  }
}

}  // namespace

// The store's rules (cache/row_rules.hpp) worded for a bundle.
void check_safe_name(std::string_view what, std::string_view name) {
  if (auto problem = cache::segment_problem(name)) {
    throw Error("unsafe " + std::string(what) + " '" + std::string(name) + "' in bundle: " + *problem);
  }
}

void check_safe_relative_path(std::string_view what, std::string_view path) {
  if (auto problem = cache::relative_path_problem(path)) {
    throw Error("unsafe " + std::string(what) + " '" + std::string(path) + "' in bundle: " + *problem);
  }
}

// ---------------------------------------------------------------------------------------
std::string BundleManifest::serialize() const {
  json objects_json = json::array();
  for (const auto& o : objects) objects_json.push_back({{"digest", o.digest}, {"size", o.size}});
  json artifacts_json = json::array();
  for (const auto& a : artifacts) artifacts_json.push_back(artifact_json(a));
  json modules_json = json::array();
  for (const auto& m : module_trees) modules_json.push_back(module_json(m));
  json since_json = nullptr;
  if (since)
    since_json = {{"inventory_digest", since->inventory_digest}, {"store_id", since->store_id}, {"generation", since->generation}};
  json j = {{"format", "podplane-bundle"},
            {"format_version", format_version},
            {"tool_version", tool_version},
            {"created_at", created_at},
            {"bundle_id", bundle_id},
            {"since", since_json},
            {"platforms", platforms},
            {"volume", {{"index", volume_index}, {"count", volume_count}}},
            {"total", {{"objects", total_objects}, {"bytes", total_bytes}}},
            {"objects", objects_json},
            {"artifacts", artifacts_json},
            {"module_trees", modules_json},
            {"tf_selection", tf_selection ? selection_json(*tf_selection) : json(nullptr)}};
  if (expires_at) j["expires_at"] = *expires_at;  // only when set: older bundles keep their bytes
  return j.dump() + "\n";
}

BundleManifest BundleManifest::parse(std::string_view bytes) {
  BundleManifest m;
  std::set<std::string> seen;
  try {
    StreamingManifestReader reader([&](const std::string& array, json element) {
      if (array == "objects") {
        ManifestObject object{digest_field(element, "digest", false), number(element, "size")};
        if (!seen.insert(object.digest).second) throw Error("object " + object.digest + " is listed twice");
        m.objects.push_back(std::move(object));
      } else if (array == "artifacts") {
        m.artifacts.push_back(parse_artifact(element));
      } else {
        m.module_trees.push_back(parse_module(element));
      }
    });
    json::sax_parse(bytes.begin(), bytes.end(), &reader);
    json j = reader.take_document();
    if (text(j, "format") != "podplane-bundle") throw Error("not a podplane bundle manifest");
    m.format_version = static_cast<int>(number(j, "format_version"));
    if (m.format_version != kFormatVersion)
      throw Error(mismatch_message("unsupported bundle format version", std::to_string(kFormatVersion),
                                   std::to_string(m.format_version)));
    m.tool_version = text(j, "tool_version");
    m.created_at = text(j, "created_at");
    m.bundle_id = digest_field(j, "bundle_id", false);
    if (j.contains("expires_at")) m.expires_at = text(j, "expires_at");
    const json& since = field(j, "since");
    if (!since.is_null())
      m.since = SinceInventory{digest_field(since, "inventory_digest", false), text(since, "store_id"), number(since, "generation")};
    for (const auto& platform : array(j, "platforms")) {
      if (!platform.is_string()) throw Error("platforms must be strings");
      check_safe_name("platform", platform.get<std::string>());
      m.platforms.push_back(platform.get<std::string>());
    }
    const json& volume = field(j, "volume");
    std::uint64_t index = number(volume, "index"), count = number(volume, "count");
    if (count < 1 || count > 999 || index < 1 || index > count)
      throw Error("volume " + std::to_string(index) + " of " + std::to_string(count) + " is out of range");
    m.volume_index = static_cast<int>(index);
    m.volume_count = static_cast<int>(count);
    const json& total = field(j, "total");
    m.total_objects = number(total, "objects");
    m.total_bytes = number(total, "bytes");
    // The row arrays were streamed; they must still have been there, as arrays.
    (void)array(j, "objects");
    (void)array(j, "artifacts");
    (void)array(j, "module_trees");
    const json& selection = field(j, "tf_selection");
    if (!selection.is_null()) m.tf_selection = parse_selection(selection);
    return m;
  } catch (const json::exception& e) {
    throw Error(std::string("malformed bundle manifest: ") + e.what());
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("bundle manifest is not valid JSON", 0) == 0) throw;
    throw Error("invalid bundle manifest: " + what);
  }
}

// ---------------------------------------------------------------------------------------
std::string SignatureBlock::serialize() const {
  json j = {{"algorithm", algorithm}};
  if (algorithm != "none") {
    j["public_key"] = public_key_hex;
    j["key_id"] = key_id;
    j["signature"] = signature_hex;
  }
  return j.dump() + "\n";
}

SignatureBlock SignatureBlock::parse(std::string_view bytes) {
  json j = parse_json(bytes, "bundle signature");
  try {
    SignatureBlock block;
    block.algorithm = text(j, "algorithm");
    if (block.algorithm == "none") return block;
    if (block.algorithm != "ed25519") throw Error("unsupported bundle signature algorithm '" + block.algorithm + "'");
    block.public_key_hex = text(j, "public_key");
    block.key_id = text(j, "key_id");
    block.signature_hex = text(j, "signature");
    return block;
  } catch (const json::exception& e) {
    throw Error(std::string("malformed bundle signature: ") + e.what());
  }
}

// ---------------------------------------------------------------------------------------
std::string Inventory::serialize() const {
  json j = {{"format", "podplane-inventory"},
            {"format_version", kFormatVersion},
            {"tool_version", tool_version},
            {"store_id", store_id},
            {"generation", generation},
            {"objects", objects},
            {"rows", rows}};
  return j.dump() + "\n";
}

Inventory Inventory::parse(std::string_view bytes) {
  json j = parse_json(bytes, "inventory");
  try {
    if (text(j, "format") != "podplane-inventory") throw Error("not a podplane inventory (made by 'podplane bundle inventory')");
    if (number(j, "format_version") != static_cast<std::uint64_t>(kFormatVersion))
      throw Error("unsupported inventory format version " + std::to_string(number(j, "format_version")));
    Inventory inventory;
    inventory.tool_version = text(j, "tool_version");
    inventory.store_id = text(j, "store_id");
    inventory.generation = number(j, "generation");
    for (const auto& d : array(j, "objects")) {
      if (!d.is_string() || !is_sha256_hex(d.get<std::string>())) throw Error("inventory object is not a sha256 hex digest");
      inventory.objects.insert(d.get<std::string>());
    }
    for (const auto& d : array(j, "rows")) {
      if (!d.is_string() || !is_sha256_hex(d.get<std::string>())) throw Error("inventory row is not a sha256 hex digest");
      inventory.rows.insert(d.get<std::string>());
    }
    return inventory;
  } catch (const json::exception& e) {
    throw Error(std::string("malformed inventory: ") + e.what());
  }
}

// ---------------------------------------------------------------------------------------
std::string row_id(const cache::Artifact& a, const std::vector<cache::Provenance>& provenance) {
  json p = json::array();
  for (const auto& row : provenance)
    p.push_back({row.shasums_digest, row.signature_digest, row.keys_digest, row.key_fingerprint, row.result});
  std::sort(p.begin(), p.end());
  json key = {"artifact", std::string(cache::to_string(a.kind)), a.address, a.version, a.platform, a.filename, a.digest, p};
  // Known protocols are content: a store that lacks them lacks the row, so a delta carries it
  // (and its import records them). Unknown ones leave the id as it was before they existed, so
  // inventories written then still match.
  if (a.protocols) key.push_back({"protocols", *a.protocols});
  return sha256_hex(key.dump());
}

std::string row_id(const cache::ModuleTree& tree) {
  json key = {"module", tree.address, tree.version, tree.h1};
  return sha256_hex(key.dump());
}

std::vector<std::string> objects_of(const TravellingArtifact& travelling) {
  std::vector<std::string> digests{travelling.artifact.digest};
  for (const auto& p : travelling.provenance)
    for (const auto* d : {&p.shasums_digest, &p.signature_digest, &p.keys_digest})
      if (!d->empty()) digests.push_back(*d);
  return digests;
}

std::vector<std::string> objects_of(const cache::ModuleTree& tree) {
  std::vector<std::string> digests;
  for (const auto& f : tree.files) digests.push_back(f.digest);
  return digests;
}

}  // namespace podplane::bundle
