// podplane deps prune | du: forget the versions no one needs, and know what the store holds.
#include <chrono>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "bundle/create.hpp"
#include "cache/prune.hpp"
#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "cli/open_store.hpp"
#include "fetch/root_needs.hpp"
#include "generator/stack_pins.hpp"

namespace podplane::cli {

namespace {

namespace fs = std::filesystem;

// Whether `dir` holds a root's configuration (*.tf or *.tf.json), beside a lock given by --keep-lock.
bool holds_configuration(const fs::path& dir) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (name.ends_with(".tf") || name.ends_with(".tf.json"))) return true;
  }
  return false;
}

// The options prune and du share: du shows what a prune with them would free.
struct PruneOptions {
  std::size_t keep = 0;  // 0: not given
  std::vector<std::string> lock_files, config_files, root_dirs;
  std::string repo_root;
  std::string older_than;
  bool json = false;

  cache::PrunePolicy policy(const cache::Store& store) const {
    cache::PrunePolicy policy;
    if (keep > 0) policy.keep = keep;
    auto add = [&policy](const std::vector<cache::ItemPin>& pins) { policy.pins.insert(policy.pins.end(), pins.begin(), pins.end()); };
    // A root keeps what fetch/root_needs.hpp says it needs: its lock's providers and the module
    // versions its calls select from this store, so that `stack check` of it passes after.
    const std::optional<fs::path> boundary = repo_root.empty() ? std::nullopt : std::optional<fs::path>(repo_root);
    auto keep_root = [&](const fs::path& dir, const std::string& flag) {
      try {
        add(fetch::stored_root_pins(store, dir, boundary));
      } catch (const Error& error) {
        throw Error(flag + ": " + error.message());
      }
    };
    for (const auto& file : lock_files) {
      add(cache::lock_file_pins(file));
      // A lock committed in its root: the root's module calls are kept too.
      const fs::path dir = fs::absolute(file).parent_path();
      if (holds_configuration(dir)) keep_root(dir, "--keep-lock " + file);
    }
    for (const auto& dir : root_dirs) {
      fs::path lock = fs::path(dir) / ".terraform.lock.hcl";
      if (!fs::exists(lock))
        throw Error("--keep-root " + dir + ": the root has no .terraform.lock.hcl (run `tofu init` or `podplane deps tf --stack " +
                    dir + "` there first, or name its lock with --keep-lock)");
      keep_root(dir, "--keep-root " + dir);
    }
    for (const auto& file : config_files) {
      auto pins = generator::stack_pins(file);
      add(pins.items);
      policy.pinned_manifests.insert(policy.pinned_manifests.end(), pins.manifests.begin(), pins.manifests.end());
    }
    if (!older_than.empty()) {
      auto age = bundle::parse_duration(older_than);
      policy.added_before = utc_timestamp(std::time(nullptr) - static_cast<std::time_t>(age.count()));
    }
    return policy;
  }
};

void add_prune_options(CLI::App& command, PruneOptions& options) {
  command.add_option("--keep-lock", options.lock_files,
                     "Also keep every provider version this .terraform.lock.hcl names, whatever its age, and, where it "
                     "sits in a root, the module versions that root's calls select (repeatable)")
      ->check(CLI::ExistingFile);
  command.add_option("--keep-config", options.config_files,
                     "Also keep what this cluster's stack pins: its lock's providers, module version, copied vmconfig "
                     "manifests and seed (repeatable)")
      ->check(CLI::ExistingFile);
  command.add_option("--keep-root", options.root_dirs,
                     "Also keep what this root needs: the provider versions its .terraform.lock.hcl names and the module "
                     "versions its calls select (repeatable)")
      ->check(CLI::ExistingDirectory);
  command.add_option("--repo-root", options.repo_root,
                     "The directory the roots' local module calls (`../modules/x`) may lead into (default: each root's "
                     "git repository, else the root itself)")
      ->check(CLI::ExistingDirectory);
  command.add_option("--older-than", options.older_than, "Remove only items added before this long ago (30d, 12h, 90m, 3600s)")
      ->transform(duration());
  command.add_flag("--json", options.json, "Print the report as JSON");
}

std::string item_line(const cache::StoreItem& item) {
  std::string line = std::string(cache::to_string(item.family)) + " " + item.name + " " + item.version;
  if (!item.platform.empty()) line += " " + item.platform;
  return line + " (" + std::to_string(item.rows) + (item.family == cache::ItemFamily::module ? " file(s), " : " row(s), ") +
         human_bytes(item.bytes) + ", added " + item.added_at + ")";
}

void deps_prune(const PruneOptions& options, bool dry_run) {
  const fs::path root = cache::default_deps_root();
  std::optional<cache::PruneReport> report;
  cache::PrunePlan plan;
  if (dry_run) {
    // A dry run only reads: it opens the store read-only and changes no byte of it.
    auto store = open_for_reading(root);
    if (!store) throw Error("deps prune refused: there is no store index at " + cache::layout::index_db(root).string());
    plan = cache::plan_prune(*store, options.policy(*store));
  } else {
    auto store = open_existing_for_writing(root, "deps prune");
    report = cache::prune_store(store, options.policy(store));
    plan = report->plan;
  }
  if (options.json) {
    auto out = cache::to_json(plan);
    out["dry_run"] = dry_run;
    if (report) {
      out["rows_removed"] = report->rows_removed;
      out["removed_views"] = report->removed_views;
      out["gc"] = cache::to_json(report->gc);
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  const char* verb = dry_run ? "would remove" : "removed";
  for (const auto& item : plan.items)
    if (item.kept_because.empty()) std::cout << verb << " " << item_line(item) << "\n";
  std::cout << verb << " " << plan.removed_items() << " item(s) of " << plan.items.size() << ", freeing "
            << (report ? report->gc.objects.size() : plan.objects_freed) << " object(s), "
            << human_bytes(report ? report->gc.bytes : plan.bytes_freed);
  if (report) std::cout << " (" << report->rows_removed << " row(s), " << report->removed_views.size() << " view file(s))";
  std::cout << "\n";
}

void deps_du(const PruneOptions& options) {
  const fs::path root = cache::default_deps_root();
  auto store = open_for_reading(root);
  if (!store) throw Error("no store at " + root.string() + ": " + cache::layout::index_db(root).string() + " does not exist");
  const auto plan = cache::plan_prune(*store, options.policy(*store));
  const auto usage = cache::usage_of(plan);
  if (options.json) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& [key, t] : usage.by_name)
      names.push_back({{"family", key.first}, {"name", key.second}, {"versions", t.items}, {"rows", t.rows}, {"bytes", t.bytes}});
    auto items = cache::to_json(plan);
    nlohmann::json out = {{"root", root.string()},
                          {"objects", plan.objects},
                          {"object_bytes", plan.object_bytes},
                          {"by_family", cache::to_json(usage.by_family)},
                          {"by_name", names},
                          {"items", items["items"]},
                          {"prune", {{"removed_items", plan.removed_items()},
                                     {"objects_freed", plan.objects_freed},
                                     {"bytes_freed", plan.bytes_freed}}}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "store: " << usage.objects << " object(s), " << human_bytes(usage.object_bytes)
            << " (an object several rows share is counted once here, and in each row below)\n";
  for (const auto& [family, t] : usage.by_family)
    std::cout << "  " << family << ": " << t.items << " item(s), " << t.rows << " row(s), " << human_bytes(t.bytes) << "\n";
  std::cout << "by name:\n";
  for (const auto& [key, t] : usage.by_name)
    std::cout << "  " << key.first << " " << key.second << ": " << t.items << " version(s), " << human_bytes(t.bytes) << "\n";
  std::cout << "by version:\n";
  for (const auto& item : plan.items)
    std::cout << "  " << item_line(item) << (item.kept_because.empty() ? "  [a prune would remove it]" : "") << "\n";
  std::cout << "a prune with these options would remove " << plan.removed_items() << " item(s) and free " << plan.objects_freed
            << " object(s), " << human_bytes(plan.bytes_freed) << "\n";
}

}  // namespace

void register_deps_prune_commands(CLI::App& deps, const GlobalOptions& /*global*/) {
  auto prune_options = std::make_shared<PruneOptions>();
  auto dry_run = std::make_shared<bool>(false);
  auto* prune = deps.add_subcommand(
      "prune", "Remove every version but the newest N of each provider, module, vmconfig manifest, image and seed (and what "
               "only they need), keeping what a lock or cluster pins; then their views and objects");
  prune->add_option("--keep", prune_options->keep, "Keep the newest N versions of each (1 or more)")
      ->required()
      ->transform(whole_number(1, 1000000));
  add_prune_options(*prune, *prune_options);
  prune->add_flag("--dry-run", *dry_run, "Only print what would go and how many bytes it frees; change nothing");
  prune->callback([prune_options, dry_run] { deps_prune(*prune_options, *dry_run); });

  auto du_options = std::make_shared<PruneOptions>();
  auto* du = deps.add_subcommand(
      "du", "Bytes and counts by kind, by name and by version, and what a prune with the given options would free");
  du->add_option("--keep", du_options->keep, "Show what a prune keeping the newest N would free")
      ->transform(whole_number(1, 1000000));
  add_prune_options(*du, *du_options);
  du->callback([du_options] { deps_du(*du_options); });
}

}  // namespace podplane::cli
