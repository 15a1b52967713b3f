// images_bench: fetch time and peak RSS of `podplane deps images` (every platform of an image of
// ~200 MiB across 3 platforms: one shared 50 MiB layer, one 50 MiB layer per platform) against
// `skopeo copy --all` of the same image from the same docker-registry on loopback, as users run
// it (into an OCI layout), and against `curl --parallel --parallel-max 8` of the same index,
// manifests and blobs (the wire's limit), measured in the same run. Prints each with its CPU
// time, the ratios, and the load average; and the physical floors (bench/support/
// physical_floors.hpp): the wire, and the sha256 of every file it fetched divided by the cores.
//   usage: images_bench [--layer-mib N] [--rounds N]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/support/curl_parallel.hpp"
#include "bench/support/measured_run.hpp"
#include "bench/support/physical_floors.hpp"
#include "tests/mirror/registry_fixture.hpp"

namespace ps = podplane::serve_test;
namespace fs = std::filesystem;

using Child = podplane::bench::MeasuredRun;

Child measure(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env) {
  return podplane::bench::run_measured(argv, env);
}

int main(int argc, char** argv) {
  int layer_mib = 50;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--layer-mib") == 0) layer_mib = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  }
  podplane::test::TempDir temp;
  ps::DockerRegistry registry(temp / "registry");
  std::string bytes = std::to_string(std::int64_t{layer_mib} * 1024 * 1024);
  auto summary = ps::push_image(temp / "work", registry, "bench/big", "1.0", {"linux/amd64", "linux/arm64", "linux/arm/v7"},
                                "bench", {"--shared-size", bytes, "--own-size", bytes});
  // What a client fetches: the index, each platform's manifest, every blob (configs and layers).
  const std::string repo = registry.base() + "/v2/bench/big/";
  std::vector<std::string> urls{repo + "manifests/" + summary["index"].get<std::string>()};
  for (const auto& [platform, manifest] : summary["manifests"].items()) {
    urls.push_back(repo + "manifests/" + manifest["digest"].get<std::string>());
  }
  for (const auto& blob : summary["blobs"]) urls.push_back(repo + "blobs/" + blob.get<std::string>());
  const podplane::bench::CurlParallelOptions curl_options{
      .ca_file = {},
      .headers = {"Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
                  "application/vnd.docker.distribution.manifest.list.v2+json, "
                  "application/vnd.docker.distribution.manifest.v2+json, */*"}};
  podplane::test::write_file(temp / "images.txt", registry.host() + "/bench/big:1.0\n");
  std::printf("image: 3 platforms, 4 layers of %d MiB (%d MiB in all), docker-registry on loopback, %d rounds\n",
              layer_mib, 4 * layer_mib, rounds);

  double best_ours = 1e9, best_skopeo = 1e9, best_curl = 1e9;
  double cpu_ours = 0, cpu_skopeo = 0, cpu_curl = 0;  // of the best run
  long rss_ours = 0, rss_skopeo = 0, rss_curl = 0;
  podplane::bench::HashFloor hash;  // of the first round's files: every round fetches the same
  for (int round = 0; round < rounds; ++round) {
    fs::path root = temp / ("deps-" + std::to_string(round));
    auto ours = measure({PODPLANE_BINARY, "deps", "images", "-f", (temp / "images.txt").string(), "--arch", "all", "--quiet"},
                        {{"PODPLANE_DEPS_CACHE_DIR", root.string()}, {"PODPLANE_PLAIN_HTTP_REGISTRIES", registry.host()}});
    fs::path layout = temp / ("skopeo-" + std::to_string(round));
    auto skopeo = measure({"skopeo", "copy", "--quiet", "--all", "--preserve-digests", "--src-tls-verify=false",
                           "docker://" + registry.host() + "/bench/big:1.0", "oci:" + layout.string() + ":1.0"},
                          {});
    fs::path curl_dir = temp / ("curl-" + std::to_string(round));
    auto curl = podplane::bench::curl_parallel(urls, curl_dir, curl_options);
    if (ours.seconds < best_ours) best_ours = ours.seconds, cpu_ours = ours.cpu_seconds;
    if (skopeo.seconds < best_skopeo) best_skopeo = skopeo.seconds, cpu_skopeo = skopeo.cpu_seconds;
    if (curl.seconds < best_curl) best_curl = curl.seconds, cpu_curl = curl.cpu_seconds;
    rss_ours = std::max(rss_ours, ours.max_rss_kib);
    rss_skopeo = std::max(rss_skopeo, skopeo.max_rss_kib);
    rss_curl = std::max(rss_curl, curl.max_rss_kib);
    if (round == 0) {
      std::vector<podplane::bench::FetchedFile> files;
      for (std::size_t i = 0; i < urls.size(); ++i) files.push_back({podplane::bench::curl_output(curl_dir, i), false});
      hash = podplane::bench::hash_floor(files);
    }
    fs::remove_all(root);
    fs::remove_all(layout);
    fs::remove_all(curl_dir);
  }
  double load[1] = {-1};
  (void)getloadavg(load, 1);
  std::printf("deps images:    best %.2f s (CPU %.2f s), peak RSS %.1f MiB\n", best_ours, cpu_ours, rss_ours / 1024.0);
  std::printf("skopeo copy:    best %.2f s (CPU %.2f s), peak RSS %.1f MiB\n", best_skopeo, cpu_skopeo, rss_skopeo / 1024.0);
  std::printf("curl --parallel-max 8 (%zu URLs): best %.2f s (CPU %.2f s), peak RSS %.1f MiB\n", urls.size(), best_curl,
              cpu_curl, rss_curl / 1024.0);
  std::printf("ratio time (podplane/skopeo): %.2f (target <= 1.0); ratio RSS: %.2f\n", best_ours / best_skopeo,
              static_cast<double>(rss_ours) / static_cast<double>(rss_skopeo));
  std::printf("ratio time (podplane/curl --parallel): %.2f (target <= 1.5); load average %.1f\n", best_ours / best_curl,
              load[0]);
  podplane::bench::print_floors("deps images", 0, best_ours, cpu_ours, best_curl, hash);
  return 0;
}
