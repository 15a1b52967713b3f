#include "fetch/tool_install.hpp"

#include "base/archive.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/scratch_dir.hpp"
#include "cache/recheck.hpp"
#include "cache/tool_releases.hpp"
#include "fetch/tool_sources.hpp"
#include "lockfile/provider_names.hpp"

namespace podplane::fetch {

namespace {

namespace fs = std::filesystem;

// The program's bytes: the zip entry named as the engine, at the top of the zip as both
// projects ship it. Any other entry (a LICENSE) is skipped.
std::string program_in(const fs::path& zip, const std::string& zip_name, std::string_view program) {
  libarchive::ZipReader reader(zip);
  while (auto name = reader.next()) {
    if (*name != program) continue;
    std::string bytes;
    reader.read([&](const void* data, std::size_t size) { bytes.append(static_cast<const char*>(data), size); });
    return bytes;
  }
  throw Error(zip_name + " holds no file named " + std::string(program));
}

// From the local store: the row's object, rehashed, and its signed SHA256SUMS checked again.
fs::path zip_from_store(const cache::Store& store, const ToolInstallOptions& options, const std::string& zip_name) {
  const std::string engine(lockfile::engine_name(options.engine));
  auto row = store.find_artifact(cache::ArtifactKind::tool_archive, engine, options.version, options.platform, zip_name);
  const fs::path object = stored_tool_file(store, row, zip_name,
                                           "fetch it online with `podplane deps tools --engine " + engine + " --version " +
                                               options.version + " --platform " + options.platform +
                                               "`, or install --from a site mirror");
  auto recheck = cache::recheck_tool_archives(store, {*row});
  if (!recheck.problems.empty()) throw Error(recheck.problems.front());
  return object;
}

// From a site mirror: SHA256SUMS and its signature verified with the pinned key, then the zip
// checked against its line, as `deps tools` checks the upstream.
fs::path zip_from_mirror(const ToolInstallOptions& options, const std::string& zip_name, const fs::path& scratch) {
  const std::string dir = mirror_tool_dir(options.from_url, lockfile::engine_name(options.engine), options.version);
  net::HttpClient http(options.http);
  const std::string sums_name = cache::tool_shasums_name(options.engine, options.version);
  const std::string sums = fetch_tool_document(http, dir, sums_name);
  (void)cache::verify_tool_shasums(options.engine, options.version, sums,
                                   fetch_tool_document(http, dir, cache::tool_signature_name(options.engine, options.version)));
  return fetch_tool_file(options.http, dir, zip_name, cache::tool_listed_digest(sums, zip_name, sums_name), scratch);
}

}  // namespace

fs::path install_tool(const cache::Store* store, const ToolInstallOptions& options, std::ostream& out) {
  const std::string zip_name = cache::tool_archive_name(options.engine, options.version, options.platform);
  const std::string program(cache::tool_binary_name(options.engine));
  ScratchDir scratch("podplane-tools-");
  fs::path zip;
  if (options.from_url.empty()) {
    if (store == nullptr) throw Error("no store to install " + zip_name + " from; pass --from URL of a site mirror");
    zip = zip_from_store(*store, options, zip_name);
  } else {
    zip = zip_from_mirror(options, zip_name, scratch.path());
  }
  // Only checked bytes reach the directory, and the program appears whole or not at all.
  const std::string bytes = program_in(zip, zip_name, program);
  fs::create_directories(options.to);
  const fs::path target = options.to / program;
  write_file_durably(target, bytes, FileMode{0755});
  out << "installed " << program << " " << options.version << " (" << options.platform << ") at " << target.string() << " from "
      << zip_name << " (sha256:" << file_digest_hex(zip) << ")\n";
  return target;
}

}  // namespace podplane::fetch
