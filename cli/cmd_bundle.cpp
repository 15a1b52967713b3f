// podplane bundle keygen|create|inventory|verify|import|show: parse, call bundle/, print.
#include <cstdio>
#include <limits>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "base/pkcs11.hpp"
#include "bundle/contents.hpp"
#include "bundle/create.hpp"
#include "bundle/import.hpp"
#include "bundle/signing.hpp"
#include "cache/store.hpp"
#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "cli/open_store.hpp"
#include "fetch/root_needs.hpp"

namespace podplane::cli {

namespace fs = std::filesystem;

namespace {

struct CreateArgs {
  std::string file;
  std::string since;
  std::vector<std::string> platforms;
  std::vector<std::string> for_roots;
  std::string repo_root;
  std::string sign;
  std::string pkcs11_module;
  std::string volume_size;
  std::string expires_in;
  std::string parity;
};

struct ReadArgs {
  std::vector<std::string> files;
  std::vector<std::string> trust;
  bool allow_unsigned = false;
  bool allow_expired = false;
  bool no_parity = false;
  bool allow_downgrade = false;  // import only
  CosignArgs cosign;  // import only
};

bundle::VerifyOptions verify_options(const ReadArgs& args) {
  bundle::VerifyOptions options;
  for (const auto& t : args.trust) options.trusted_keys.emplace_back(t);
  options.unsigned_bundles = args.allow_unsigned ? bundle::UnsignedBundles::allow : bundle::UnsignedBundles::refuse;
  options.expired = args.allow_expired ? bundle::ExpiredBundles::allow : bundle::ExpiredBundles::refuse;
  options.downgrades = args.allow_downgrade ? bundle::Downgrades::allow : bundle::Downgrades::refuse;
  options.parity = args.no_parity ? bundle::ParityFiles::ignore : bundle::ParityFiles::use;
  args.cosign.apply(options.cosign_keys, options.cosign_policy, options.cosign_keyless);
  return options;
}

std::vector<fs::path> paths(const std::vector<std::string>& files) { return {files.begin(), files.end()}; }

// Prints the report; throws (exit 1) when anything is incomplete.
void print_report(const bundle::ImportReport& report, const char* verb) {
  for (const auto& p : report.parity) std::cout << "parity: " << p << "\n";
  for (const auto& v : report.volumes) {
    std::cout << v.file.string() << (v.rebuilt.empty() ? "" : " (" + v.rebuilt + ", rebuilt from parity)") << ": ";
    if (v.bundle_id.empty()) {
      std::cout << "REFUSED\n";
    } else {
      std::cout << "volume " << v.volume_index << " of " << v.volume_count << ", bundle " << v.bundle_id.substr(0, 12)
                << ", " << (v.signer == "unsigned" ? "unsigned" : "signed by " + v.signer)
                << (v.signer != "unsigned" && !v.trusted_signer ? " (not trusted)" : "") << "\n";
      std::cout << "  objects: " << v.objects << " listed, " << v.objects_verified << " " << verb << " ("
                << human_bytes(v.bytes_verified) << ")";
      if (v.objects_present > 0) std::cout << ", " << v.objects_present << " already present";
      if (!v.missing_objects.empty()) std::cout << ", " << v.missing_objects.size() << " MISSING";
      std::cout << "\n";
      if (v.artifacts_added + v.module_trees_added > 0)
        std::cout << "  rows: " << v.artifacts_added << " artifacts, " << v.module_trees_added << " module trees added\n";
      for (const auto& d : v.missing_objects) std::cout << "  missing object " << d << "\n";
      if (!v.expired_at.empty()) std::cout << "  note: expired at " << v.expired_at << " (taken because of --allow-expired)\n";
    }
    if (!v.error.empty()) std::cout << "  error: " << v.error << "\n";
  }
  for (const auto& m : report.missing_volumes) std::cout << "missing: " << m << "\n";
  for (const auto& l : report.lost) std::cout << "lost: " << l << "\n";
  for (const auto& w : report.waiting_rows) std::cout << "waiting for objects: " << w << "\n";
  for (const auto& n : report.notes) std::cout << "note: " << n << "\n";
  for (const auto& h : report.held) std::cout << "held: " << h << "\n";
  if (!report.ok()) {
    std::size_t bad = 0, held_back = 0;
    for (const auto& v : report.volumes) {
      if (v.held_back) ++held_back;
      else if (!v.error.empty()) ++bad;
    }
    std::string message = std::string("bundle ") + (std::string(verb) == "imported" ? "import" : "verification") + " incomplete: " +
                          std::to_string(bad) + " volume(s) refused or damaged, " + std::to_string(report.missing_volumes.size()) +
                          " volume(s) missing, " + std::to_string(report.waiting_rows.size()) + " row(s) waiting for objects";
    if (!report.lost.empty())
      message += "; " + std::to_string(report.lost.size()) + " volume(s) lost that parity cannot rebuild";
    if (held_back > 0)
      message += ", so the " + std::to_string(held_back) + " volume(s) of their bundle given with them were not imported";
    if (!report.held.empty()) {
      message += "; the tf selection was held (it would move backwards: rerun with --allow-downgrade to apply it)";
    }
    throw Error(message);
  }
}

std::string joined(const std::vector<std::string>& items, const std::string& empty) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? empty : text;
}

// What the parity just written rebuilds of one lost volume. A volume it cannot rebuild is a
// warning, not an error: the parity is the size asked for, and the command that covers every
// volume is named.
void print_parity_cover(const bundle::SingleLossCover& cover, int percent) {
  std::cout << "parity: rebuilds any one lost volume of up to " << human_bytes(cover.largest_bytes) << "\n";
  if (cover.too_large.empty()) return;
  std::cerr << "podplane: warning: " << percent << "% parity cannot rebuild " << joined(cover.too_large, "")
            << " if lost: larger than the " << human_bytes(cover.largest_bytes)
            << " it rebuilds (volumes differ in size: objects are never split across them); --parity "
            << cover.percent_covering_each << " rebuilds any one lost volume\n";
}

void print_rows(const bundle::BundleContents& c) {
  std::cout << "  rows (what import adds to a store that lacks them): " << c.artifacts.size() << " artifacts, "
            << c.module_trees.size() << " module trees\n";
  for (const auto& [kind, count] : c.rows_by_kind()) {
    std::cout << "    " << kind << " (" << count << ")\n";
    for (const auto& t : c.artifacts) {
      const cache::Artifact& a = t.artifact;
      if (cache::to_string(a.kind) != kind) continue;
      std::cout << "      " << a.address << " " << a.version << (a.platform.empty() ? "" : " " + a.platform) << "  "
                << a.filename << "  " << human_bytes(static_cast<std::uint64_t>(a.size)) << "  sha256:" << a.digest
                << (c.carried.count(a.digest) ? "" : "  (object not in the volumes given)") << "\n";
    }
    if (kind != "module_tree") continue;
    for (const auto& tree : c.module_trees)
      std::cout << "      " << tree.address << " " << tree.version << "  " << tree.files.size() << " files  " << tree.h1 << "\n";
  }
}

void print_contents(const bundle::BundleContents& c) {
  std::cout << "bundle " << c.name << "  " << c.bundle_id << "\n";
  std::cout << "  created " << c.created_at << ", "
            << (c.expires_at ? "expires " + *c.expires_at + (c.expired ? " (EXPIRED)" : "") : std::string("never expires"))
            << "\n";
  std::cout << "  signer: "
            << (c.signer == "unsigned" ? std::string("unsigned")
                                       : c.signer + " (signature verified; trust is decided by verify and import --trust)")
            << "\n";
  std::cout << "  contents: "
            << (c.since ? "a delta against inventory " + c.since->inventory_digest.substr(0, 12) + " of store " + c.since->store_id
                        : std::string("the whole store"))
            << "; platforms: " << joined(c.platforms, "all") << "\n";
  std::cout << "  volumes: " << c.volumes.size() << " of " << c.volume_count << " given\n";
  for (const auto& v : c.volumes)
    std::cout << "    " << v.file.string() << ": volume " << v.index << " of " << c.volume_count << ", " << v.objects
              << " objects (" << human_bytes(v.object_bytes) << "), " << v.file_bytes << " bytes\n";
  for (int index : c.missing_volumes())
    std::cout << "    volume " << index << " of " << c.volume_count << ": not given (the rows it brings are not listed)\n";
  std::cout << "  objects: " << c.total_objects << " (" << human_bytes(c.total_bytes) << "), " << c.carried.size()
            << " in the volumes given\n";
  print_rows(c);
  if (c.tf_selection) {
    std::vector<std::string> providers;
    for (const auto& p : c.tf_selection->providers) providers.push_back(p.address + " " + p.version);
    std::cout << "  tf selection: " << joined(providers, "no providers") << "; module " << c.tf_selection->module_address << " "
              << c.tf_selection->module_version << "; engine " << c.tf_selection->engine << "\n";
  }
  if (!c.parity) {
    std::cout << "  parity: none\n";
    return;
  }
  const auto& p = *c.parity;
  std::cout << "  parity: " << p.files.size() << " PAR2 file(s), " << human_bytes(p.bytes) << ", " << p.recovery_blocks
            << " recovery blocks for " << p.source_blocks << " source blocks, covering " << p.volumes.size()
            << " volume(s)\n";
  for (const auto& f : p.files) std::cout << "    " << f.string() << "\n";
}

void show(const std::vector<std::string>& files, bool json) {
  auto shown = bundle::show_bundles(paths(files));
  if (json) {
    std::cout << bundle::to_json(shown).dump(2) << "\n";
  } else {
    for (const auto& c : shown.bundles) print_contents(c);
    for (const auto& u : shown.unreadable) std::cout << "unreadable: " << u << "\n";
    for (const auto& n : shown.notes) std::cout << "note: " << n << "\n";
  }
  if (!shown.unreadable.empty())
    throw Error(std::to_string(shown.unreadable.size()) + " volume(s) could not be read (listed above)");
}

// `bundle keygen PREFIX`: a key pair in files, or (--pkcs11) in a token, PREFIX.pub beside.
void register_keygen(CLI::App& group) {
  auto* keygen = group.add_subcommand("keygen", "Make an Ed25519 key pair: PREFIX.key (mode 0600) and PREFIX.pub");
  struct KeygenArgs {
    std::string prefix, pkcs11_uri, pkcs11_module;
    bool export_only = false;
  };
  auto k = std::make_shared<KeygenArgs>();
  keygen->add_option("PREFIX", k->prefix, "Path prefix of the key files")->required();
  auto* in_token = keygen->add_option("--pkcs11", k->pkcs11_uri,
                                      "Make the key in this PKCS#11 token instead (RFC 7512 URI: "
                                      "'pkcs11:token=…;object=…?pin-value=…'); only PREFIX.pub is written");
  keygen->add_option("--pkcs11-module", k->pkcs11_module,
                     "The token's PKCS#11 module (default: $PODPLANE_PKCS11_MODULE); SoftHSM2's is "
                     "/usr/lib/softhsm/libsofthsm2.so")
      ->check(CLI::ExistingFile)
      ->needs(in_token);
  keygen->add_flag("--export", k->export_only,
                   "With --pkcs11: write PREFIX.pub of a key the token holds already (made by pkcs11-tool) instead of "
                   "making one")
      ->needs(in_token);
  keygen->callback([k] {
    if (!k->pkcs11_uri.empty()) {
      auto module = k->pkcs11_module.empty() ? std::nullopt : std::optional<std::filesystem::path>(k->pkcs11_module);
      auto file = bundle::token_public_key(k->pkcs11_uri, module, k->prefix,
                                           k->export_only ? bundle::MakeInToken::no : bundle::MakeInToken::yes);
      std::cout << "private key: in the token, " << pkcs11::Uri::parse(k->pkcs11_uri).str() << " (it never leaves it)\n"
                << "public key:  " << file.string() << " (" << bundle::PublicKey::load(file).key_id() << ")\n";
      return;
    }
    auto files = bundle::generate_key_pair(k->prefix);
    auto key = bundle::PublicKey::load(files.public_key);
    std::cout << "private key: " << files.private_key.string() << " (keep it on the online side)\n"
              << "public key:  " << files.public_key.string() << " (" << key.key_id() << ")\n";
  });
}

}  // namespace

void register_bundle_commands(CLI::App& group, const GlobalOptions& global) {
  register_keygen(group);

  auto* create = group.add_subcommand("create", "Write the store (or what an inventory lacks) as a bundle");
  auto c = std::make_shared<CreateArgs>();
  create->add_option("FILE", c->file, "Bundle file (volumes: FILE.001-of-NNN, …)")->required();
  create->add_option("--since", c->since, "Inventory from the receiving store: bundle only what it lacks");
  create->add_option("--platform", c->platforms, "Keep provider packages of this OS_ARCH only (repeatable)")->allow_extra_args(false);
  create->add_option("--for-root", c->for_roots,
                     "Carry only what this OpenTofu/Terraform root needs: the provider versions its lock names and the "
                     "module versions its calls select (repeatable)")
      ->check(CLI::ExistingDirectory);
  create->add_option("--repo-root", c->repo_root,
                     "The directory the --for-root roots' local module calls (`../modules/x`) may lead into (default: "
                     "each root's git repository, else the root itself)")
      ->check(CLI::ExistingDirectory)
      ->needs("--for-root");
  create->add_option("--sign", c->sign,
                     "Ed25519 private key to sign the manifests: a file from 'bundle keygen', or a key in a PKCS#11 token "
                     "(RFC 7512 URI: 'pkcs11:token=…;object=…?pin-value=…')");
  create->add_option("--pkcs11-module", c->pkcs11_module,
                     "The PKCS#11 module of --sign's token (default: the URI's module-path, else $PODPLANE_PKCS11_MODULE)")
      ->check(CLI::ExistingFile);
  create->add_option("--volume-size", c->volume_size, "Cut into volumes of at most SIZE (e.g. 700M, 4095M, 25G)")
      ->check(size_in_bytes(1, std::numeric_limits<std::uint64_t>::max()));
  create->add_option("--parity", c->parity,
                     "Write PAR2 recovery files of PERCENT redundancy beside the volumes (needs par2), so that import can "
                     "rebuild a damaged or missing volume")
      ->transform(whole_number(1, 100));
  create->add_option("--expires-in", c->expires_in,
                     "Sign an expiry into the manifest: import refuses the bundle DURATION after now (e.g. 30d, 12h)")
      ->check(duration());
  create->callback([c, &global] {
    bundle::CreateOptions options;
    if (!c->since.empty()) options.since = c->since;
    options.platforms = c->platforms;
    if (!c->sign.empty()) options.signing_key = c->sign;
    if (!c->pkcs11_module.empty()) options.pkcs11_module = c->pkcs11_module;
    if (!c->volume_size.empty()) options.volume_size = bundle::parse_size(c->volume_size);
    if (!c->expires_in.empty()) options.expires_in = bundle::parse_duration(c->expires_in);
    if (!c->parity.empty()) options.parity_percent = std::stoi(c->parity);
    auto store = cache::Store::open(cache::default_deps_root(), cache::Store::Access::read_write);
    if (!c->for_roots.empty()) {
      options.only.emplace();
      const auto repo_root = c->repo_root.empty() ? std::nullopt : std::optional<std::filesystem::path>(c->repo_root);
      for (const auto& root : c->for_roots) {
        const auto pins = fetch::stored_root_pins(store, root, repo_root);
        options.only->insert(options.only->end(), pins.begin(), pins.end());
      }
    }
    auto plan = bundle::plan_bundle(store, c->file, options);
    std::cout << "bundle: " << plan.artifacts << " artifacts, " << plan.module_trees << " module trees, " << plan.objects
              << " objects (" << human_bytes(plan.object_bytes) << ") in " << plan.volumes.size() << " volume(s), "
              << human_bytes(plan.total_bytes) << " to write, " << (plan.signed_bundle ? "signed" : "UNSIGNED") << "\n";
    for (const auto& v : plan.volumes)
      std::cout << "  " << v.file.string() << ": " << v.manifest.objects.size() << " objects, " << v.bytes << " bytes\n";
    if (options.since) {
      // What the receiver pruned comes back in a delta: say so, so that the site sees it.
      std::cout << "of the delta, " << plan.older_than_receiver_items << " item(s) ("
                << human_bytes(plan.older_than_receiver_bytes)
                << ") are versions older than the receiver's newest of the same name"
                << (plan.older_than_receiver_items > 0 ? " (pruned there? `podplane deps prune` here with the same policy stops "
                                                         "sending them)"
                                                       : "")
                << "\n";
    }
    if (options.parity_percent)
      std::cout << "parity: " << *options.parity_percent << "% in PAR2 files beside the volumes (par2 create)\n";
    std::cout.flush();
    auto written = bundle::write_bundle(store, plan, options, [&](const std::string& line) {
      if (!global.quiet) std::cerr << line << "\n";
    });
    std::cout << "bundle id: " << plan.volumes.front().manifest.bundle_id << "\n";
    for (const auto& f : written.parity.files) std::cout << "parity file: " << f.string() << "\n";
    if (written.parity_cover) print_parity_cover(*written.parity_cover, *options.parity_percent);
    std::cout << "transfer report: " << written.report.cyclonedx.string() << " (CycloneDX 1.6), "
              << written.report.html.string() << "\n";
  });

  auto* inventory = group.add_subcommand("inventory", "Describe what this store holds, to cut a delta on the online side");
  auto output = std::make_shared<std::string>();
  inventory->add_option("-o,--output", *output,
                        "Write to FILE instead of standard output ('-' is standard output; a device or FIFO is "
                        "written in place, a symbolic link followed)");
  inventory->callback([output] {
    // A new site's empty store is a valid inventory (it asks for everything); a store whose
    // index was deleted is not: it would claim to hold nothing of what its objects hold.
    refuse_lost_index(cache::default_deps_root());
    auto store = cache::Store::open(cache::default_deps_root(), cache::Store::Access::read_write);
    std::string text = bundle::make_inventory(store).serialize();
    if (output->empty() || *output == "-") {
      std::cout << text;
      return;
    }
    write_file_durably(*output, text);
  });

  auto add_read_options = [](CLI::App* app, const std::shared_ptr<ReadArgs>& a) {
    app->add_option("FILE", a->files, "Bundle volumes, in any order")->required();
    app->add_option("--trust", a->trust, "Public key (from 'bundle keygen') whose signature is accepted (repeatable)")
        ->allow_extra_args(false);
    app->add_flag("--allow-unsigned", a->allow_unsigned, "Accept unsigned bundles or untrusted signers (integrity still checked)");
    app->add_flag("--allow-expired", a->allow_expired, "Accept a bundle past its signed expiry (bundle create --expires-in)");
    app->add_flag("--no-parity", a->no_parity,
                  "Read the volumes as they are: no par2 check or repair from the parity files beside them");
  };
  auto* verify = group.add_subcommand("verify", "Check signature, structure and every object of bundle volumes");
  auto v = std::make_shared<ReadArgs>();
  add_read_options(verify, v);
  verify->callback([v] { print_report(bundle::verify_bundle(paths(v->files), verify_options(*v)), "verified"); });

  auto* import = group.add_subcommand("import", "Verify bundle volumes while streaming them into the store");
  auto i = std::make_shared<ReadArgs>();
  add_read_options(import, i);
  import->add_flag("--allow-downgrade", i->allow_downgrade,
                   "Let the tf selection move backwards (a bundle older than its signer's newest, lower versions, "
                   "fewer providers)");
  add_cosign_options(*import, i->cosign);
  import->callback([i] {
    // The store is created only when a volume passes its checks: a refused import leaves nothing.
    print_report(bundle::import_bundle(cache::default_deps_root(), paths(i->files), verify_options(*i)), "imported");
  });

  auto* show_command = group.add_subcommand(
      "show", "List what bundle volumes carry (rows by kind, objects, volumes, signer, expiry, parity) without a store");
  auto shown_files = std::make_shared<std::vector<std::string>>();
  auto show_json = std::make_shared<bool>(false);
  show_command->add_option("FILE", *shown_files, "Bundle volumes (parity files and reports among them are recognised)")
      ->required();
  show_command->add_flag("--json", *show_json, "Print JSON");
  show_command->callback([shown_files, show_json] { show(*shown_files, *show_json); });
}

}  // namespace podplane::cli
