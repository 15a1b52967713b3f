#include "lockfile/tf_config.hpp"

#include <algorithm>
#include <set>

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

void read_directory(const fs::path& dir, ModuleRequirements& out, std::set<fs::path>& visited) {
  std::error_code ec;
  fs::path canonical = fs::canonical(dir, ec);
  if (ec) throw Error("cannot read module directory " + dir.string() + ": " + ec.message());
  if (!visited.insert(canonical).second) return;

  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".tf" && it->is_regular_file()) files.push_back(it->path());
  }
  if (ec) throw Error("cannot list module directory " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());

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
      if (is_local_source(call.source)) {
        fs::path child = dir / call.source;
        if (!fs::is_directory(child, ec)) {
          throw Error(at(file, source->value.pos) + "local module \"" + call.name + "\" not found: " + child.string());
        }
        read_directory(child, out, visited);
      } else {
        out.remote_modules.push_back(std::move(call));
      }
    }
  }
}

}  // namespace

ModuleRequirements read_module_requirements(const std::filesystem::path& dir) {
  ModuleRequirements requirements;
  std::set<fs::path> visited;
  read_directory(dir, requirements, visited);
  return requirements;
}

}  // namespace podplane::lockfile
