#pragma once
// The wire's limit for a list of URLs, as users fetch many files: one `curl` process with
// `--parallel --parallel-max 8`, each URL to its own file under `dir`, read from a config file
// (the list can be long). Measured like any other command (wall, CPU, peak RSS); a failed
// transfer ends the benchmark. Header-only.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/support/measured_run.hpp"

namespace podplane::bench {

struct CurlParallelOptions {
  std::filesystem::path ca_file;        // --cacert; none for plain HTTP
  std::vector<std::string> headers;     // sent with every request, e.g. an OCI Accept
};

// Where curl_parallel put the body of urls[index].
inline std::filesystem::path curl_output(const std::filesystem::path& dir, std::size_t index) {
  return dir / std::to_string(index);
}

inline MeasuredRun curl_parallel(const std::vector<std::string>& urls, const std::filesystem::path& dir,
                                 const CurlParallelOptions& options = {}) {
  std::filesystem::create_directories(dir);
  const auto config = dir / "urls.curlrc";
  {
    std::ofstream out(config);
    for (const auto& header : options.headers) out << "header = \"" << header << "\"\n";
    for (std::size_t i = 0; i < urls.size(); ++i) {
      out << "url = \"" << urls[i] << "\"\noutput = \"" << curl_output(dir, i).string() << "\"\n";
    }
  }
  std::vector<std::string> argv{"curl", "-sS", "-f", "--parallel", "--parallel-max", "8"};
  if (!options.ca_file.empty()) argv.insert(argv.end(), {"--cacert", options.ca_file.string()});
  argv.insert(argv.end(), {"-K", config.string()});
  return run_measured(argv);
}

}  // namespace podplane::bench
