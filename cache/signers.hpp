#pragma once
// Who signed a row, by the table's Signer rule for its kind (cache/kinds.hpp): the one lookup
// the catalogue (mirror/catalogue.cpp) and the transfer report (bundle/report.cpp) ask. It
// reads rows and provenance it is handed and never the store; not thread-safe.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/image_tops.hpp"
#include "cache/openpgp.hpp"
#include "cache/rows.hpp"

namespace podplane::cache {

// Whose keys signed a row: the fingerprints, and where a keys document handed in knows them
// the user ids of the first one.
struct Signers {
  std::vector<std::string> fingerprints;
  std::vector<std::string> names;
};

// The provenance rows of artifacts (by Artifact::id) and the keys documents their checks name
// (by object digest): what the lookup reads.
using ProvenanceByRow = std::map<std::int64_t, std::vector<Provenance>>;
using KeysByDocument = std::map<std::string, std::vector<KeyIdentity>>;

// The newest check of a row (by when, then by result), or nullopt when it has none.
[[nodiscard]] std::optional<Provenance> newest_check(const ProvenanceByRow& provenance, const Artifact& row);

class SignerLookup {
 public:
  // `rows`: every row the lookup may be asked about and those that sign them (an image's
  // index and its cosign signature); all three are kept by reference and must outlive it.
  SignerLookup(const std::vector<Artifact>& rows, const ProvenanceByRow& provenance, const KeysByDocument& keys);

  [[nodiscard]] Signers of(const Artifact& row) const;

 private:
  void add_cosign_signature(const Artifact& signature);
  std::vector<std::string> user_ids(const Provenance& provenance) const;
  std::vector<std::string> own_keys(const Artifact& row) const;

  const ProvenanceByRow& provenance_;
  const KeysByDocument& keys_;
  ImageTops tops_;  // what an image's tag names, which its cosign signature signs
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> cosign_;  // (address, signed digest) → keys
};

}  // namespace podplane::cache
