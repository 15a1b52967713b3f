#include "fetch/tool_install.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/archive.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "base/unique_fd.hpp"
#include "base/scratch_dir.hpp"
#include "cache/recheck.hpp"
#include "cache/tool_releases.hpp"
#include "fetch/tool_sources.hpp"
#include "lockfile/provider_names.hpp"

namespace podplane::fetch {

namespace {

namespace fs = std::filesystem;

// The most a program may expand to: the real terraform and tofu are under 150 MiB; a zip that
// expands further is not a release (a zip bomb) and is refused before it fills the disk.
constexpr std::uint64_t kMaxProgramBytes = std::uint64_t{512} << 20;

// What may be replaced at the program's place: nothing, or a regular file. A link, FIFO or
// device there would send the write elsewhere (or hang on a FIFO), so it is refused.
void check_replaceable(const fs::path& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw Error("cannot install at " + target.string() + ": " + std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return;
  const char* what = S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a regular file";
  throw Error("refusing to install at " + target.string() + ": it is " + what +
              ", and tools install replaces only a regular file there; remove it or choose another --to");
}

// Streams the zip entry named as the engine (at the top of the zip, as both projects ship it)
// into a new file beside `target` and renames it over `target`: the program appears whole or
// not at all, and never more than a block of it is in memory. Any other entry (a LICENSE) is
// skipped.
void install_program(const fs::path& zip, const std::string& zip_name, std::string_view program, const fs::path& target) {
  check_replaceable(target);
  libarchive::ZipReader reader(zip);
  while (auto name = reader.next()) {
    if (*name != program) continue;
    const fs::path temp = temp_path_beside(target);
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700));
    if (!fd) throw Error("cannot create " + temp.string() + ": " + std::strerror(errno));
    struct RemoveUnlessKept {
      fs::path path;
      bool kept = false;
      ~RemoveUnlessKept() {
        std::error_code ignored;
        if (!kept) fs::remove(path, ignored);
      }
    } guard{temp};
    std::uint64_t written = 0;
    reader.read([&](const void* data, std::size_t size) {
      written += size;
      if (written > kMaxProgramBytes)
        throw Error(zip_name + ": " + std::string(program) + " expands to more than " + describe_size_limit(kMaxProgramBytes) +
                    ", which no release of it does; refused");
      write_all(fd.get(), std::string_view(static_cast<const char*>(data), size), temp);
    });
    if (::fchmod(fd.get(), 0755) != 0 || ::fsync(fd.get()) != 0)
      throw Error("cannot write " + temp.string() + ": " + std::strerror(errno));
    fd.close_checked(temp.string());
    // The place is checked again: what was planted there since is refused, not replaced.
    check_replaceable(target);
    if (::rename(temp.c_str(), target.c_str()) != 0)
      throw Error("cannot rename " + temp.string() + " to " + target.string() + ": " + std::strerror(errno));
    guard.kept = true;
    sync_directory(target.parent_path());
    return;
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
  fs::create_directories(options.to);
  const fs::path target = options.to / program;
  install_program(zip, zip_name, program, target);
  out << "installed " << program << " " << options.version << " (" << options.platform << ") at " << target.string() << " from "
      << zip_name << " (sha256:" << file_digest_hex(zip) << ")\n";
  return target;
}

}  // namespace podplane::fetch
