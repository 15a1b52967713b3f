// The generation replicas are compared by (docs/operations.md "Replicas"): an id of exactly what
// a store holds. Stores filled with the same rows in another order have the same id; a prune or
// an import changes it. `mirror serve` answers it on /healthz (with the newest import's time),
// 503 on /healthz?generation=<another>, and as a label of /metrics, and keeps it in step with
// the index when an import lands while it serves.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/clock.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ProcessOptions;
using podplane::test::run_podplane;
using podplane::test::TempDir;

const std::string kNull = "registry.opentofu.org/hashicorp/null";

// One provider release per version, its zip made once so that every store gets the same bytes.
struct Releases {
  std::map<std::string, fs::path> zips;
  Releases(const fs::path& work, const std::vector<std::string>& versions) {
    for (const auto& version : versions) zips[version] = make_provider_zip(work, "null", version, "linux_amd64", 1024);
  }
  void add(const fs::path& deps_root, const std::string& version) const {
    auto store = cache::Store::open(deps_root);
    (void)store.add_artifact(package_row(store, zips.at(version), kNull, version, "linux_amd64", cache::Trust::unverified));
  }
};

std::string generation_of(const fs::path& deps_root) {
  auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
  std::string generation;
  store.read_snapshot([&] { generation = mirror::MirrorSite::build(store).generation(); });
  return generation;
}

ProcessOptions at(const fs::path& deps_root) {
  ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = deps_root.string();
  return options;
}

TEST(ReplicaGeneration, EqualContentHasEqualIdsWhateverTheOrderAndAPruneChangesIt) {
  TempDir temp;
  Releases releases(temp / "work", {"3.2.3", "3.2.4", "3.2.5"});
  for (const auto& version : {"3.2.3", "3.2.4", "3.2.5"}) releases.add(temp / "forward", version);
  for (const auto& version : {"3.2.5", "3.2.3", "3.2.4"}) releases.add(temp / "shuffled", version);
  releases.add(temp / "newest-only", "3.2.5");

  const std::string forward = generation_of(temp / "forward");
  ASSERT_EQ(forward.size(), 64u) << forward;
  EXPECT_EQ(generation_of(temp / "shuffled"), forward) << "same rows, another order";
  EXPECT_EQ(cache::Store::open(temp / "forward").content_generation(), forward);
  EXPECT_NE(generation_of(temp / "newest-only"), forward);

  // The audit log and times are not content: an audit entry changes nothing.
  cache::Store::open(temp / "shuffled").audit("fetch", "test", json::object());
  EXPECT_EQ(generation_of(temp / "shuffled"), forward);

  // A prune that removes 3.2.3 and 3.2.4 leaves what the newest-only store holds.
  auto pruned = run_podplane({"deps", "prune", "--keep", "1"}, at(temp / "forward"));
  ASSERT_EQ(pruned.exit_code, 0) << show(pruned);
  EXPECT_EQ(generation_of(temp / "forward"), generation_of(temp / "newest-only"));
  EXPECT_NE(generation_of(temp / "forward"), generation_of(temp / "shuffled"));
}

// The value of the sample `series{labels}` in a Prometheus exposition, or "" when absent.
std::string sample_line(const std::string& exposition, const std::string& series) {
  for (std::size_t at = exposition.find(series); at != std::string::npos; at = exposition.find(series, at + 1)) {
    if (at > 0 && exposition[at - 1] != '\n') continue;
    auto end = exposition.find('\n', at);
    return exposition.substr(at, end - at);
  }
  return "";
}

TEST(ReplicaGeneration, HealthzAndMetricsFollowAnImportWhileServing) {
  TempDir temp;
  Releases releases(temp / "work", {"3.2.4", "3.2.5"});
  releases.add(temp / "replica", "3.2.4");
  releases.add(temp / "source", "3.2.4");
  releases.add(temp / "source", "3.2.5");
  const std::string before = generation_of(temp / "replica");

  MirrorServe serve(temp / "replica", {"--plain-http", "--listen", "127.0.0.1:0", "--watch-interval", "50"}, temp / "serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  CurlSession http;
  auto health = http.fetch(serve.url() + "/healthz");
  ASSERT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(health.header("content-type"), "application/json");
  auto document = json::parse(health.body);
  EXPECT_EQ(document["status"], "ok");
  EXPECT_EQ(document["generation"], before);
  EXPECT_TRUE(document["last_import"].is_null()) << health.body;
  EXPECT_EQ(http.fetch(serve.url() + "/healthz?generation=" + before).status, 200);
  auto other = http.fetch(serve.url() + "/healthz?generation=" + std::string(64, 'a'));
  EXPECT_EQ(other.status, 503) << other.body;
  EXPECT_EQ(json::parse(other.body)["status"], "other_generation");
  EXPECT_EQ(json::parse(other.body)["generation"], before);
  auto metrics = http.fetch(serve.url() + "/metrics").body;
  EXPECT_EQ(sample_line(metrics, "podplane_mirror_store_generation{"),
            "podplane_mirror_store_generation{generation=\"" + before + "\"} 1")
      << metrics;
  EXPECT_EQ(sample_line(metrics, "podplane_mirror_last_import_timestamp_seconds"), "") << "no import yet";

  // A delta lands: the served generation becomes the source's, with the import's time.
  auto bundle = (temp / "delta.bundle").string();
  auto created = run_podplane({"bundle", "create", bundle}, at(temp / "source"));
  ASSERT_EQ(created.exit_code, 0) << show(created);
  const auto imported_at = std::time(nullptr);
  auto imported = run_podplane({"bundle", "import", bundle, "--allow-unsigned"}, at(temp / "replica"));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  const std::string after = generation_of(temp / "replica");
  EXPECT_EQ(after, generation_of(temp / "source")) << "the same rows as the bundle's source";
  ASSERT_NE(after, before);

  // The import commits its rows, then its audit record: the watch may serve the new rows one
  // reload before it knows the import's time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (json seen; std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    seen = json::parse(http.fetch(serve.url() + "/healthz").body);
    if (seen["generation"] == after && seen["last_import"].is_string()) break;
  }
  document = json::parse(http.fetch(serve.url() + "/healthz").body);
  EXPECT_EQ(document["generation"], after) << serve.log();
  ASSERT_TRUE(document["last_import"].is_string()) << document.dump();
  auto import_time = parse_utc_timestamp(document["last_import"].get<std::string>());
  ASSERT_TRUE(import_time.has_value());
  EXPECT_LE(std::abs(*import_time - imported_at), 60);
  EXPECT_EQ(http.fetch(serve.url() + "/healthz?generation=" + before).status, 503) << "the old generation is not this one";
  EXPECT_EQ(http.fetch(serve.url() + "/healthz?generation=" + after).status, 200);
  metrics = http.fetch(serve.url() + "/metrics").body;
  EXPECT_EQ(sample_line(metrics, "podplane_mirror_store_generation{"),
            "podplane_mirror_store_generation{generation=\"" + after + "\"} 1");
  EXPECT_EQ(sample_line(metrics, "podplane_mirror_last_import_timestamp_seconds"),
            "podplane_mirror_last_import_timestamp_seconds " + std::to_string(*import_time));
}

}  // namespace
}  // namespace podplane::serve_test
