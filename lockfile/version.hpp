#pragma once
// Versions and constraints with OpenTofu's rules (apparentlymart/go-versions, Ruby style):
// =, !=, >, >=, <, <=, ~>; prereleases only when named exactly by "=".
// Parse functions throw podplane::Error with the offending text.
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::lockfile {

struct Version {
  unsigned long major = 0, minor = 0, patch = 0;
  std::string prerelease;  // without '-'
  std::string metadata;    // without '+', ignored for ordering

  // Accepts 1 to 3 numeric parts ("1.2" → 1.2.0); rejects a "v" prefix.
  static Version parse(std::string_view text);
  // Canonical MAJOR.MINOR.PATCH[-pre][+meta].
  std::string str() const;
  bool is_prerelease() const { return !prerelease.empty(); }
};
std::strong_ordering operator<=>(const Version& a, const Version& b);  // go-versions order
bool operator==(const Version& a, const Version& b);

enum class ConstraintOp { eq, ne, gt, ge, lt, le, pessimistic };

struct ConstraintClause {
  ConstraintOp op = ConstraintOp::eq;
  Version boundary;
  int parts_given = 3;  // how many numeric parts were written: "~> 1.2" is 2 (minor form)
  bool operator==(const ConstraintClause&) const;
};

class Constraints {
 public:
  // "" means any version. Comma-separated clauses, all must hold.
  static Constraints parse(std::string_view text);
  // Merge several modules' constraints for one provider (deduplicated).
  static Constraints merge(const std::vector<Constraints>& all);

  bool allows(const Version& version) const;
  // The lock file's canonical string: sorted, zero-filled, ", " joined (docs/protocols.md §4.2).
  std::string canonical() const;
  bool empty() const { return clauses_.empty(); }
  const std::vector<ConstraintClause>& clauses() const { return clauses_; }

 private:
  std::vector<ConstraintClause> clauses_;
};

// The newest version allowed by the constraints, or nullopt.
std::optional<Version> newest_allowed(const std::vector<Version>& available, const Constraints& constraints);

}  // namespace podplane::lockfile
