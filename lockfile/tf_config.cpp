#include "lockfile/tf_config.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "lockfile/hcl.hpp"

namespace podplane::lockfile {
namespace {

namespace fs = std::filesystem;

std::string at(const std::string& file, const hcl::SourcePos& pos) {
  return file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": ";
}

std::string literal_string(const hcl::Value& value, const std::string& what, const std::string& file) {
  const std::string* text = value.as_string();
  if (text == nullptr) throw Error(at(file, value.pos) + what + " must be a literal string");
  return *text;
}

bool is_local_source(std::string_view source) {
  return source.rfind("./", 0) == 0 || source.rfind("../", 0) == 0 || source.rfind(".\\", 0) == 0 ||
         source.rfind("..\\", 0) == 0;
}

void read_required_providers(const hcl::Block& block, const std::string& file, ModuleRequirements& out) {
  for (const auto& attribute : block.body.attributes) {
    ProviderRequirement requirement;
    requirement.local_name = attribute.name;
    requirement.declared_in = file;
    if (const std::string* legacy = attribute.value.as_string()) {
      requirement.constraints = *legacy;  // aws = ">= 6.0": a version constraint only
    } else if (const auto* members = std::get_if<hcl::Object>(&attribute.value.data)) {
      for (const auto& [key, value] : *members) {
        if (key == "source") requirement.source = literal_string(value, "\"source\" of provider " + attribute.name, file);
        if (key == "version") {
          requirement.constraints = literal_string(value, "\"version\" of provider " + attribute.name, file);
        }
        // configuration_aliases holds references; it does not change what is installed.
      }
    } else {
      throw Error(at(file, attribute.value.pos) + "required_providers entry \"" + attribute.name +
                  "\" must be an object such as { source = \"hashicorp/aws\", version = \">= 6.0\" }");
    }
    out.providers.push_back(std::move(requirement));
  }
}

// A read of one module and the local modules it calls.
struct Walk {
  fs::path within;              // canonical: no local module outside it is read
  std::set<fs::path> visited;   // canonical directories read so far
};

void read_directory(const fs::path& dir, ModuleRequirements& out, Walk& walk);

// The deepest directory that holds both `a` and `b` (both absolute).
fs::path common_ancestor(const fs::path& a, const fs::path& b) {
  fs::path common;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end() && ib != b.end() && *ia == *ib; ++ia, ++ib) common /= *ia;
  return common.empty() ? a.root_path() : common;
}

// A local call is followed into its directory; any other is a remote call for the caller.
// `where` ("file:line:col: ") prefixes the error of a local source that does not exist.
void add_module_call(const fs::path& dir, ModuleCall call, const std::string& where, ModuleRequirements& out,
                     Walk& walk) {
  if (is_local_source(call.source)) {
    std::error_code ec;
    fs::path child = dir / call.source;
    if (!fs::is_directory(child, ec)) {
      throw Error(where + "local module \"" + call.name + "\" not found: " + child.string());
    }
    // A path that climbs (or links) out of the repository would read any directory on the
    // machine as configuration, and print what its errors quote.
    const fs::path resolved = fs::canonical(child, ec);
    const fs::path inside = resolved.lexically_relative(walk.within);
    if (ec || inside.empty() || *inside.begin() == "..") {
      const fs::path target = ec ? child.lexically_normal() : resolved;
      const fs::path common = common_ancestor(walk.within, target);
      throw LocalModuleOutside(
          where + "local module \"" + call.name + "\" (source \"" + call.source + "\") leaves " + walk.within.string() +
              ": it is " + target.string() +
              "; local modules are read only inside the root's git repository, or the root itself when it is in none: "
              "pass --repo-root " + common.string() + " to read them up to that directory",
          common);
    }
    if (std::find(out.local_module_dirs.begin(), out.local_module_dirs.end(), resolved) == out.local_module_dirs.end())
      out.local_module_dirs.push_back(resolved);
    read_directory(child, out, walk);
  } else {
    out.remote_modules.push_back(std::move(call));
  }
}

// The JSON syntax (a .tf.json file): a block type's value is an object or an array of
// objects, each label one more level of object keys; "//" keys are comments. Only literal
// strings are read where a literal is needed: "${…}" is an interpolation, refused as in HCL.
using json = nlohmann::json;

std::vector<const json*> json_bodies(const json& value, const std::string& what, const std::string& file) {
  std::vector<const json*> bodies;
  if (value.is_object()) {
    bodies.push_back(&value);
  } else if (value.is_array()) {
    for (const auto& element : value) {
      if (!element.is_object()) throw Error(file + ": " + what + " must be an object or an array of objects");
      bodies.push_back(&element);
    }
  } else {
    throw Error(file + ": " + what + " must be an object or an array of objects, got " + value.type_name());
  }
  return bodies;
}

std::string json_literal(const json& value, const std::string& what, const std::string& file) {
  if (!value.is_string()) throw Error(file + ": " + what + " must be a literal string, got " + value.type_name());
  std::string text = value.get<std::string>();
  if (text.find("${") != std::string::npos || text.find("%{") != std::string::npos)
    throw Error(file + ": " + what + " must be a literal string, got the template \"" + text + "\"");
  return text;
}

void read_json_file(const fs::path& dir, const fs::path& path, ModuleRequirements& out, Walk& walk) {
  const std::string file = path.string();
  json document = parse_json_within_limits(read_file_within_limits(path, "configuration file"), file);
  if (!document.is_object()) throw Error(file + ": a .tf.json file must hold one JSON object");
  if (auto terraform = document.find("terraform"); terraform != document.end()) {
    for (const json* block : json_bodies(*terraform, "\"terraform\"", file)) {
      for (const auto& [key, value] : block->items()) {
        if (key == "required_version") out.required_versions.push_back(json_literal(value, "required_version", file));
        if (key != "required_providers") continue;
        for (const json* providers : json_bodies(value, "\"required_providers\"", file)) {
          for (const auto& [name, entry] : providers->items()) {
            if (name == "//") continue;
            ProviderRequirement requirement;
            requirement.local_name = name;
            requirement.declared_in = file;
            if (entry.is_string()) {
              requirement.constraints = json_literal(entry, "\"version\" of provider " + name, file);
            } else if (entry.is_object()) {
              if (entry.contains("source")) requirement.source = json_literal(entry["source"], "\"source\" of provider " + name, file);
              if (entry.contains("version"))
                requirement.constraints = json_literal(entry["version"], "\"version\" of provider " + name, file);
            } else {
              throw Error(file + ": required_providers entry \"" + name +
                          "\" must be an object such as {\"source\": \"hashicorp/aws\", \"version\": \">= 6.0\"}");
            }
            out.providers.push_back(std::move(requirement));
          }
        }
      }
    }
  }
  if (auto modules = document.find("module"); modules != document.end()) {
    for (const json* by_name : json_bodies(*modules, "\"module\"", file)) {
      for (const auto& [name, value] : by_name->items()) {
        if (name == "//") continue;
        for (const json* block : json_bodies(value, "module \"" + name + "\"", file)) {
          ModuleCall call;
          call.name = name;
          call.declared_in = file;
          if (!block->contains("source")) throw Error(file + ": module \"" + name + "\" has no source");
          call.source = json_literal((*block)["source"], "module source", file);
          if (block->contains("version")) call.version = json_literal((*block)["version"], "module version", file);
          add_module_call(dir, std::move(call), file + ": ", out, walk);
        }
      }
    }
  }
}

void read_directory(const fs::path& dir, ModuleRequirements& out, Walk& walk) {
  std::error_code ec;
  fs::path canonical = fs::canonical(dir, ec);
  if (ec) throw Error("cannot read module directory " + dir.string() + ": " + ec.message());
  if (!walk.visited.insert(canonical).second) return;

  std::vector<fs::path> files, json_files;  // the native syntax's and the JSON syntax's
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file()) continue;
    if (name.ends_with(".tf")) files.push_back(it->path());
    if (name.ends_with(".tf.json")) json_files.push_back(it->path());
  }
  if (ec) throw Error("cannot list module directory " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::sort(json_files.begin(), json_files.end());

  for (const auto& path : files) {
    const std::string file = path.string();
    hcl::Body body = hcl::parse(read_file_within_limits(path, "configuration file"), file);
    for (const hcl::Block* terraform : body.blocks_of_type("terraform")) {
      if (const hcl::Attribute* required = terraform->body.attribute("required_version")) {
        out.required_versions.push_back(literal_string(required->value, "required_version", file));
      }
      for (const hcl::Block* providers : terraform->body.blocks_of_type("required_providers")) {
        read_required_providers(*providers, file, out);
      }
    }
    for (const hcl::Block* module : body.blocks_of_type("module")) {
      if (module->labels.size() != 1) throw Error(at(file, module->pos) + "a module block needs one label, its name");
      ModuleCall call;
      call.name = module->labels[0];
      call.declared_in = file;
      const hcl::Attribute* source = module->body.attribute("source");
      if (source == nullptr) throw Error(at(file, module->pos) + "module \"" + call.name + "\" has no source");
      call.source = literal_string(source->value, "module source", file);
      if (const hcl::Attribute* version = module->body.attribute("version")) {
        call.version = literal_string(version->value, "module version", file);
      }
      add_module_call(dir, std::move(call), at(file, source->value.pos), out, walk);
    }
  }
  for (const auto& path : json_files) read_json_file(dir, path, out, walk);
}

}  // namespace

ModuleRequirements read_module_requirements(const std::filesystem::path& dir, const std::filesystem::path& within) {
  ModuleRequirements requirements;
  std::error_code ec;
  Walk walk{fs::canonical(within, ec), {}};
  if (ec) throw Error("cannot read module directory " + within.string() + ": " + ec.message());
  read_directory(dir, requirements, walk);
  return requirements;
}

std::filesystem::path root_lock_file(const std::filesystem::path& dir, const std::filesystem::path& boundary) {
  const fs::path lock = dir / ".terraform.lock.hcl";
  std::error_code ec;
  if (!fs::is_symlink(lock, ec)) return lock;
  const fs::path target = fs::weakly_canonical(write_target(lock), ec);
  const fs::path top = fs::weakly_canonical(boundary, ec);
  const fs::path inside = target.lexically_relative(top);
  if (ec || inside.empty() || *inside.begin() == "..")
    throw Error(lock.string() + " is a link that leads outside " + top.string() +
                ": a root's lock is read and written only inside its repository (pass --repo-root to widen it), so "
                "this one is neither read nor written");
  return lock;
}

std::filesystem::path repository_of(const std::filesystem::path& dir) {
  std::error_code ec;
  const fs::path start = fs::canonical(dir, ec);
  if (ec) return dir;
  for (fs::path at = start;; at = at.parent_path()) {
    if (fs::exists(at / ".git", ec)) return at;
    if (at == at.root_path() || at.parent_path() == at) return start;
  }
}

ModuleRequirements read_module_requirements(const std::filesystem::path& dir) {
  return read_module_requirements(dir, repository_of(dir));
}

}  // namespace podplane::lockfile
