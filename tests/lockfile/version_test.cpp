// Versions and constraints with go-versions' rules (docs/protocols.md §7, §4.2).
#include "lockfile/version.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace podplane::lockfile {
namespace {

Version v(const char* text) { return Version::parse(text); }

TEST(Version, ParsesAndCanonicalises) {
  EXPECT_EQ(v("1.2.3").str(), "1.2.3");
  EXPECT_EQ(v("1.2").str(), "1.2.0");
  EXPECT_EQ(v("1").str(), "1.0.0");
  EXPECT_EQ(v("1.2.3-beta.1+build.5").str(), "1.2.3-beta.1+build.5");
  auto version = v("6.0.0-rc-1");
  EXPECT_EQ(version.prerelease, "rc-1");
  EXPECT_TRUE(version.is_prerelease());
}

TEST(Version, RejectsMalformed) {
  for (const char* bad : {"", "v1.2.3", "1.2.3.4", "1..2", "1.*", "x", "1.2.3-", "1.2.3+", "1.2.3-be ta", "-1.0.0",
                          "99999999999999999999999.0.0"}) {
    EXPECT_THROW(Version::parse(bad), Error) << bad;
  }
}

TEST(Version, OrderingFollowsGoVersions) {
  EXPECT_LT(v("1.2.3"), v("1.10.0"));
  EXPECT_LT(v("1.0.0-beta"), v("1.0.0"));
  EXPECT_GT(v("1.0.0"), v("1.0.0-rc.1"));
  EXPECT_LT(v("1.0.0-alpha"), v("1.0.0-beta"));
  EXPECT_LT(v("1.0.0-2"), v("1.0.0-10"));       // digits by length first
  EXPECT_LT(v("1.0.0-99"), v("1.0.0-alpha"));   // all-digit below alphanumeric
  EXPECT_LT(v("1.0.0-rc.2"), v("1.0.0-rc.10"));
  EXPECT_EQ(v("1.0.0+a"), v("1.0.0+b"));        // metadata ignored
  // The quirk: fewer remaining parts is smaller before identifiers are compared.
  EXPECT_LT(v("1.0.0-beta"), v("1.0.0-alpha.1"));
  EXPECT_LT(v("1.0.0-rc"), v("1.0.0-alpha.beta"));
}

TEST(Constraints, EmptyAllowsEveryReleaseButNoPrerelease) {
  auto any = Constraints::parse("");
  EXPECT_TRUE(any.empty());
  EXPECT_TRUE(any.allows(v("0.0.1")));
  EXPECT_FALSE(any.allows(v("2.0.0-beta")));
  EXPECT_EQ(any.canonical(), "");
}

TEST(Constraints, Operators) {
  auto c = [](const char* text) { return Constraints::parse(text); };
  EXPECT_TRUE(c("= 1.2.0").allows(v("1.2.0")));
  EXPECT_TRUE(c("1.2").allows(v("1.2.0")));
  EXPECT_FALSE(c("1.2").allows(v("1.2.1")));
  EXPECT_FALSE(c("!= 1.2.0").allows(v("1.2.0")));
  EXPECT_TRUE(c("!= 1.2.0").allows(v("1.2.1")));
  EXPECT_TRUE(c("> 1.2.0").allows(v("1.2.1")));
  EXPECT_FALSE(c("> 1.2.0").allows(v("1.2.0")));
  EXPECT_TRUE(c(">= 1.2.0").allows(v("1.2.0")));
  EXPECT_TRUE(c("< 2").allows(v("1.99.99")));
  EXPECT_FALSE(c("< 2").allows(v("2.0.0")));
  EXPECT_TRUE(c("<= 2").allows(v("2.0.0")));
  EXPECT_TRUE(c(">=1.0,<2.0").allows(v("1.5.0")));
  EXPECT_FALSE(c(">=1.0, <2.0").allows(v("2.0.0")));
}

TEST(Constraints, Pessimistic) {
  auto patch = Constraints::parse("~> 1.2.3");
  EXPECT_TRUE(patch.allows(v("1.2.3")));
  EXPECT_TRUE(patch.allows(v("1.2.99")));
  EXPECT_FALSE(patch.allows(v("1.3.0")));
  EXPECT_FALSE(patch.allows(v("1.2.2")));
  auto minor = Constraints::parse("~> 1.2");
  EXPECT_TRUE(minor.allows(v("1.9.0")));
  EXPECT_FALSE(minor.allows(v("2.0.0")));
  EXPECT_FALSE(minor.allows(v("1.1.9")));
  auto major = Constraints::parse("~> 1");
  EXPECT_TRUE(major.allows(v("1.0.0")));
  EXPECT_TRUE(major.allows(v("1.9.0")));
  EXPECT_FALSE(major.allows(v("2.0.0")));
  // A prerelease boundary: the upper bound drops it.
  auto pre = Constraints::parse("~> 1.2.0-beta");
  EXPECT_TRUE(pre.allows(v("1.2.0")));
  EXPECT_FALSE(pre.allows(v("1.3.0")));
}

TEST(Constraints, PrereleasesOnlyWhenNamedExactly) {
  EXPECT_TRUE(Constraints::parse("= 1.0.0-beta").allows(v("1.0.0-beta")));
  EXPECT_TRUE(Constraints::parse("1.0.0-beta").allows(v("1.0.0-beta")));
  EXPECT_FALSE(Constraints::parse(">= 1.0.0-beta").allows(v("1.0.0-beta")));
  EXPECT_FALSE(Constraints::parse(">= 1.0.0-beta").allows(v("1.0.0-rc")));
  EXPECT_TRUE(Constraints::parse(">= 1.0.0-beta").allows(v("1.0.0")));
  EXPECT_FALSE(Constraints::parse("~> 1.0").allows(v("1.1.0-rc1")));
}

TEST(Constraints, SyntaxErrorsQuoteTheInput) {
  for (const char* bad : {"=> 1.0", "=< 1.0", ">=  1.0", "v1.0", ">= v1.0", "1.0 || 2.0", "1.0 - 2.0", "1.0 2.0",
                          "~> 1.*", "1.2.3.4", ">=", "=~ 1", "1.0,,2.0"}) {
    try {
      (void)Constraints::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(bad), std::string::npos) << error.what();
    }
  }
  try {
    (void)Constraints::parse("=> 1.0");
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("did you mean \">=\""), std::string::npos) << error.what();
  }
}

TEST(Constraints, CanonicalStringSortsZeroFillsAndDeduplicates) {
  EXPECT_EQ(Constraints::parse(">= 2").canonical(), ">= 2.0.0");
  EXPECT_EQ(Constraints::parse("~> 1").canonical(), "~> 1.0");
  EXPECT_EQ(Constraints::parse("~> 1.0").canonical(), "~> 1.0");
  EXPECT_EQ(Constraints::parse("~> 1.0.0").canonical(), "~> 1.0.0");
  EXPECT_EQ(Constraints::parse("= 1.2").canonical(), "1.2.0");
  EXPECT_EQ(Constraints::parse("< 3.0, >= 2.0, >= 2, != 2.5.0").canonical(), ">= 2.0.0, != 2.5.0, < 3.0.0");
  // Equal boundaries: > >= = ~>(patch) ~>(minor) <= < !=.
  EXPECT_EQ(Constraints::parse("!= 1.0.0, < 1.0.0, <= 1.0.0, ~> 1.0, ~> 1.0.0, = 1.0.0, >= 1.0.0, > 1.0.0").canonical(),
            "> 1.0.0, >= 1.0.0, 1.0.0, ~> 1.0.0, ~> 1.0, <= 1.0.0, < 1.0.0, != 1.0.0");
  EXPECT_EQ(Constraints::parse(">= 1.0.0-beta+x").canonical(), ">= 1.0.0-beta+x");
}

TEST(Constraints, MergeDeduplicatesAcrossModules) {
  auto merged = Constraints::merge({Constraints::parse(">= 6.0"), Constraints::parse(">= 6.0.0, < 7"),
                                    Constraints::parse("~> 6.2")});
  EXPECT_EQ(merged.clauses().size(), 3u);
  EXPECT_EQ(merged.canonical(), ">= 6.0.0, ~> 6.2, < 7.0.0");
  EXPECT_TRUE(merged.allows(v("6.5.0")));
  EXPECT_FALSE(merged.allows(v("6.1.0")));
}

TEST(Constraints, NewestAllowed) {
  std::vector<Version> available = {v("5.9.0"), v("6.0.0"), v("6.2.1"), v("6.3.0-beta1"), v("6.10.0"), v("7.0.0")};
  EXPECT_EQ(newest_allowed(available, Constraints::parse("~> 6.0"))->str(), "6.10.0");
  EXPECT_EQ(newest_allowed(available, Constraints::parse("~> 6.2.0"))->str(), "6.2.1");
  EXPECT_EQ(newest_allowed(available, Constraints::parse(""))->str(), "7.0.0");
  EXPECT_EQ(newest_allowed(available, Constraints::parse("6.3.0-beta1"))->str(), "6.3.0-beta1");
  EXPECT_FALSE(newest_allowed(available, Constraints::parse("> 7.0.0")).has_value());
  EXPECT_FALSE(newest_allowed({}, Constraints::parse("")).has_value());
}

}  // namespace
}  // namespace podplane::lockfile
