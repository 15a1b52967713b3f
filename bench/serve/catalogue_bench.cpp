// catalogue_bench: the catalogue page of a store with 5,000 provider package rows. Times the
// render alone (in process), then a full GET of / through mirror serve and of the exported
// index.html through nginx, in the same run (by hand: build/bench/serve/catalogue_bench).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "mirror/catalogue.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

using namespace podplane;
using namespace podplane::serve_test;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string nginx_config(const fs::path& prefix, const fs::path& root, int port) {
  std::string p = prefix.string();
  return "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + p + "/nginx.pid;\nerror_log " + p +
         "/error.log warn;\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n  client_body_temp_path " + p +
         "/tmp/body;\n  proxy_temp_path " + p + "/tmp/proxy;\n  fastcgi_temp_path " + p + "/tmp/fastcgi;\n  uwsgi_temp_path " +
         p + "/tmp/uwsgi;\n  scgi_temp_path " + p + "/tmp/scgi;\n  types { text/html html; application/json json; }\n"
         "  sendfile on;\n  server {\n    listen 127.0.0.1:" + std::to_string(port) + ";\n    root " + root.string() + ";\n  }\n}\n";
}

}  // namespace

int main() {
  podplane::test::TempDir temp;
  (void)fill_store(temp / "deps", temp / "work", 1024, 4096);
  {
    // 50 providers x 25 versions x 4 platforms = 5,000 rows (objects are small stand-ins:
    // the catalogue reads rows, not zips).
    auto store = cache::Store::open(temp / "deps");
    store.in_transaction([&] {
      for (int p = 0; p < 50; ++p)
        for (int v = 0; v < 25; ++v)
          for (const char* platform : {"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"}) {
            cache::Artifact a;
            a.kind = cache::ArtifactKind::provider_package;
            a.address = "registry.opentofu.org/bench/p" + std::to_string(p);
            a.version = "1." + std::to_string(v) + ".0";
            a.platform = platform;
            a.filename = "terraform-provider-p" + std::to_string(p) + "_" + a.version + "_" + platform + ".zip";
            std::string bytes = a.address + a.version + platform;
            a.digest = store.add_bytes(bytes);
            a.size = static_cast<std::int64_t>(bytes.size());
            a.h1 = "h1:" + std::string(43, 'x') + "=";
            a.zh = "zh:" + a.digest;
            a.trust = cache::Trust::unverified;
            (void)store.add_artifact(a);
          }
    });
  }
  auto store = cache::Store::open(temp / "deps", cache::Store::Access::read_only);
  auto built = Clock::now();
  auto site = mirror::MirrorSite::build(store);
  double build_ms = ms_since(built);
  std::vector<double> render;
  std::size_t page_bytes = 0;
  for (int i = 0; i < 15; ++i) {
    auto start = Clock::now();
    auto html = mirror::render_catalogue_html(*site.catalogue(), {"", "/", "https://mirror.site:8443", ""});
    render.push_back(ms_since(start));
    page_bytes = html.size();
  }
  std::printf("rows %zu, page %zu bytes; site + catalogue build %.1f ms (once per start/SIGHUP)\n", site.catalogue()->row_count(),
              page_bytes, build_ms);
  std::printf("render in process             p50 %8.2f ms\n", median(render));

  MirrorServe serve(temp / "deps", {"--listen", "127.0.0.1:0", "--plain-http"}, temp / "serve.err");
  if (!serve.started()) return std::fprintf(stderr, "mirror serve did not start: %s\n", serve.log().c_str()), 1;
  podplane::test::ProcessOptions env;
  env.env["PODPLANE_DEPS_CACHE_DIR"] = (temp / "deps").string();
  if (podplane::test::run_podplane({"mirror", "export", (temp / "export").string(), "--public-url", serve.url()}, env).exit_code != 0)
    return std::fprintf(stderr, "export failed\n"), 1;
  fs::path prefix = temp / "nginx";
  fs::create_directories(prefix / "tmp");
  int port = free_port();
  write_file(prefix / "nginx.conf", nginx_config(prefix, temp / "export", port));
  Background web({"/usr/sbin/nginx", "-e", (prefix / "error.log").string(), "-p", prefix.string(), "-c",
                  (prefix / "nginx.conf").string()},
                 {}, prefix / "stderr.log");
  if (!wait_for_port(port)) return std::fprintf(stderr, "nginx did not start\n"), 1;

  CurlSession http;
  auto time_get = [&](const std::string& url) {
    std::vector<double> times;
    for (int i = 0; i < 15; ++i) {
      auto start = Clock::now();
      auto answer = http.fetch(url);
      times.push_back(ms_since(start));
      if (answer.status != 200) std::fprintf(stderr, "%s: %ld\n", url.c_str(), answer.status);
    }
    return median(times);
  };
  double served = time_get(serve.url() + "/");
  double hosted = time_get("http://127.0.0.1:" + std::to_string(port) + "/");
  double filtered = time_get(serve.url() + "/?q=linux_arm64+p7");
  std::printf("GET / mirror serve            p50 %8.2f ms\n", served);
  std::printf("GET / nginx (static export)   p50 %8.2f ms\n", hosted);
  std::printf("GET /?q= mirror serve         p50 %8.2f ms\n", filtered);
  std::printf("mirror serve / nginx time: %.1fx\n", served / hosted);
  (void)serve.stop();
  return 0;
}
