// images_bench: fetch time and peak RSS of `podplane deps images` (every platform of an image of
// ~200 MiB across 3 platforms: one shared 50 MiB layer, one 50 MiB layer per platform) against
// `skopeo copy --all` of the same image from the same docker-registry on loopback, as users run
// it (into an OCI layout), measured in the same run. Prints both and the ratios.
//   usage: images_bench [--layer-mib N] [--rounds N]
#include <cstdio>
#include <cstring>

#include "bench/support/measured_run.hpp"
#include "tests/serve/registry_fixture.hpp"

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
  (void)summary;
  podplane::test::write_file(temp / "images.txt", registry.host() + "/bench/big:1.0\n");
  std::printf("image: 3 platforms, 4 layers of %d MiB (%d MiB in all), docker-registry on loopback, %d rounds\n",
              layer_mib, 4 * layer_mib, rounds);

  double best_ours = 1e9, best_skopeo = 1e9;
  long rss_ours = 0, rss_skopeo = 0;
  for (int round = 0; round < rounds; ++round) {
    fs::path root = temp / ("deps-" + std::to_string(round));
    auto ours = measure({PODPLANE_BINARY, "deps", "images", "-f", (temp / "images.txt").string(), "--arch", "all", "--quiet"},
                        {{"PODPLANE_DEPS_CACHE_DIR", root.string()}, {"PODPLANE_PLAIN_HTTP_REGISTRIES", registry.host()}});
    fs::path layout = temp / ("skopeo-" + std::to_string(round));
    auto skopeo = measure({"skopeo", "copy", "--quiet", "--all", "--preserve-digests", "--src-tls-verify=false",
                           "docker://" + registry.host() + "/bench/big:1.0", "oci:" + layout.string() + ":1.0"},
                          {});
    best_ours = std::min(best_ours, ours.seconds);
    best_skopeo = std::min(best_skopeo, skopeo.seconds);
    rss_ours = std::max(rss_ours, ours.max_rss_kib);
    rss_skopeo = std::max(rss_skopeo, skopeo.max_rss_kib);
    fs::remove_all(root);
    fs::remove_all(layout);
  }
  std::printf("deps images:  best %.2f s, peak RSS %.1f MiB\n", best_ours, rss_ours / 1024.0);
  std::printf("skopeo copy:  best %.2f s, peak RSS %.1f MiB\n", best_skopeo, rss_skopeo / 1024.0);
  std::printf("ratio time (podplane/skopeo): %.2f (target <= 1.0); ratio RSS: %.2f\n", best_ours / best_skopeo,
              static_cast<double>(rss_ours) / static_cast<double>(rss_skopeo));
  return 0;
}
