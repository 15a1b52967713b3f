// Fuzz target: a bundle volume from hostile bytes, verified and then imported into a fresh
// temp store (the tar reading, the signature block, object streaming and row validation of
// bundle/import.cpp). Unsigned and untrusted volumes are allowed so that the fuzzer gets past
// the signature; every object is still hashed. Neither call may throw or crash.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "bundle/import.hpp"
#include "cache/store.hpp"

using namespace podplane;
namespace fs = std::filesystem;

namespace {

// One temp dir for the whole run, removed at exit.
struct WorkDir {
  fs::path path;
  WorkDir() {
    std::string pattern = (fs::temp_directory_path() / "podplane-fuzz-import-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path = pattern;
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& work_dir() {
  static const WorkDir dir;
  return dir.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path file = work_dir() / "input.bundle";
  const fs::path root = work_dir() / "deps";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  bundle::VerifyOptions options;
  options.unsigned_bundles = bundle::UnsignedBundles::allow;
  (void)bundle::verify_bundle({file}, options);
  try {
    auto store = cache::Store::open(root, cache::Store::Access::read_write, cache::Store::TempSweep::at_open);
    (void)bundle::import_bundle(store, {file}, options);
  } catch (const Error&) {
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  return 0;
}
