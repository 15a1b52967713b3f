// cache/'s own headers sit at one level each (issue 43): a module (x.hpp with its x.cpp) includes
// only modules below it, never one that reaches back up to it. Read from the source tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

// Internal headers whose definitions live in another module's .cpp belong to that module.
const std::map<std::string, std::string> kDefinedIn = {
    {"store_impl", "store"},         // Store::Impl, defined in store.cpp
    {"provider_documents", "views"}, // defined in views.cpp beside the views that write them
};

std::string module_of(const std::string& stem) {
  auto it = kDefinedIn.find(stem);
  return it == kDefinedIn.end() ? stem : it->second;
}

// module → the cache/ modules its files include.
std::map<std::string, std::set<std::string>> cache_include_graph() {
  const fs::path dir = fs::path(PODPLANE_SOURCE_DIR) / "cache";
  const std::regex include(R"re(^\s*#\s*include\s+"cache/([a-z_0-9]+)\.hpp")re");
  std::map<std::string, std::set<std::string>> graph;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (ext != ".hpp" && ext != ".cpp") continue;
    const std::string from = module_of(entry.path().stem().string());
    graph[from];
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::smatch match;
      if (!std::regex_search(line, match, include)) continue;
      const std::string to = module_of(match[1].str());
      if (to != from) graph[from].insert(to);
    }
  }
  return graph;
}

// A cycle of the graph as "a -> b -> … -> a", or "" when it has none.
std::string find_cycle(const std::map<std::string, std::set<std::string>>& graph) {
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string cycle;
  std::function<bool(const std::string&)> visit = [&](const std::string& node) {
    state[node] = 1;
    path.push_back(node);
    for (const auto& next : graph.at(node)) {
      if (state[next] == 1) {
        for (auto it = std::find(path.begin(), path.end(), next); it != path.end(); ++it) cycle += *it + " -> ";
        cycle += next;
        return true;
      }
      if (state[next] == 0 && graph.count(next) && visit(next)) return true;
    }
    path.pop_back();
    state[node] = 2;
    return false;
  };
  for (const auto& [node, edges] : graph)
    if (state[node] == 0 && visit(node)) return cycle;
  return "";
}

TEST(CacheIncludeOrder, NoModuleOfCacheIncludesOneThatReachesBackToIt) {
  auto graph = cache_include_graph();
  ASSERT_GT(graph.size(), 10u);
  EXPECT_EQ(find_cycle(graph), "");
}

TEST(CacheIncludeOrder, TheCheckFindsACycle) {
  std::map<std::string, std::set<std::string>> graph = {{"rows", {}}, {"rules", {"rows", "store"}}, {"store", {"rules"}}};
  EXPECT_EQ(find_cycle(graph), "rules -> store -> rules");
}

// The table of kinds is pure data below the store: rows and the row rules, nothing that reads an index.
TEST(CacheIncludeOrder, TheKindsTableSitsBelowTheStore) {
  auto graph = cache_include_graph();
  ASSERT_TRUE(graph.count("kinds"));
  for (const auto& below : graph.at("kinds")) EXPECT_TRUE(below == "rows" || below == "row_rules") << below;
}

}  // namespace
}  // namespace podplane::test
