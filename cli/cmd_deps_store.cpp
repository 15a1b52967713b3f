// podplane deps ls | verify | gc: inspect and maintain the store under the deps root.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "cache/kinds.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/store.hpp"
#include "cache/store_check.hpp"
#include "cli/commands.hpp"
#include "cli/open_store.hpp"

namespace podplane::cli {

namespace {

namespace fs = std::filesystem;

struct Row {
  std::string kind, address, version, platform, size;
};

void print_table(const std::vector<Row>& rows) {
  Row header{"KIND", "ADDRESS", "VERSION", "PLATFORM", "SIZE"};
  std::size_t width[4] = {header.kind.size(), header.address.size(), header.version.size(), header.platform.size()};
  for (const auto& row : rows) {
    width[0] = std::max(width[0], row.kind.size());
    width[1] = std::max(width[1], row.address.size());
    width[2] = std::max(width[2], row.version.size());
    width[3] = std::max(width[3], row.platform.size());
  }
  auto print = [&](const Row& row) {
    std::cout << row.kind << std::string(width[0] - row.kind.size() + 2, ' ') << row.address
              << std::string(width[1] - row.address.size() + 2, ' ') << row.version
              << std::string(width[2] - row.version.size() + 2, ' ') << row.platform
              << std::string(width[3] - row.platform.size() + 2, ' ') << row.size << "\n";
  };
  print(header);
  for (const auto& row : rows) print(row);
}

void deps_ls(bool json) {
  fs::path root = cache::default_deps_root();
  auto store = open_for_reading(root);
  nlohmann::json list = nlohmann::json::array();
  std::vector<Row> rows;
  if (store) {
    for (const auto& a : store->artifacts()) {
      list.push_back({{"kind", cache::to_string(a.kind)},
                      {"address", a.address},
                      {"version", a.version},
                      {"platform", a.platform},
                      {"filename", a.filename},
                      {"size", a.size},
                      {"digest", a.digest},
                      {"h1", a.h1},
                      {"zh", a.zh},
                      {"upstream_digest", a.upstream_digest},
                      {"upstream_url", a.upstream_url},
                      {"trust", cache::to_string(a.trust)},
                      {"added_at", a.added_at}});
      // Provider packages: the registry's plugin protocols, where the store knows them.
      if (a.protocols) list.back()["protocols"] = *a.protocols;
      rows.push_back({std::string(cache::to_string(a.kind)), a.address, a.version, a.platform.empty() ? "-" : a.platform,
                      human_bytes(static_cast<std::uint64_t>(a.size))});
    }
    for (const auto& tree : store->module_trees()) {
      std::int64_t size = 0;
      for (const auto& file : tree.files) size += file.size;
      list.push_back({{"kind", cache::kModuleTrees.name},
                      {"address", tree.address},
                      {"version", tree.version},
                      {"platform", ""},
                      {"size", size},
                      {"files", tree.files.size()},
                      {"h1", tree.h1},
                      {"upstream_url", tree.upstream_url},
                      {"added_at", tree.added_at}});
      rows.push_back({std::string(cache::kModuleTrees.name), tree.address, tree.version, "-", human_bytes(static_cast<std::uint64_t>(size))});
    }
  } else {
    std::cerr << "podplane: no store at " << root.string() << " yet\n";
  }
  if (json) std::cout << list.dump(2) << "\n";
  else print_table(rows);
}

void deps_verify(bool json, bool repair, cache::VerifyDepth depth, const GlobalOptions& global) {
  fs::path root = cache::default_deps_root();
  std::optional<cache::Store> store;
  if (repair) store.emplace(open_existing_for_writing(root, "deps verify --repair"));
  else store = open_for_reading(root);
  if (!store) throw Error("no store at " + root.string() + ": " + cache::layout::index_db(root).string() + " does not exist");
  const auto check = cache::check_store(*store, depth, repair ? cache::Repair::yes : cache::Repair::no);
  const auto& report = check.report;
  const auto& repaired = check.repaired;
  const auto& signatures = check.recheck.of(cache::Recheck::provider_signed_sums);
  const auto& tools = check.recheck.of(cache::Recheck::engine_signed_sums);
  const auto& releases = check.recheck.of(cache::Recheck::podplane_sums);
  if (json) {
    auto out = cache::to_json(report);
    if (repaired) {
      out["quarantined"] = repaired->quarantined;
      out["removed_views"] = repaired->removed_views;
    }
    out["provider_packages_signature_checked"] = signatures.rows_checked;
    out["upstream_signatures_verified"] = signatures.signatures_checked;
    if (tools.rows_checked > 0) {  // stores without engine releases report as before
      out["tool_archives_signature_checked"] = tools.rows_checked;
      out["tool_signatures_verified"] = tools.signatures_checked;
    }
    if (releases.rows_checked > 0) out["podplane_release_files_checked"] = releases.rows_checked;
    out["root"] = root.string();
    out["read_only"] = store->read_only();
    out["read_only_reason"] = store->read_only_reason();
    std::cout << out.dump(2) << "\n";
  } else {
    // ls and verify always open read-only; say so only when the media forced something more.
    if (store->read_only() && store->read_only_reason() != "opened read-only" && !global.quiet) {
      std::cout << "note: read-only store (" << store->read_only_reason() << ")\n";
    }
    if (repaired) {
      for (const auto& line : repaired->quarantined) std::cout << line << "\n";
      for (const auto& view : repaired->removed_views) std::cout << "removed view " << view << "\n";
      if (repaired->quarantined.empty() && repaired->removed_views.empty()) std::cout << "repair: nothing to quarantine\n";
    }
    for (const auto& problem : report.problems) std::cout << "problem: " << problem << "\n";
    for (const auto& garbage : report.garbage) std::cout << "garbage: " << garbage << "\n";
    if (!global.quiet) {
      for (const auto& note : report.notes) std::cout << "note: " << note << "\n";
    }
    std::cout << (report.depth == cache::VerifyDepth::quick ? "quick check (sizes, rows and views; no object rehashed): " : "")
              << "checked " << report.objects_checked << " objects, " << report.artifacts_checked << " artifacts, "
              << report.module_files_checked << " module files, " << report.views_checked << " views, "
              << signatures.rows_checked << " provider packages against " << signatures.signatures_checked
              << " upstream signatures"
              << (tools.rows_checked == 0 ? std::string()
                                              : ", " + std::to_string(tools.rows_checked) + " engine release zips against " +
                                                    std::to_string(tools.signatures_checked) + " release signatures")
              << (releases.rows_checked == 0 ? std::string()
                                              : ", " + std::to_string(releases.rows_checked) +
                                                    " podplane release files against their SHA256SUMS")
              << ": "
              << (report.ok() ? "ok" : std::to_string(report.problems.size()) + " problem(s)");
    if (!report.garbage.empty()) std::cout << "; " << report.garbage.size() << " garbage item(s) for `podplane deps gc`";
    std::cout << "\n";
  }
  if (!report.ok()) {
    throw Error("the store at " + root.string() + " has " + std::to_string(report.problems.size()) + " problem(s)");
  }
}

void deps_gc(bool dry_run, bool json) {
  fs::path root = cache::default_deps_root();
  auto store = open_existing_for_writing(root, "deps gc");
  auto report = cache::collect_garbage(store, dry_run ? cache::DryRun::yes : cache::DryRun::no);
  if (json) {
    auto out = cache::to_json(report);
    out["dry_run"] = dry_run;
    std::cout << out.dump(2) << "\n";
    return;
  }
  const char* verb = dry_run ? "would remove" : "removed";
  for (const auto& file : report.temp_files) std::cout << verb << " temp file " << file.string() << "\n";
  for (const auto& dir : report.scratch_dirs) std::cout << verb << " scratch directory " << dir.string() << "\n";
  for (const auto& digest : report.objects) {
    std::cout << verb << " object " << digest << " (" << store.object_path(digest).string() << ")\n";
  }
  std::cout << verb << " " << report.objects.size() << " object(s), " << report.temp_files.size() << " temp file(s) and "
            << report.scratch_dirs.size() << " scratch directory(ies), " << human_bytes(report.bytes) << "\n";
}

}  // namespace

void register_deps_store_commands(CLI::App& deps, const GlobalOptions& global) {
  auto json_ls = std::make_shared<bool>(false);
  auto* ls = deps.add_subcommand("ls", "List what the store holds: kind, address, version, platform, size");
  ls->add_flag("--json", *json_ls, "Print a JSON array");
  ls->callback([json_ls] { deps_ls(*json_ls); });

  auto json_verify = std::make_shared<bool>(false);
  auto repair = std::make_shared<bool>(false);
  auto quick = std::make_shared<bool>(false);
  auto* verify = deps.add_subcommand("verify", "Rehash every object and check every index row and view (exit 1 on problems)");
  verify->add_flag("--json", *json_verify, "Print the report as JSON");
  verify->add_flag("--repair", *repair,
                   "Quarantine corrupt objects and bad rows, remove view files no row implies, rebuild the views, "
                   "then verify (needs the store to itself)");
  auto* quick_flag = verify->add_flag("--quick", *quick,
                                      "Check object sizes by stat and every row and view rule that needs no rehash "
                                      "(finds missing and truncated objects, not same-size corruption)");
  verify->get_option("--repair")->excludes(quick_flag);
  verify->callback([json_verify, repair, quick, &global] {
    deps_verify(*json_verify, *repair, *quick ? cache::VerifyDepth::quick : cache::VerifyDepth::full, global);
  });

  auto dry_run = std::make_shared<bool>(false);
  auto json_gc = std::make_shared<bool>(false);
  auto* gc = deps.add_subcommand("gc", "Remove temp files and scratch directories of dead runs, and objects no index row references");
  gc->add_flag("--dry-run", *dry_run, "Only list what would be removed");
  gc->add_flag("--json", *json_gc, "Print the report as JSON");
  gc->callback([dry_run, json_gc] { deps_gc(*dry_run, *json_gc); });
}

}  // namespace podplane::cli
