#include "tests/support/zip_fixture.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

// Reads a JSON list of entries on stdin; names and contents arrive as lists of byte values so
// that any byte survives the trip.
constexpr const char* kScript = R"PY(
import json, sys, warnings, zipfile
warnings.simplefilter("ignore")  # duplicate names are intended
spec = json.load(sys.stdin)
with zipfile.ZipFile(spec["zip"], "w") as z:
    for e in spec["entries"]:
        name = bytes(e["name"]).decode("utf-8", "surrogateescape")
        data = bytes(e["content"])
        info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
        info.compress_type = zipfile.ZIP_DEFLATED if e["deflate"] else zipfile.ZIP_STORED
        if e["kind"] == "directory":
            info.external_attr = (0o40755 << 16) | 0x10
        elif e["kind"] == "symlink":
            info.external_attr = 0o120777 << 16
        else:
            info.external_attr = 0o100644 << 16
        info.create_system = 3
        z.writestr(info, data)
)PY";

std::vector<int> bytes_of(const std::string& text) {
  return std::vector<int>(reinterpret_cast<const unsigned char*>(text.data()),
                          reinterpret_cast<const unsigned char*>(text.data()) + text.size());
}

}  // namespace

void make_zip(const std::filesystem::path& zip, const std::vector<ZipEntry>& entries) {
  nlohmann::json spec;
  spec["zip"] = zip.string();
  spec["entries"] = nlohmann::json::array();
  for (const auto& entry : entries) {
    const char* kind = entry.kind == ZipEntry::Kind::directory ? "directory"
                       : entry.kind == ZipEntry::Kind::symlink ? "symlink"
                                                               : "file";
    spec["entries"].push_back({{"name", bytes_of(entry.name)},
                               {"content", bytes_of(entry.content)},
                               {"kind", kind},
                               {"deflate", entry.deflate}});
  }
  ProcessOptions options;
  options.stdin_data = spec.dump();
  auto result = run({"python3", "-c", kScript}, options);
  if (result.exit_code != 0) throw std::runtime_error("python3 zipfile failed: " + result.err);
}

void make_zip_with_infozip(const std::filesystem::path& source_dir, const std::filesystem::path& zip,
                           const std::vector<std::string>& options, const std::vector<std::string>& members,
                           const std::string& stdin_data) {
  // -q: no listing on stdout; -X: no uid/gid or extended-timestamp extra fields.
  std::vector<std::string> argv = {"zip", "-q", "-X"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(zip.string());
  argv.insert(argv.end(), members.begin(), members.end());
  ProcessOptions process;
  process.cwd = source_dir;
  process.stdin_data = stdin_data;
  auto result = run(argv, process);
  if (result.exit_code != 0) throw std::runtime_error("zip failed for " + zip.string() + ":\n" + show(result));
}

}  // namespace podplane::test
