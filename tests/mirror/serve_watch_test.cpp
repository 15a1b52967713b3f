// `mirror serve` notices a new index generation by itself: a delta bundle imported while it
// runs is served without a signal, and a stream of requests during the import sees the old
// site or the new one, never half of it.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "lockfile/hash.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ProcessOptions;
using podplane::test::TempDir;
using podplane::test::run_podplane;

ProcessOptions in_store(const fs::path& deps_root) {
  ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = deps_root.string();
  return options;
}

TEST(ServeWatch, DeltaImportIsServedWithoutASignalAndNeverHalfWay) {
  TempDir temp;
  const fs::path served = temp / "deps";
  const fs::path online = temp / "online";
  (void)fill_store(served, temp / "work");
  fs::copy(served, online, fs::copy_options::recursive);
  add_null_release(online, temp / "work", "3.2.9", {"linux_amd64", "linux_arm64"});

  auto inventory = run_podplane({"bundle", "inventory", "-o", (temp / "inventory.json").string()}, in_store(served));
  ASSERT_EQ(inventory.exit_code, 0) << inventory.err;
  auto created = run_podplane({"bundle", "create", (temp / "delta.bundle").string(), "--since",
                               (temp / "inventory.json").string()},
                              in_store(online));
  ASSERT_EQ(created.exit_code, 0) << created.err;

  MirrorServe server(served, {"--listen", "127.0.0.1:0", "--plain-http", "--watch-interval", "50"}, temp / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  const std::string dir = server.url() + "/v1/mirror/registry.opentofu.org/hashicorp/null/";
  CurlSession http;
  ASSERT_EQ(http.fetch(dir + "3.2.9.json").status, 404);
  const auto versions_before = json::parse(http.fetch(dir + "index.json").body)["versions"].size();

  // Requests during the import: each answer is the old site's or the new one's.
  std::atomic<bool> imported{false};
  std::vector<std::string> half_states;
  std::size_t answered = 0;
  std::thread stream([&] {
    CurlSession client;
    for (int i = 0; i < 5000; ++i) {
      bool last = imported.load();
      auto listing = client.fetch(dir + "3.2.9.json");
      auto index = client.fetch(dir + "index.json");
      ++answered;
      if (listing.status == 200) {
        auto archives = json::parse(listing.body)["archives"];
        if (archives.size() != 2) half_states.push_back("3.2.9.json lists " + std::to_string(archives.size()) + " platforms");
      } else if (listing.status != 404) {
        half_states.push_back("3.2.9.json answered " + std::to_string(listing.status));
      }
      if (index.status != 200) half_states.push_back("index.json answered " + std::to_string(index.status));
      if (last) break;  // one round after the import ended
    }
  });
  auto import = run_podplane({"bundle", "import", (temp / "delta.bundle").string(), "--allow-unsigned"}, in_store(served));
  imported = true;
  stream.join();
  ASSERT_EQ(import.exit_code, 0) << import.out << import.err;
  EXPECT_TRUE(half_states.empty()) << half_states.front();
  EXPECT_GT(answered, 0u);

  // No signal: the server notices the new generation itself (bounded readiness poll).
  HttpAnswer listing;
  for (int i = 0; i < 1500 && listing.status != 200; ++i) {
    listing = http.fetch(dir + "3.2.9.json");
    if (listing.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(listing.status, 200) << server.log();
  EXPECT_EQ(json::parse(listing.body)["archives"].size(), 2u);
  EXPECT_EQ(json::parse(http.fetch(dir + "index.json").body)["versions"].size(), versions_before + 1);
  auto zip = http.fetch(dir + "terraform-provider-null_3.2.9_linux_arm64.zip");
  EXPECT_EQ(zip.status, 200);
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace podplane::serve_test
