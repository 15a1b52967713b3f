#include "cache/views.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "cache/layout.hpp"
#include "cache/sha256.hpp"
#include "cache/store_impl.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/error.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

namespace {

// A path segment taken from the index: one plain name, never "..", "." or a separator.
const std::string& segment(const std::string& name, const std::string& row) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos || name.find('\0') != std::string::npos) {
    throw Error("cannot build views: " + row + " would name the path segment '" + name + "'");
  }
  return name;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

fs::path relative_path(const std::string& slashed, const std::string& row) {
  fs::path path;
  for (const auto& part : split(slashed, '/')) path /= segment(part, row);
  return path;
}

std::string basename_of_url(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// tofu/terraform `providers mirror` writes index.json and <version>.json with Go's
// json.MarshalIndent: two-space indent, sorted keys, no trailing newline.
std::string mirror_json(const nlohmann::json& value) { return value.dump(2); }

void add_provider_views(const Store& store, std::vector<ViewFile>& views) {
  const fs::path providers = layout::providers_dir(store.root());
  // provider dir → version → platform → archive entry
  std::map<fs::path, std::map<std::string, nlohmann::json>> archives;
  for (const auto& a : store.artifacts({.kind = ArtifactKind::provider_package})) {
    std::string row = "provider package " + a.address + " " + a.version + " " + a.platform;
    auto parts = split(a.address, '/');
    if (parts.size() != 3) throw Error("cannot build views: " + row + ": address is not host/namespace/type");
    if (a.platform.empty()) throw Error("cannot build views: " + row + ": no platform");
    fs::path dir = providers / segment(parts[0], row) / segment(parts[1], row) / segment(parts[2], row);
    std::string zip = "terraform-provider-" + parts[2] + "_" + segment(a.version, row) + "_" + segment(a.platform, row) + ".zip";
    views.push_back({dir / zip, a.digest, std::nullopt, 0444});
    nlohmann::json hashes = nlohmann::json::array();
    if (!a.h1.empty()) hashes.push_back(a.h1);
    hashes.push_back(a.zh.empty() ? "zh:" + a.digest : a.zh);
    archives[dir][a.version][a.platform] = {{"hashes", hashes}, {"url", zip}};
  }
  for (const auto& [dir, versions] : archives) {
    nlohmann::json index = {{"versions", nlohmann::json::object()}};
    for (const auto& [version, platforms] : versions) {
      index["versions"][version] = nlohmann::json::object();
      nlohmann::json listing = {{"archives", nlohmann::json::object()}};
      for (const auto& [platform, entry] : platforms.items()) listing["archives"][platform] = entry;
      views.push_back({dir / (version + ".json"), "", mirror_json(listing), 0444});
    }
    views.push_back({dir / "index.json", "", mirror_json(index), 0444});
  }
}

bool is_nstance(const ModuleTree& tree, const std::optional<TfSelection>& selection) {
  if (selection && !selection->module_address.empty()) return tree.address == selection->module_address;
  auto parts = split(tree.address, '/');
  return parts.size() == 4 && parts[1] == "nstance-dev" && parts[2] == "nstance" && parts[3] == "aws";
}

void add_module_views(const Store& store, const std::optional<TfSelection>& selection, std::vector<ViewFile>& views) {
  const fs::path modules = layout::tf_dir(store.root()) / "modules";
  for (const auto& tree : store.module_trees()) {
    std::string row = "module " + tree.address + " " + tree.version;
    // The stack's module package keeps the real Podplane path tf/modules/nstance/<ver>/; any
    // other package lives at tf/modules/<host>/<namespace>/<name>/<system>/<ver>/.
    fs::path base = is_nstance(tree, selection) ? layout::nstance_modules_dir(store.root()) / segment(tree.version, row)
                                                : modules / relative_path(tree.address, row) / segment(tree.version, row);
    for (const auto& file : tree.files) {
      views.push_back({base / relative_path(file.path, row), file.digest, std::nullopt, file.mode});
    }
  }
  if (selection && !selection->module_version.empty()) {
    views.push_back({layout::current_version_file(store.root()), "", selection->module_version + "\n", 0644});
  }
}

void add_tf_files(const Store& store, const std::optional<TfSelection>& selection, std::vector<ViewFile>& views) {
  const fs::path& root = store.root();
  if (!selection) return;
  if (!selection->platforms.empty()) {
    std::string platforms;
    for (const auto& platform : selection->platforms) platforms += platform + "\n";
    views.push_back({layout::platforms_file(root), "", platforms, 0644});
  }
  if (!selection->providers.empty()) {
    lockfile::LockFile lock;
    for (const auto& provider : selection->providers) {
      lockfile::ProviderLock entry{provider.address, provider.version, provider.constraints, {}};
      for (const auto& platform : selection->platforms) {
        for (const auto& a : store.artifacts({.kind = ArtifactKind::provider_package,
                                              .address = provider.address,
                                              .version = provider.version,
                                              .platform = platform})) {
          if (!a.h1.empty()) entry.hashes.push_back(a.h1);
          entry.hashes.push_back(a.zh.empty() ? "zh:" + a.digest : a.zh);
        }
      }
      lock.providers.push_back(std::move(entry));
    }
    views.push_back({layout::lock_file(root), "", lockfile::render_lock_file(lock, lockfile::parse_engine(selection->engine)), 0644});
  }
  views.push_back({layout::tfrc_file(root), "", lockfile::render_filesystem_mirror_tfrc(layout::providers_dir(root)), 0644});
}

void add_vmconfig_views(const Store& store, std::vector<ViewFile>& views) {
  const fs::path& root = store.root();
  std::map<std::string, Artifact> latest;  // by manifest name: the most recently indexed
  for (const auto& a : store.artifacts({.kind = ArtifactKind::vmconfig_manifest})) {
    auto [it, inserted] = latest.emplace(a.address, a);
    if (!inserted && a.id > it->second.id) it->second = a;
  }
  for (const auto& [name, a] : latest) {
    views.push_back({layout::vmconfig_manifests_dir(root) / (segment(name, "vmconfig manifest " + name) + ".json"), a.digest,
                     std::nullopt, 0444});
  }
  // Podplane's layout <name>/<version>/<basename(url)> has no arch in it, so the amd64 and
  // arm64 builds of one artifact (kubelet, say) can share a path. The view holds one of them,
  // chosen the same way everywhere (vmconfig_artifact_wins): VMs of the other arch must use
  // the upstream URL or a mirror per arch (docs/store.md).
  std::map<fs::path, Artifact> by_path;
  for (const auto& a : store.artifacts({.kind = ArtifactKind::vmconfig_artifact})) {
    std::string row = "vmconfig artifact " + a.address + " " + a.version;
    std::string file = a.upstream_url.empty() ? a.filename : basename_of_url(a.upstream_url);
    fs::path path = layout::vmconfig_artifacts_dir(root) / segment(a.address, row) / segment(a.version, row) / segment(file, row);
    auto [it, inserted] = by_path.emplace(path, a);
    if (!inserted && vmconfig_artifact_wins(a, it->second)) it->second = a;
  }
  for (const auto& [path, a] : by_path) views.push_back({path, a.digest, std::nullopt, 0444});
}

// ---------------------------------------------------------------------------------------------
// Writing

std::string temp_name_beside(const fs::path& path) {
  static thread_local std::mt19937_64 random(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()));
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".tmp-%d-%012llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(random() & 0xffffffffffffULL));
  return (path.parent_path() / ("." + path.filename().string() + suffix)).string();
}

bool same_inode(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::lstat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool regular_with_mode(const fs::path& path, std::uint32_t mode) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & 07777) == mode;
}

void write_all(int fd, const char* data, std::size_t size, const std::string& file) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot write " + file + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

// Temp file beside the target, fsync, rename: readers and concurrent rebuilds see the old or
// the new file, never half of one.
void publish_bytes(const fs::path& path, std::string_view bytes, std::uint32_t mode) {
  std::string temp = temp_name_beside(path);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) throw Error("cannot create " + temp + ": " + std::strerror(errno));
  try {
    write_all(fd.get(), bytes.data(), bytes.size(), temp);
    if (::fchmod(fd.get(), mode) != 0 || ::fsync(fd.get()) != 0) throw Error("cannot write " + temp + ": " + std::strerror(errno));
    fd.reset();
    if (::rename(temp.c_str(), path.c_str()) != 0) throw Error("cannot replace " + path.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

void publish_copy(const fs::path& object, const fs::path& path, std::uint32_t mode) {
  std::string temp = temp_name_beside(path);
  UniqueFd in(::open(object.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw Error("cannot read " + object.string() + ": " + std::strerror(errno));
  UniqueFd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) throw Error("cannot create " + temp + ": " + std::strerror(errno));
  try {
    char buffer[1 << 16];
    for (;;) {
      ssize_t n = ::read(in.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error("cannot read " + object.string() + ": " + std::strerror(errno));
      if (n == 0) break;
      write_all(out.get(), buffer, static_cast<std::size_t>(n), temp);
    }
    if (::fchmod(out.get(), mode) != 0 || ::fsync(out.get()) != 0) throw Error("cannot write " + temp + ": " + std::strerror(errno));
    out.reset();
    if (::rename(temp.c_str(), path.c_str()) != 0) throw Error("cannot replace " + path.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

bool content_equals(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec)) || fs::file_size(path, ec) != bytes.size() || ec) return false;
  return sha256_hex_of_file(path) == lockfile::sha256_hex(bytes);
}

// true when written, false when already up to date.
bool publish_view(const Store& store, const ViewFile& view) {
  std::error_code ec;
  fs::create_directories(view.path.parent_path(), ec);
  if (ec) throw Error("cannot create " + view.path.parent_path().string() + ": " + ec.message());
  if (view.content) {
    if (content_equals(view.path, *view.content)) return false;
    publish_bytes(view.path, *view.content, view.mode);
    return true;
  }
  fs::path object = store.object_path(view.object_digest);
  // Objects are 0444; a link serves any file that needs no execute bit, and an executable
  // module script becomes a copy with its recorded mode.
  bool linkable = (view.mode & 0111) == 0;
  if (linkable && same_inode(view.path, object)) return false;
  if (regular_with_mode(view.path, linkable ? 0444 : view.mode) && sha256_hex_of_file(view.path) == view.object_digest) {
    return false;  // a copy made where links fail
  }
  if (linkable) {
    std::string temp = temp_name_beside(view.path);
    if (::link(object.c_str(), temp.c_str()) == 0) {
      if (::rename(temp.c_str(), view.path.c_str()) != 0) {
        int saved = errno;
        ::unlink(temp.c_str());
        throw Error("cannot replace " + view.path.string() + ": " + std::strerror(saved));
      }
      // When a concurrent rebuild linked the view to the same object first, temp and view are
      // links to one inode and rename() does nothing (POSIX): drop the extra link. After a
      // real rename temp is gone and this is a no-op.
      ::unlink(temp.c_str());
      return true;
    }
    // EXDEV (views on another filesystem), EPERM, EMLINK: fall back to a copy.
  }
  publish_copy(object, view.path, linkable ? 0444 : view.mode);
  return true;
}

}  // namespace

bool vmconfig_artifact_wins(const Artifact& a, const Artifact& b) {
  return a.platform != b.platform ? a.platform < b.platform : a.id < b.id;
}

std::vector<ViewFile> planned_views(const Store& store) {
  std::vector<ViewFile> views;
  auto selection = store.tf_selection();
  add_provider_views(store, views);
  add_module_views(store, selection, views);
  add_tf_files(store, selection, views);
  add_vmconfig_views(store, views);
  return views;
}

ViewStats rebuild_views(Store& store) {
  ViewStats stats;
  if (store.read_only()) return stats;
  const fs::path tf = layout::tf_dir(store.root());
  const fs::path vmconfig = store.root() / "vmconfig";
  for (const auto& view : planned_views(store)) {
    auto inside = [&](const fs::path& dir) {
      auto relative = view.path.lexically_relative(dir);
      return !relative.empty() && *relative.begin() != "..";
    };
    if (!inside(tf) && !inside(vmconfig)) throw Error("refusing to write a view outside tf/ and vmconfig/: " + view.path.string());
    if (publish_view(store, view)) ++stats.files_written;
    else ++stats.files_present;
  }
  return stats;
}

}  // namespace podplane::cache
