#include "fetch/vendor_modules.hpp"

#include <map>

#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "fetch/root_needs.hpp"

namespace podplane::fetch {

namespace fs = std::filesystem;

bool fetched_only_from_its_host(const ModuleSource& source) {
  return source.kind == ModuleSource::Kind::archive || source.kind == ModuleSource::Kind::http;
}

namespace {

bool inside(const fs::path& path, const fs::path& dir) {
  const auto relative = path.lexically_normal().lexically_relative(dir.lexically_normal());
  return !relative.empty() && *relative.begin() != "..";
}

}  // namespace

bool vendor_can_change(const ModuleSelection& selection, const fs::path& boundary) {
  const fs::path file = fs::path(selection.declared_in).lexically_normal();
  return inside(file, boundary) && fs::is_regular_file(file);
}

namespace {

// Writes the stored tree into `dir`, or checks that `dir` already holds exactly its files (a
// second run); anything else there is the user's and is left alone with an Error.
void write_package(const cache::Store& store, const cache::ModuleTree& tree, const fs::path& dir) {
  if (fs::exists(dir)) {
    for (const auto& file : tree.files) {
      const fs::path there = dir / file.path;
      if (!fs::is_regular_file(there) || file_digest_hex(there) != file.digest)
        throw Error(dir.string() + " exists and does not hold the stored files of " + tree.address + " " + tree.version +
                    " (" + file.path + " differs): move it away, then run this again");
    }
    return;
  }
  const fs::path staging = dir.parent_path() / ("." + dir.filename().string() + ".podplane-vendor");
  fs::remove_all(staging);
  store.write_module_files(tree, staging);
  fs::rename(staging, dir);
}

// `source = "<old>"` becomes `source = "<new>"` in `file`: every quoted occurrence of the old
// source, which is how HCL and JSON both write it.
void point_call_at(const fs::path& file, const std::string& old_source, const std::string& new_source) {
  std::string text = read_file_within_limits(file, "configuration file");
  const std::string quoted = "\"" + old_source + "\"";
  std::size_t count = 0;
  for (auto at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at)) {
    text.replace(at, quoted.size(), "\"" + new_source + "\"");
    at += new_source.size() + 2;
    ++count;
  }
  if (count == 0)
    throw Error(file.string() + ": the source \"" + old_source + "\" is not written there as a plain string: change it to \"" +
                new_source + "\" by hand");
  write_file_durably(file, text);
}

// One pass: each distinct archive call root_needs met is vendored where it is
// written in the repository; returns whether any call changed.
bool vendor_pass(const cache::Store& store, const fs::path& root, const fs::path& boundary, VendorResult& result) {
  StoreModuleLookup lookup(store);
  const RootNeeds needs = root_needs(root, boundary, lookup);
  result.left.clear();
  bool changed = false;
  for (const auto& selection : needs.modules) {
    if (!fetched_only_from_its_host(selection.source)) continue;
    const fs::path file = fs::path(selection.declared_in).lexically_normal();
    if (!selection.package) {
      result.left.push_back(selection.context + ": the store has no package of " + selection.source.store_address() +
                            " to vendor (fill it online: podplane deps tf --stack " + root.string() + ")");
      continue;
    }
    if (!vendor_can_change(selection, boundary)) {
      result.left.push_back(selection.source.text + " is called from inside a module package that is not vendored");
      continue;
    }
    const auto tree = store.find_module_tree(selection.package->address, selection.package->version);
    if (!tree) throw Error("the store lost " + selection.package->address + " while it was read");
    const fs::path dir = root / "vendor" / "modules" / selection.package->address;
    fs::create_directories(dir.parent_path());
    write_package(store, *tree, dir);
    fs::path target = dir.lexically_relative(file.parent_path());
    if (!selection.source.subdir.empty()) target /= selection.source.subdir;
    std::string local = target.generic_string();
    if (!local.starts_with("../")) local = "./" + local;
    point_call_at(file, selection.source.text, local);
    result.vendored.push_back({file, selection.context, selection.source.text, local, dir});
    changed = true;
  }
  return changed;
}

}  // namespace

VendorResult vendor_archive_modules(const cache::Store& store, const fs::path& root_dir, const fs::path& boundary) {
  const fs::path root = fs::absolute(root_dir).lexically_normal();
  VendorResult result;
  // Again until nothing changes: a call the reading met once (the same source in two files) and
  // the calls inside a package just vendored are reached by the next pass. Bounded as deep as
  // module calls may nest.
  for (int pass = 0; pass < 16 && vendor_pass(store, root, boundary, result); ++pass) {
  }
  return result;
}

}  // namespace podplane::fetch
