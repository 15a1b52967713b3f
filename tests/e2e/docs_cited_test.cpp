// Citations of our own documents resolve, so a reader of a clone can follow every one: wherever
// product code, a test, a script or a document cites `docs/<name>.md`, that file exists, and
// each `§N.M` it cites of a numbered document (docs/protocols.md, docs/podplane-layout.md,
// docs/design.md) is a heading of it. Design notes kept outside the repository are never cited.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

constexpr std::string_view kSection = "\xC2\xA7";  // "§" in UTF-8
constexpr std::string_view kThisFile = "tests/e2e/docs_cited_test.cpp";

struct Citation {
  std::size_t offset = 0;             // where "docs/" starts in the text
  std::string document;               // "docs/protocols.md"
  std::vector<std::string> sections;  // {"1.2", "4"}
};

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }

// Skips blanks, and one line break followed by a comment leader ("//", "#", "--", "*"), so a
// citation wrapped inside a comment is still read whole.
std::size_t skip_gap(std::string_view text, std::size_t at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  if (at < text.size() && text[at] == '\n') {
    ++at;
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
    for (std::string_view leader : {"//", "#", "--", "*"}) {
      if (text.substr(at).starts_with(leader)) {
        at += leader.size();
        break;
      }
    }
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  }
  return at;
}

std::size_t skip_quotes(std::string_view text, std::size_t at) {
  while (at < text.size() && (text[at] == '`' || text[at] == '\'' || text[at] == '"')) ++at;
  return at;
}

// A section number ("4", "1.2", "10.3.1") starting at `at`: the number, and where it ends.
std::optional<std::pair<std::string, std::size_t>> number_at(std::string_view text, std::size_t at) {
  auto digit = [&](std::size_t i) { return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0; };
  if (!digit(at)) return std::nullopt;
  std::size_t end = at;
  while (digit(end)) ++end;
  while (end + 1 < text.size() && text[end] == '.' && digit(end + 1)) {
    ++end;
    while (digit(end)) ++end;
  }
  return std::pair{std::string(text.substr(at, end - at)), end};
}

// "§1.2" at `at`: the number, and where it ends; nothing when there is none.
std::optional<std::pair<std::string, std::size_t>> section_at(std::string_view text, std::size_t at) {
  if (!text.substr(at).starts_with(kSection)) return std::nullopt;
  return number_at(text, at + kSection.size());
}

// Every `docs/<name>.md` in `text`, with the sections that follow it: "docs/x.md §1.2",
// "docs/x.md §1, §2 and §6.1", "`docs/x.md §1.2`, `§1.3`".
std::vector<Citation> citations_in(std::string_view text) {
  std::vector<Citation> out;
  for (std::size_t at = text.find("docs/"); at != std::string_view::npos; at = text.find("docs/", at + 1)) {
    if (at > 0 && (is_name_char(text[at - 1]) || text[at - 1] == '/' || text[at - 1] == '.')) continue;
    std::size_t end = at + 5;
    while (end < text.size() && (is_name_char(text[end]) || text[end] == '/')) ++end;
    if (end == at + 5 || !text.substr(end).starts_with(".md")) continue;
    end += 3;
    if (end < text.size() && is_name_char(text[end])) continue;  // ".mdx" and the like
    // A string literal holding the path alone names a file of test data (a zip entry), not a page.
    if (at > 0 && text[at - 1] == '"' && end < text.size() && text[end] == '"') continue;
    Citation citation{at, std::string(text.substr(at, end - at)), {}};
    std::size_t next = skip_gap(text, end);
    while (auto section = section_at(text, next)) {
      citation.sections.push_back(section->first);
      next = skip_gap(text, skip_quotes(text, section->second));
      if (next < text.size() && text[next] == ',') next = skip_gap(text, next + 1);
      if (text.substr(next).starts_with("and ")) next = skip_gap(text, next + 4);
      next = skip_quotes(text, next);
    }
    out.push_back(std::move(citation));
  }
  return out;
}

// The numbers of a document's numbered headings: "## 1. Provider registry protocol" gives "1",
// "### 1.2 Listing versions" gives "1.2". Lines inside ``` fences are code, not headings.
std::set<std::string> numbered_headings(std::string_view text) {
  std::set<std::string> out;
  std::istringstream lines{std::string(text)};
  bool in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("```")) in_code = !in_code;
    if (in_code) continue;
    std::size_t at = 0;
    while (at < line.size() && line[at] == '#') ++at;
    if (at == 0 || at >= line.size() || line[at] != ' ') continue;
    if (auto number = number_at(line, at + 1)) {
      const std::size_t end = number->second;
      if (end == line.size() || line[end] == ' ' || line[end] == '.') out.insert(number->first);
    }
  }
  return out;
}

// Ways of citing notes that live outside the repository; a clone cannot follow any of them.
std::vector<std::string> outside_citations_in(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view needle : {"DESIGN.md", "DESIGN's", "DESIGN \"", "tf-protocols", "shared/reference", "reference \xC2\xA7"}) {
    if (text.find(needle) != std::string_view::npos) out.emplace_back(needle);
  }
  for (std::size_t at = text.find("podplane.md"); at != std::string_view::npos; at = text.find("podplane.md", at + 1)) {
    if (at == 0 || !is_name_char(text[at - 1])) {
      out.emplace_back("podplane.md");
      break;
    }
  }
  return out;
}

std::size_t line_of(std::string_view text, std::size_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// The text files of the source tree: product code, tests, scripts, docs, build files. Not the
// VCS, build trees, golden data or fuzz corpora (bytes from outside), the npm packages the
// test tools install (node_modules: other projects' documents), nor binary files.
std::vector<fs::path> source_text_files() {
  const fs::path root = source_dir();
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path relative = it->path().lexically_relative(root);
    const std::string name = it->path().filename().string();
    if (it->is_directory()) {
      const std::string rel = relative.generic_string();
      const bool top_level = !relative.has_parent_path();
      if ((name.starts_with(".") && name != ".ci") || (top_level && name.starts_with("build")) ||
          rel == "tests/data" || rel == "tests/fuzz/corpus" || name == "node_modules") {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (!it->is_regular_file() || it->file_size() > 4 * 1024 * 1024) continue;
    if (relative.generic_string() == kThisFile) continue;  // it quotes bad citations on purpose
    out.push_back(relative);
  }
  return out;
}

struct Scan {
  std::size_t citations = 0;
  std::vector<std::string> problems;
};

// Checks every citation of `text` (from `where`) against the documents under `root`/docs.
void check_citations(const fs::path& root, const std::string& where, std::string_view text, Scan& scan) {
  for (const auto& citation : citations_in(text)) {
    ++scan.citations;
    const std::string at = where + ":" + std::to_string(line_of(text, citation.offset)) + ": ";
    const fs::path document = root / citation.document;
    if (!fs::is_regular_file(document)) {
      scan.problems.push_back(at + "cites " + citation.document + ", which does not exist");
      continue;
    }
    if (citation.sections.empty()) continue;
    const auto headings = numbered_headings(read_file(document));
    for (const auto& section : citation.sections) {
      if (headings.empty()) {
        scan.problems.push_back(at + "cites \xC2\xA7" + section + " of " + citation.document + ", which has no numbered headings");
      } else if (!headings.contains(section)) {
        scan.problems.push_back(at + "cites " + citation.document + " \xC2\xA7" + section + ", which is not a heading of it");
      }
    }
  }
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

bool is_binary(std::string_view text) { return text.find('\0') != std::string_view::npos; }

TEST(DocsCited, EveryCitedDocumentExistsAndEveryCitedSectionIsAHeadingOfIt) {
  const fs::path root = source_dir();
  Scan scan;
  for (const auto& file : source_text_files()) {
    const std::string text = read_file(root / file);
    if (!is_binary(text)) check_citations(root, file.generic_string(), text, scan);
  }
  EXPECT_TRUE(scan.problems.empty()) << joined(scan.problems);
  EXPECT_GT(scan.citations, 100u) << "the scan found too few citations to be looking at the tree";
}

TEST(DocsCited, NothingCitesNotesOutsideTheRepository) {
  const fs::path root = source_dir();
  std::vector<std::string> problems;
  for (const auto& file : source_text_files()) {
    const std::string text = read_file(root / file);
    if (is_binary(text)) continue;
    for (const auto& needle : outside_citations_in(text)) {
      problems.push_back(file.generic_string() + ": cites " + needle + ", which is not in the repository; cite docs/ instead");
    }
  }
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST(DocsCited, TheNumberedDocumentsAreNumbered) {
  for (const char* name : {"docs/protocols.md", "docs/podplane-layout.md", "docs/design.md"}) {
    const auto headings = numbered_headings(read_file(source_dir() / name));
    EXPECT_TRUE(headings.contains("1")) << name;
    EXPECT_TRUE(headings.contains("2")) << name;
  }
  const auto protocols = numbered_headings(read_file(source_dir() / "docs/protocols.md"));
  EXPECT_TRUE(protocols.contains("1.4") && protocols.contains("4.1") && protocols.contains("6.2"));
}

// The scanner itself: what it reads as a citation, and that a wrong one is reported.
TEST(DocsCited, TheScanReadsEveryFormOfCitationAndReportsABadOne) {
  auto found = citations_in("// see docs/protocols.md \xC2\xA7" "1.2, \xC2\xA7" "4 and \xC2\xA7" "6.1.\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].document, "docs/protocols.md");
  EXPECT_EQ(found[0].sections, (std::vector<std::string>{"1.2", "4", "6.1"}));

  found = citations_in("(`docs/podplane-layout.md \xC2\xA7" "1.2`, `\xC2\xA7" "1.3`) and [x](docs/design.md)");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].sections, (std::vector<std::string>{"1.2", "1.3"}));
  EXPECT_TRUE(found[1].sections.empty());

  found = citations_in("// as (docs/design.md\n// \xC2\xA7" "3.4), and tests/docs/x.md, mydocs/y.md, docs/z.mdx\n"
                       "{\"docs/x.md\", \"doc\\n\"}");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].sections, (std::vector<std::string>{"3.4"}));

  EXPECT_EQ(numbered_headings("# Title\n## 1. One\n### 1.2 Two\n## Plain\n```sh\n# 7 not a heading\n```\n#### 10.3.1 Deep\n"),
            (std::set<std::string>{"1", "1.2", "10.3.1"}));

  Scan scan;
  check_citations(source_dir(), "example.cpp",
                  "// docs/protocols.md \xC2\xA7" "1.4 holds; docs/protocols.md \xC2\xA7" "99.1 does not;\n"
                  "// docs/no-such-page.md; docs/mirror.md \xC2\xA7" "2\n",
                  scan);
  EXPECT_EQ(scan.citations, 4u);
  ASSERT_EQ(scan.problems.size(), 3u) << joined(scan.problems);
  EXPECT_NE(scan.problems[0].find("example.cpp:1: cites docs/protocols.md \xC2\xA7" "99.1"), std::string::npos);
  EXPECT_NE(scan.problems[1].find("example.cpp:2: cites docs/no-such-page.md, which does not exist"), std::string::npos);
  EXPECT_NE(scan.problems[2].find("docs/mirror.md, which has no numbered headings"), std::string::npos);

  EXPECT_EQ(outside_citations_in("see podplane-layout.md and docs/design.md"), std::vector<std::string>{});
  EXPECT_EQ(outside_citations_in("(podplane.md \xC2\xA7" "3.4)"), std::vector<std::string>{"podplane.md"});
  EXPECT_EQ(outside_citations_in("// tf-protocols.md \xC2\xA7" "2"), std::vector<std::string>{"tf-protocols"});
}

}  // namespace
}  // namespace podplane::test
