#include "cache/recheck.hpp"

#include <functional>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cache/openpgp.hpp"
#include "cache/podplane_releases.hpp"
#include "cache/tool_releases.hpp"
#include "lockfile/shasums.hpp"

namespace podplane::cache {

namespace {

// The armored keys of a stored registry keys document ({"gpg_public_keys": [{"ascii_armor": …}]}).
std::vector<std::string> armored_keys_of(const std::string& keys_json) {
  std::vector<std::string> armors;
  auto document = nlohmann::json::parse(keys_json, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) return armors;
  auto list = document.find("gpg_public_keys");
  if (list == document.end() || !list->is_array()) return armors;
  for (const auto& key : *list) {
    if (key.is_object() && key.contains("ascii_armor") && key["ascii_armor"].is_string()) {
      armors.push_back(key["ascii_armor"].get<std::string>());
    }
  }
  return armors;
}

// "<address> <version> <filename>": how every recheck names the row it speaks of.
std::string row_words(const Artifact& row) { return row.address + " " + row.version + " " + row.filename; }

// Provenance rows that name a stored SHA256SUMS and its signature: a check against a signed release.
std::vector<Provenance> signed_provenance(const Store& store, const Artifact& row) {
  std::vector<Provenance> checks;
  for (auto& provenance : store.provenance_of(row.id))
    if (!provenance.shasums_digest.empty() && !provenance.signature_digest.empty()) checks.push_back(std::move(provenance));
  return checks;
}

// The signature of one release's SHA256SUMS, verified once per `memo_key` (one signature covers
// every platform of a release) by `verify`, which returns the signer's fingerprint.
struct SignedSums {
  const SignatureMemo::Outcome& outcome;
  bool other_key;  // it verified, by another key than the provenance recorded
};
SignedSums check_signature(SignatureMemo& memo, const std::string& memo_key, const Provenance& provenance,
                           const std::function<std::string()>& verify) {
  const auto& outcome = memo.check(memo_key, verify);
  bool other_key = outcome.error.empty() && !provenance.key_fingerprint.empty() && outcome.fingerprint != provenance.key_fingerprint;
  return {outcome, other_key};
}

std::string other_key_problem(const std::string& what, const Provenance& provenance, const std::string& fingerprint) {
  return mismatch_message(what + ": signed by another key than recorded", provenance.key_fingerprint, fingerprint);
}

// The digest `shasums` lists for `filename`, or nullopt when it lists none. Error when it is no
// SHA256SUMS document (`label` names it).
std::optional<std::string> listed_digest(const std::string& shasums, const std::string& filename, const std::string& label) {
  auto lines = lockfile::parse_shasums(shasums, label);
  auto line = lines.find(filename);
  return line == lines.end() ? std::nullopt : std::optional<std::string>(line->second);
}

void check_provider_release(const Store& store, const Artifact& package, const Provenance& provenance, SignatureMemo& memo,
                            RecheckResult& result) {
  const std::string what = row_words(package);
  const std::string release = package.address + " " + package.version;
  ++result.rows_checked;
  std::string shasums;
  try {
    shasums = store.read_object(provenance.shasums_digest);
    auto signature = check_signature(memo, provenance.shasums_digest + provenance.signature_digest + provenance.keys_digest,
                                     provenance, [&] {
                                       SigningKeys keys{armored_keys_of(store.read_object(provenance.keys_digest)),
                                                        "the registry's signing keys stored for " + release};
                                       auto check = verify_detached_signature(shasums, store.read_object(provenance.signature_digest),
                                                                              keys, "SHA256SUMS of " + release);
                                       ++result.signatures_checked;
                                       return check.fingerprint;
                                     });
    if (!signature.outcome.error.empty()) {
      result.problems.push_back(what + ": upstream signature does not verify offline: " + signature.outcome.error);
      return;
    }
    // Another signer than recorded is a problem; the line is still checked.
    if (signature.other_key) result.problems.push_back(other_key_problem(what, provenance, signature.outcome.fingerprint));
  } catch (const Error& error) {
    result.problems.push_back(what + ": upstream signature material unreadable: " + error.what());
    return;
  }
  std::optional<std::string> listed;
  try {
    listed = listed_digest(shasums, package.filename, "the stored SHA256SUMS of " + release);
  } catch (const Error& error) {
    result.problems.push_back(what + ": " + error.what());
    return;
  }
  if (listed != package.digest) {
    result.problems.push_back(mismatch_message(what + ": signed SHA256SUMS does not list this package's digest", package.digest,
                                               listed.value_or("(no line)")));
  }
}

void check_engine_release(const Store& store, const Artifact& archive, const Provenance& provenance, SignatureMemo& memo,
                          RecheckResult& result) {
  const std::string what = row_words(archive);
  try {
    auto engine = lockfile::parse_engine(archive.address);
    std::string shasums = store.read_object(provenance.shasums_digest);
    auto signature = check_signature(memo, provenance.shasums_digest + provenance.signature_digest, provenance, [&] {
      auto fingerprint = verify_tool_shasums(engine, archive.version, shasums, store.read_object(provenance.signature_digest));
      ++result.signatures_checked;
      return fingerprint;
    });
    if (!signature.outcome.error.empty()) {
      result.problems.push_back(what + ": release signature does not verify: " + signature.outcome.error);
      return;
    }
    if (signature.other_key) {
      result.problems.push_back(other_key_problem(what, provenance, signature.outcome.fingerprint));
      return;
    }
    const std::string name = tool_shasums_name(engine, archive.version);
    auto listed = listed_digest(shasums, archive.filename, name);
    if (!listed) throw Error(name + " lists no " + archive.filename);
    if (*listed != archive.digest) {
      result.problems.push_back(
          mismatch_message(what + ": signed SHA256SUMS does not list this archive's digest", archive.digest, *listed));
    }
  } catch (const Error& error) {
    result.problems.push_back(what + ": " + error.what());
  }
}

}  // namespace

RecheckResult recheck_provider_packages(const Store& store, const std::vector<Artifact>& packages) {
  RecheckResult result;
  SignatureMemo signatures;  // by sums + signature + keys digests
  for (const auto& package : packages) {
    // Without a signed provenance row it was not signed upstream (--allow-unverified, a network mirror).
    for (const auto& provenance : signed_provenance(store, package)) check_provider_release(store, package, provenance, signatures, result);
  }
  return result;
}

RecheckResult recheck_tool_archives(const Store& store, const std::vector<Artifact>& archives) {
  RecheckResult result;
  SignatureMemo signatures;  // by sums + signature digests
  for (const auto& archive : archives) {
    // Podplane's own release files have no upstream signature: recheck_podplane_releases().
    if (kind_info(archive).recheck == Recheck::podplane_sums) continue;
    ++result.rows_checked;
    auto checks = signed_provenance(store, archive);
    if (checks.empty()) result.problems.push_back(row_words(archive) + ": no signed SHA256SUMS recorded for it");
    for (const auto& provenance : checks) check_engine_release(store, archive, provenance, signatures, result);
  }
  return result;
}

RecheckResult recheck_podplane_releases(const Store& store, const std::vector<Artifact>& archives) {
  RecheckResult result;
  std::map<std::string, std::map<std::string, std::string>> listed_by_version;  // parsed once per release
  for (const auto& archive : archives) {
    if (kind_info(archive).recheck != Recheck::podplane_sums) continue;  // not a podplane release file
    const std::string what = row_words(archive);
    ++result.rows_checked;
    const std::string sums_name = podplane_shasums_name(archive.version);
    try {
      auto listed = listed_by_version.find(archive.version);
      if (listed == listed_by_version.end()) {
        auto sums = store.find_artifact(ArtifactKind::tool_shasums, kPodplaneReleaseAddress, archive.version, "", sums_name);
        if (!sums || !store.has_object(sums->digest)) {
          result.problems.push_back(what + ": the store holds no " + sums_name + " for it");
          continue;
        }
        listed = listed_by_version.emplace(archive.version, lockfile::parse_shasums(store.read_object(sums->digest), sums_name)).first;
      }
      auto line = listed->second.find(archive.filename);
      if (line == listed->second.end()) {
        result.problems.push_back(what + ": " + sums_name + " lists no " + archive.filename);
      } else if (line->second != archive.digest) {
        result.problems.push_back(
            mismatch_message(what + ": " + sums_name + " does not list this file's digest", line->second, archive.digest));
      }
    } catch (const Error& error) {
      result.problems.push_back(what + ": " + error.what());
    }
  }
  return result;
}

bool rechecked_at(Recheck recheck, RecheckAt at) {
  switch (recheck) {
    case Recheck::unset:
    case Recheck::none: return false;
    // Only deps verify: bundle import would be the place for it too, but it would then refuse
    // volumes it takes today (issue 43 left that change for later).
    case Recheck::provider_signed_sums: return at == RecheckAt::verify;
    case Recheck::engine_signed_sums:
    case Recheck::podplane_sums: return true;
    // Only bundle import, under its policy: the store keeps a cosign key's fingerprint, not the key.
    case Recheck::cosign_under_policy: return at == RecheckAt::import;
  }
  return false;
}

const RecheckResult& RowsRecheck::of(Recheck recheck) const {
  static const RecheckResult none;
  auto it = results.find(recheck);
  return it == results.end() ? none : it->second;
}

std::optional<std::string> RowsRecheck::first_refusal() const {
  for (const auto& [recheck, result] : results) {
    if (result.problems.empty()) continue;
    const std::string& problem = result.problems.front();
    switch (recheck) {
      case Recheck::unset:
      case Recheck::none:
      case Recheck::cosign_under_policy: return problem;  // it names the image
      case Recheck::provider_signed_sums: return "provider package not verified: " + problem;
      case Recheck::engine_signed_sums: return "engine release not verified: " + problem;
      case Recheck::podplane_sums: return "podplane release not verified: " + problem;
    }
  }
  return std::nullopt;
}

RowsRecheck recheck_rows(const Store& store, const std::vector<Artifact>& rows, RecheckAt at, const CosignPolicy* cosign) {
  std::map<Recheck, std::vector<Artifact>> by_recheck;
  for (const auto& row : rows) {
    const Recheck recheck = kind_info(row).recheck;
    if (rechecked_at(recheck, at)) by_recheck[recheck].push_back(row);
  }
  RowsRecheck recheck;
  for (auto& [kind, checked] : by_recheck) {
    switch (kind) {
      case Recheck::unset:
      case Recheck::none: break;
      case Recheck::provider_signed_sums: recheck.results[kind] = recheck_provider_packages(store, checked); break;
      case Recheck::engine_signed_sums: recheck.results[kind] = recheck_tool_archives(store, checked); break;
      case Recheck::podplane_sums: recheck.results[kind] = recheck_podplane_releases(store, checked); break;
      case Recheck::cosign_under_policy: {
        if (cosign == nullptr || !cosign->requires_signatures()) break;
        RecheckResult& result = recheck.results[kind];
        result.rows_checked = checked.size();
        try {
          verify_stored_image_signatures(store, checked, *cosign);
        } catch (const Error& error) {
          result.problems.push_back(error.what());
        }
        break;
      }
    }
  }
  return recheck;
}

RowsRecheck recheck_store(const Store& store) { return recheck_rows(store, store.artifacts(), RecheckAt::verify); }

}  // namespace podplane::cache
