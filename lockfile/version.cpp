#include "lockfile/version.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <tuple>

#include "base/error.hpp"

namespace podplane::lockfile {
namespace {

bool all_digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
}

// go-versions lessThanStr: all-digit identifiers (the empty one included) sort first and
// compare by length then bytes; others compare as bytes.
bool identifier_less(std::string_view a, std::string_view b) {
  bool a_numeric = all_digits(a), b_numeric = all_digits(b);
  if (a_numeric != b_numeric) return a_numeric;
  if (a_numeric && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

// go-versions VersionExtra.LessThan, quirk included: as soon as one side has no '.' left
// and the other has, the shorter one is smaller before the current identifiers are compared.
bool extra_less(std::string_view a, std::string_view b) {
  if (a == b) return false;
  while (true) {
    auto da = a.find('.'), db = b.find('.');
    if (da == std::string_view::npos && db != std::string_view::npos) return true;
    if (db == std::string_view::npos && da != std::string_view::npos) return false;
    if (da == std::string_view::npos) return identifier_less(a, b);
    std::string_view ha = a.substr(0, da), hb = b.substr(0, db);
    if (ha != hb) return identifier_less(ha, hb);
    a.remove_prefix(da + 1);
    b.remove_prefix(db + 1);
  }
}

bool valid_extra(std::string_view text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '.'; });
}

struct ParsedVersion {
  Version version;
  int parts_given = 0;
};

// MAJOR[.MINOR[.PATCH]][-PRE][+META]; `what` names the input in errors.
ParsedVersion parse_version_text(std::string_view text, const std::string& what) {
  auto fail = [&](const std::string& why) -> ParsedVersion {
    throw Error("invalid version \"" + std::string(text) + "\"" + what + ": " + why);
  };
  if (text.empty()) return fail("empty version");
  if (text.front() == 'v' || text.front() == 'V') return fail("a \"v\" prefix should not be used");
  ParsedVersion parsed;
  std::string_view rest = text;
  auto plus = rest.find('+');
  if (plus != std::string_view::npos) {
    std::string_view meta = rest.substr(plus + 1);
    if (!valid_extra(meta)) return fail("invalid build metadata");
    parsed.version.metadata = std::string(meta);
    rest = rest.substr(0, plus);
  }
  auto dash = rest.find('-');
  if (dash != std::string_view::npos) {
    std::string_view pre = rest.substr(dash + 1);
    if (!valid_extra(pre)) return fail("invalid prerelease");
    parsed.version.prerelease = std::string(pre);
    rest = rest.substr(0, dash);
  }
  unsigned long* parts[] = {&parsed.version.major, &parsed.version.minor, &parsed.version.patch};
  while (true) {
    auto dot = rest.find('.');
    std::string_view number = rest.substr(0, dot);
    if (number == "*" || number == "x" || number == "X") return fail("wildcards are not allowed");
    if (number.empty() || !all_digits(number)) {
      return fail("required format is up to three non-negative integers separated by periods");
    }
    if (parsed.parts_given == 3) return fail("too many numbered portions; only three are allowed (major, minor, patch)");
    unsigned long value = 0;
    for (char c : number) {
      unsigned digit = static_cast<unsigned>(c - '0');
      if (value > (std::numeric_limits<unsigned long>::max() - digit) / 10) return fail("number too large");
      value = value * 10 + digit;
    }
    *parts[parsed.parts_given++] = value;
    if (dot == std::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  return parsed;
}

// Ordering of the canonical string: operator priority at equal boundaries.
int operator_priority(const ConstraintClause& clause) {
  switch (clause.op) {
    case ConstraintOp::gt: return 1;
    case ConstraintOp::ge: return 2;
    case ConstraintOp::eq: return 3;
    case ConstraintOp::pessimistic: return clause.parts_given == 3 ? 4 : 5;
    case ConstraintOp::le: return 6;
    case ConstraintOp::lt: return 7;
    case ConstraintOp::ne: return 8;
  }
  return 0;
}

bool is_patch_form(const ConstraintClause& clause) {
  return clause.op == ConstraintOp::pessimistic && clause.parts_given == 3;
}

// The identity of a clause for deduplication: the operator, the pessimistic form and the
// zero-filled boundary, metadata included (as Terraform's map of SelectionSpec).
auto clause_key(const ConstraintClause& c) {
  return std::tie(c.op, c.boundary.major, c.boundary.minor, c.boundary.patch, c.boundary.prerelease,
                  c.boundary.metadata);
}

bool exactly_equal(const Version& a, const Version& b) { return a == b && a.metadata == b.metadata; }

bool clause_allows(const ConstraintClause& clause, const Version& version) {
  const Version& bound = clause.boundary;
  switch (clause.op) {
    case ConstraintOp::eq:
      return exactly_equal(version, bound);  // an exact set holds the version with its metadata
    case ConstraintOp::ne:
      return !clause_allows(ConstraintClause{ConstraintOp::eq, bound, clause.parts_given}, version);
    case ConstraintOp::gt: return version > bound;
    case ConstraintOp::ge: return version >= bound;
    case ConstraintOp::lt: return version < bound;
    case ConstraintOp::le: return version <= bound;
    case ConstraintOp::pessimistic: {
      Version upper;
      if (clause.parts_given == 3) {
        upper.major = bound.major;
        upper.minor = bound.minor + 1;
      } else {
        upper.major = bound.major + 1;
      }
      return version >= bound && version < upper;
    }
  }
  return false;
}

}  // namespace

Version Version::parse(std::string_view text) { return parse_version_text(text, "").version; }

std::string Version::str() const {
  std::string out = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  if (!prerelease.empty()) out += "-" + prerelease;
  if (!metadata.empty()) out += "+" + metadata;
  return out;
}

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  if (auto c = std::tie(a.major, a.minor, a.patch) <=> std::tie(b.major, b.minor, b.patch); c != 0) return c;
  if (a.prerelease == b.prerelease) return std::strong_ordering::equal;
  if (a.prerelease.empty()) return std::strong_ordering::greater;
  if (b.prerelease.empty()) return std::strong_ordering::less;
  return extra_less(a.prerelease, b.prerelease) ? std::strong_ordering::less : std::strong_ordering::greater;
}

bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

bool ConstraintClause::operator==(const ConstraintClause& other) const {
  return clause_key(*this) == clause_key(other) && is_patch_form(*this) == is_patch_form(other);
}

Constraints Constraints::parse(std::string_view text) {
  Constraints result;
  const std::string what = " in version constraint \"" + std::string(text) + "\"";
  auto fail = [&](const std::string& why) -> Constraints {
    throw Error("invalid version constraint \"" + std::string(text) + "\": " + why);
  };
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::size_t at = 0;
  auto skip_spaces = [&] {
    while (at < text.size() && is_space(text[at])) ++at;
  };
  skip_spaces();
  while (at < text.size()) {
    std::size_t op_start = at;
    while (at < text.size() && std::string_view("<>=!~").find(text[at]) != std::string_view::npos) ++at;
    std::string_view op = text.substr(op_start, at - op_start);
    std::size_t sep_start = at;
    while (at < text.size() && is_space(text[at])) ++at;
    std::size_t sep = at - sep_start;
    std::size_t version_start = at;
    while (at < text.size() && text[at] != ',' && !is_space(text[at])) ++at;
    std::string_view version_text = text.substr(version_start, at - version_start);

    ConstraintClause clause;
    if (op == "=" || op.empty()) clause.op = ConstraintOp::eq;
    else if (op == "!=") clause.op = ConstraintOp::ne;
    else if (op == ">") clause.op = ConstraintOp::gt;
    else if (op == ">=") clause.op = ConstraintOp::ge;
    else if (op == "<") clause.op = ConstraintOp::lt;
    else if (op == "<=") clause.op = ConstraintOp::le;
    else if (op == "~>") clause.op = ConstraintOp::pessimistic;
    else if (op == "=<") return fail("invalid constraint operator \"=<\"; did you mean \"<=\"?");
    else if (op == "=>") return fail("invalid constraint operator \"=>\"; did you mean \">=\"?");
    else return fail("invalid constraint operator \"" + std::string(op) + "\"");
    if (sep > 1) return fail("only one space is expected after the operator \"" + std::string(op) + "\"");
    if (!version_text.empty() && (version_text.front() == 'v' || version_text.front() == 'V')) {
      return fail("a \"v\" prefix should not be used when specifying versions");
    }
    if (version_text.empty()) return fail("a version is required after \"" + std::string(op) + "\"");
    ParsedVersion parsed = parse_version_text(version_text, what);
    clause.boundary = std::move(parsed.version);
    clause.parts_given = parsed.parts_given;
    result.clauses_.push_back(std::move(clause));

    skip_spaces();
    if (at < text.size()) {
      if (text[at] == 'v') return fail("a \"v\" prefix should not be used when specifying versions");
      if (text[at] == '|') return fail("only one constraint per clause; use commas, not \"||\"");
      if (text[at] == '-') return fail("range constraints are not supported");
      if (text[at] != ',') return fail("missing comma after \"" + std::string(text.substr(op_start, at - op_start)) + "\"");
      ++at;
      skip_spaces();
    }
  }
  return result;
}

Constraints Constraints::merge(const std::vector<Constraints>& all) {
  Constraints merged;
  for (const auto& constraints : all) {
    for (const auto& clause : constraints.clauses_) {
      if (std::find(merged.clauses_.begin(), merged.clauses_.end(), clause) == merged.clauses_.end()) {
        merged.clauses_.push_back(clause);
      }
    }
  }
  return merged;
}

bool Constraints::allows(const Version& version) const {
  // Prereleases only when some clause names them exactly (go-versions RequestedByConstraints).
  if (version.is_prerelease()) {
    bool named_exactly = std::any_of(clauses_.begin(), clauses_.end(), [](const ConstraintClause& clause) {
      return clause.op == ConstraintOp::eq;
    });
    if (!named_exactly) return false;
  }
  return std::all_of(clauses_.begin(), clauses_.end(),
                     [&](const ConstraintClause& clause) { return clause_allows(clause, version); });
}

std::string Constraints::canonical() const {
  std::vector<ConstraintClause> unique;
  for (const auto& clause : clauses_) {
    if (std::find(unique.begin(), unique.end(), clause) == unique.end()) unique.push_back(clause);
  }
  std::stable_sort(unique.begin(), unique.end(), [](const ConstraintClause& a, const ConstraintClause& b) {
    if (a.boundary != b.boundary) return a.boundary < b.boundary;
    if (a.boundary.metadata != b.boundary.metadata) return extra_less(a.boundary.metadata, b.boundary.metadata);
    return operator_priority(a) < operator_priority(b);
  });
  std::string out;
  for (const auto& clause : unique) {
    if (!out.empty()) out += ", ";
    switch (clause.op) {
      case ConstraintOp::gt: out += "> "; break;
      case ConstraintOp::ge: out += ">= "; break;
      case ConstraintOp::eq: break;
      case ConstraintOp::pessimistic: out += "~> "; break;
      case ConstraintOp::le: out += "<= "; break;
      case ConstraintOp::lt: out += "< "; break;
      case ConstraintOp::ne: out += "!= "; break;
    }
    const Version& v = clause.boundary;
    out += std::to_string(v.major) + "." + std::to_string(v.minor);
    if (!(clause.op == ConstraintOp::pessimistic && clause.parts_given != 3)) out += "." + std::to_string(v.patch);
    if (!v.prerelease.empty()) out += "-" + v.prerelease;
    if (!v.metadata.empty()) out += "+" + v.metadata;
  }
  return out;
}

std::optional<Version> newest_allowed(const std::vector<Version>& available, const Constraints& constraints) {
  std::optional<Version> newest;
  for (const auto& version : available) {
    if (!constraints.allows(version)) continue;
    if (!newest || version > *newest) newest = version;
  }
  return newest;
}

}  // namespace podplane::lockfile
