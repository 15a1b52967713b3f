#include "tests/support/gocheck.hpp"

#include <stdexcept>

namespace podplane::test {
namespace {

std::string single_line(const ProcessResult& result, const std::string& what) {
  if (result.exit_code != 0) throw std::runtime_error("gocheck " + what + " failed: " + result.err);
  std::string out = result.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::filesystem::path gocheck_binary() {
#ifdef PODPLANE_GOCHECK_BINARY
  return PODPLANE_GOCHECK_BINARY;
#else
  throw std::runtime_error("gocheck is not configured: tests/tools/gocheck/CMakeLists.txt was not added");
#endif
}

ProcessResult gocheck_hclparse(const std::vector<std::filesystem::path>& files) {
  std::vector<std::string> argv = {gocheck_binary().string(), "hclparse"};
  for (const auto& file : files) argv.push_back(file.string());
  return run(argv);
}

ProcessResult gocheck_hclparse_text(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  auto file = dir / name;
  write_file(file, text);
  return gocheck_hclparse({file});
}

std::string gocheck_hashzip(const std::filesystem::path& zip) {
  return single_line(run({gocheck_binary().string(), "hashzip", zip.string()}), "hashzip " + zip.string());
}

std::string gocheck_hashdir(const std::filesystem::path& dir) {
  return single_line(run({gocheck_binary().string(), "hashdir", dir.string()}), "hashdir " + dir.string());
}

}  // namespace podplane::test
