#include "mirror/root_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "base/error.hpp"
#include "cache/provider_documents.hpp"

namespace podplane::mirror {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& file) {
  std::string text;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

void write_fully(int fd, const std::string& bytes, const fs::path& file) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot write " + file.string() + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

lockfile::LockFile root_lock(const cache::Store& store, const std::vector<cache::TfSelection::Provider>& selection,
                             const std::vector<std::string>& platforms,
                             const std::optional<lockfile::LockFile>& committed) {
  auto lock = cache::selection_lock(store, selection, platforms, store.artifacts({.kind = cache::ArtifactKind::provider_package}));
  if (!committed) return lock;
  for (auto& entry : lock.providers) {
    const auto* before = committed->find(entry.address);
    if (before == nullptr || before->version != entry.version) continue;  // a new version: its own hashes only
    entry.hashes.insert(entry.hashes.end(), before->hashes.begin(), before->hashes.end());
  }
  for (const auto& before : committed->providers) {
    if (lock.find(before.address) == nullptr) lock.providers.push_back(before);
  }
  return lock;
}

bool write_root_lock(const fs::path& dir, const lockfile::LockFile& lock, lockfile::Engine engine) {
  const fs::path file = dir / ".terraform.lock.hcl";
  const std::string text = lockfile::render_lock_file(lock, engine);
  if (fs::exists(file) && read_all(file) == text) return false;
  const fs::path temp = dir / (".terraform.lock.hcl.podplane-" + std::to_string(::getpid()) + "-" +
                               std::to_string(std::random_device{}()));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + file.string() + ": " + std::strerror(errno));
  try {
    write_fully(fd, text, file);
    if (::fsync(fd) != 0) throw Error("cannot sync " + file.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temp.c_str(), file.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    throw Error("cannot replace " + file.string() + ": " + std::strerror(error));
  }
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);  // the rename is done; a failed directory sync only weakens durability
    ::close(dir_fd);
  }
  return true;
}

}  // namespace podplane::mirror
