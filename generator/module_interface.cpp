#include "generator/module_interface.hpp"

#include <array>
#include <string_view>

#include "base/error.hpp"

namespace podplane::generator {

namespace {

// Arguments every module block may carry that are not the module's variables.
constexpr std::array<std::string_view, 6> kMetaArguments{"source", "version", "count", "for_each", "providers", "depends_on"};

bool is_meta_argument(const std::string& name) {
  for (auto meta : kMetaArguments)
    if (name == meta) return true;
  return false;
}

}  // namespace

std::string ModuleInterface::name() const { return address + " " + version + " " + directory; }

ModuleInterface read_module_interface(const cache::Store& store, const cache::ModuleTree& tree,
                                      const std::string& directory) {
  ModuleInterface interface{tree.address, tree.version, directory, {}};
  const std::string prefix = directory.empty() ? "" : directory + "/";
  for (const auto& file : tree.files) {
    if (file.path.rfind(prefix, 0) != 0 || !file.path.ends_with(".tf")) continue;
    if (file.path.find('/', prefix.size()) != std::string::npos) continue;  // a nested module's file
    std::string text = store.read_object(file.digest);
    lockfile::hcl::Body body = lockfile::hcl::parse(text, tree.address + " " + tree.version + " " + file.path);
    for (const auto* block : body.blocks_of_type("variable")) {
      if (block->labels.empty()) continue;
      ModuleVariable variable{block->labels.front(), block->body.attribute("default") == nullptr,
                              file.path + ":" + std::to_string(block->pos.line)};
      interface.variables.emplace(variable.name, std::move(variable));
    }
  }
  return interface;
}

std::vector<ModuleCallProblem> module_call_problems(
    const lockfile::hcl::Body& main, const std::string& file_name,
    const std::function<const ModuleInterface*(const std::string& source)>& interface_of) {
  std::vector<ModuleCallProblem> problems;
  for (const auto* block : main.blocks_of_type("module")) {
    const std::string label = block->labels.empty() ? "?" : block->labels.front();
    const auto* source = block->body.attribute("source");
    if (source == nullptr || !source->value.is_string()) continue;
    const ModuleInterface* interface = interface_of(*source->value.as_string());
    if (interface == nullptr) continue;
    for (const auto& attribute : block->body.attributes) {
      if (is_meta_argument(attribute.name) || interface->variables.count(attribute.name)) continue;
      std::string where = file_name + ":" + std::to_string(attribute.pos.line);
      problems.push_back({ModuleCallProblem::Kind::undeclared_argument, label, where,
                          where + ": module \"" + label + "\" passes \"" + attribute.name + "\", which " +
                              interface->name() + " does not declare"});
    }
    for (const auto& [name, variable] : interface->variables) {
      if (!variable.required || block->body.attribute(name) != nullptr) continue;
      std::string where = file_name + ":" + std::to_string(block->pos.line);
      problems.push_back({ModuleCallProblem::Kind::missing_required, label, where,
                          where + ": module \"" + label + "\" leaves out \"" + name + "\", which " + interface->name() +
                              " requires (" + variable.declared_at + ": no default)"});
    }
  }
  return problems;
}

}  // namespace podplane::generator
