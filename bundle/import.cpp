#include "bundle/import.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <archive_entry.h>
#include <nlohmann/json.hpp>

#include "base/archive.hpp"
#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hash_lanes.hpp"
#include "base/parallel.hpp"
#include "base/unique_fd.hpp"
#include "bundle/archive_io.hpp"
#include "bundle/create.hpp"
#include "bundle/manifest.hpp"
#include "bundle/signing.hpp"
#include "cache/cosign_policy.hpp"
#include "cache/kinds.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/recheck.hpp"
#include "cache/row_rules.hpp"
#include "cache/views.hpp"

namespace podplane::bundle {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::uint64_t kSignatureLimit = 64ULL << 10;

// Where objects of a volume go: into the store, or only through a hasher (verify). A sink
// counts an object in `report` (objects_verified, bytes_verified) once it is verified and, for
// the store, committed.
class ObjectSink {
 public:
  virtual ~ObjectSink() = default;
  virtual bool already_present(const ManifestObject& object) = 0;
  // Takes the current entry's data. A sink may check it later, on other threads: an object's
  // failure is thrown by a later receive() or by finish().
  virtual void receive(detail::ArchiveReader& reader, const ManifestObject& object, VolumeReport& report) = 0;
  // Returns once every object received has been checked, and throws the failure of the first
  // one (in manifest order) that has not been thrown yet.
  virtual void finish(VolumeReport& report) = 0;
};

void refuse_entry(const std::string& name, const fs::path& file, const std::string& why) {
  throw Error("refused entry '" + name + "' in " + file.string() + ": " + why);
}

// Every tar entry is hostile until shown to be a plain file with a plain name: the name by
// the rules every archive from outside is read with (libarchive::relative_entry_name), and
// written exactly as a bundle writes it (no "./", no doubled or trailing '/').
std::string checked_entry_name(archive_entry* entry, const fs::path& file) {
  const char* raw = archive_entry_pathname(entry);
  std::string name = libarchive::relative_entry_name(raw, file.string());
  if (archive_entry_hardlink(entry) != nullptr) refuse_entry(name, file, "hard link");
  auto type = archive_entry_filetype(entry);
  if (archive_entry_symlink(entry) != nullptr || type == AE_IFLNK) refuse_entry(name, file, "symbolic link");
  if (type == AE_IFCHR || type == AE_IFBLK) refuse_entry(name, file, "device node");
  if (type == AE_IFIFO) refuse_entry(name, file, "named pipe");
  if (type == AE_IFDIR) refuse_entry(name, file, "directory");
  if (type != AE_IFREG) refuse_entry(name, file, "not a regular file");
  if (archive_entry_sparse_count(entry) > 0) refuse_entry(name, file, "sparse file");
  if (!archive_entry_size_is_set(entry) || archive_entry_size(entry) < 0) refuse_entry(name, file, "no size");
  if (name != raw) refuse_entry(raw, file, "not a plain relative path");
  return name;
}

std::string read_small_entry(detail::ArchiveReader& reader, const fs::path& file, std::string_view expected,
                             std::uint64_t limit) {
  archive_entry* entry = nullptr;
  if (!reader.next(entry))
    throw Error("bundle " + file.string() + " ends before its " + std::string(expected) + " entry (empty or truncated)");
  std::string name = checked_entry_name(entry, file);
  if (name != expected)
    throw Error(mismatch_message("bundle " + file.string() + " does not start like a podplane bundle",
                                 "entry " + std::string(expected), "entry " + name));
  if (static_cast<std::uint64_t>(archive_entry_size(entry)) > limit)
    refuse_entry(name, file, "larger than " + std::to_string(limit) + " bytes");
  std::string content = reader.read_all(limit);
  if (content.size() != static_cast<std::uint64_t>(archive_entry_size(entry)))
    throw Error("bundle " + file.string() + " is truncated inside " + name);
  return content;
}

void check_signature(const std::string& manifest_bytes, const std::string& signature_bytes,
                     const std::vector<PublicKey>& trusted, const VerifyOptions& options, VolumeReport& report) {
  SignatureBlock block = SignatureBlock::parse(signature_bytes);
  if (block.algorithm == "none") {
    report.signer = "unsigned";
    if (options.unsigned_bundles == UnsignedBundles::refuse)
      throw Error("bundle " + report.file.string() +
                  " is unsigned: refused (create it with --sign KEY and import with --trust KEY.pub, or pass --allow-unsigned)");
    return;
  }
  PublicKey signer = PublicKey::from_raw_hex(block.public_key_hex);
  if (signer.key_id() != block.key_id)
    throw Error(mismatch_message("bundle " + report.file.string() + " names another key id than its public key",
                                 signer.key_id(), block.key_id));
  // A bad signature is damage or forgery: refused whatever the flags say.
  if (!signer.verifies(manifest_bytes, block.signature_hex))
    throw Error("bad signature on bundle " + report.file.string() + ": the manifest or its signature was altered");
  report.signer = signer.key_id();
  report.trusted_signer = std::any_of(trusted.begin(), trusted.end(),
                                      [&](const PublicKey& key) { return key.raw_hex() == signer.raw_hex(); });
  if (!report.trusted_signer && options.unsigned_bundles == UnsignedBundles::refuse)
    throw Error("bundle " + report.file.string() + " is signed by untrusted key " + signer.key_id() +
                ": refused (pass --trust with that public key, or --allow-unsigned)");
}

// A signed expiry (`bundle create --expires-in`) that has passed refuses the volume.
void check_expiry(const BundleManifest& manifest, const VerifyOptions& options, VolumeReport& report) {
  if (!manifest.expires_at) return;
  std::time_t expires = 0;
  try {
    expires = parse_rfc3339(*manifest.expires_at);
  } catch (const Error& error) {
    throw Error("bundle " + report.file.string() + ": expires_at: " + error.what());
  }
  std::time_t now = options.now ? options.now() : std::time(nullptr);
  if (now <= expires) return;
  if (options.expired == ExpiredBundles::refuse) {
    throw Error("bundle " + report.file.string() + " expired at " + *manifest.expires_at + " (it is now " + utc_timestamp(now) +
                "): refused (pass --allow-expired to take it anyway)");
  }
  report.expired_at = *manifest.expires_at;
}

// Every row must be one the store can lay out as a view, by the store's own rules
// (cache/row_rules.hpp): refused before any object of the volume is read.
void check_rows_lay_out(const BundleManifest& manifest, const fs::path& file) {
  try {
    for (const auto& travelling : manifest.artifacts) cache::check_artifact_layout(travelling.artifact);
    for (const auto& tree : manifest.module_trees) cache::check_module_tree_layout(tree);
    if (manifest.tf_selection) cache::check_selection_layout(*manifest.tf_selection);
  } catch (const Error& error) {
    throw Error("bundle " + file.string() + " carries a row the store cannot lay out: " + error.what());
  }
}

// Reads and judges the first two entries: the signature before anything else, then the
// manifest, its expiry and its rows. Returns the manifest only when all of them pass.
BundleManifest read_header(detail::ArchiveReader& reader, const fs::path& file, const std::vector<PublicKey>& trusted,
                           const VerifyOptions& options, VolumeReport& report) {
  std::string manifest_bytes = read_small_entry(reader, file, kManifestEntry, kManifestLimit);
  std::string signature_bytes = read_small_entry(reader, file, kSignatureEntry, kSignatureLimit);
  check_signature(manifest_bytes, signature_bytes, trusted, options, report);
  BundleManifest manifest = BundleManifest::parse(manifest_bytes);
  manifest_bytes.clear();
  manifest_bytes.shrink_to_fit();
  check_expiry(manifest, options, report);
  check_rows_lay_out(manifest, file);
  return manifest;
}

struct OpenVolume {
  UniqueFd fd;
  std::unique_ptr<detail::ArchiveReader> reader;
};

// Opens `source.read_from` (the file given, or the volume par2 rebuilt in its place); messages
// name the volume as the user knows it.
OpenVolume open_volume(const VolumeSource& source) {
  const fs::path& file = source.file;
  OpenVolume volume;
  volume.fd = UniqueFd(::open(source.read_from.c_str(), O_RDONLY | O_CLOEXEC));
  if (volume.fd.get() < 0) throw Error("cannot open bundle " + file.string() + ": " + std::strerror(errno));
  ::posix_fadvise(volume.fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  volume.reader = std::make_unique<detail::ArchiveReader>(volume.fd.get(), file.string());
  return volume;
}

// Every object entry of a volume, in manifest order, into `sink`; then nothing else.
void read_objects(detail::ArchiveReader& reader, const fs::path& file, const BundleManifest& manifest, ObjectSink& sink,
                  VolumeReport& report) {
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < manifest.objects.size(); ++i) position[manifest.objects[i].digest] = i;
  std::vector<bool> seen(manifest.objects.size(), false);
  archive_entry* entry = nullptr;
  for (std::size_t i = 0; i < manifest.objects.size(); ++i) {
    if (!reader.next(entry))
      throw Error("bundle " + file.string() + " is truncated: it ends before object " + std::to_string(i + 1) + " of " +
                  std::to_string(manifest.objects.size()));
    std::string name = checked_entry_name(entry, file);
    std::string_view digest(name);
    if (!digest.starts_with(kObjectPrefix)) refuse_entry(name, file, "not in the manifest");
    digest.remove_prefix(kObjectPrefix.size());
    auto it = position.find(std::string(digest));
    if (it == position.end()) refuse_entry(name, file, "not in the manifest");
    if (seen[it->second]) refuse_entry(name, file, "duplicate entry");
    if (it->second != i) refuse_entry(name, file, "out of manifest order");
    seen[i] = true;
    const ManifestObject& object = manifest.objects[i];
    auto size = static_cast<std::uint64_t>(archive_entry_size(entry));
    if (size != object.size)
      refuse_entry(name, file, mismatch_message("size disagrees with the manifest", std::to_string(object.size), std::to_string(size)));
    if (sink.already_present(object)) {
      reader.skip();
      ++report.objects_present;
      continue;
    }
    sink.receive(reader, object, report);
  }
  if (reader.next(entry)) {
    const char* raw = archive_entry_pathname(entry);
    refuse_entry(raw ? raw : "", file, "not in the manifest (after its last object)");
  }
}

// Reads one volume. `manifest` is set as soon as the signature (and the manifest's expiry and
// rows) have vouched for it, so the caller can account for what a damaged volume still delivered.
void read_volume(const VolumeSource& source, const std::vector<PublicKey>& trusted, const VerifyOptions& options,
                 ObjectSink& sink, VolumeReport& report, std::optional<BundleManifest>& manifest) {
  const fs::path& file = source.file;
  report.file = file;
  report.rebuilt = source.rebuilt;
  OpenVolume volume = open_volume(source);
  detail::ArchiveReader& reader = *volume.reader;
  manifest = read_header(reader, file, trusted, options, report);
  report.bundle_id = manifest->bundle_id;
  report.volume_index = manifest->volume_index;
  report.volume_count = manifest->volume_count;
  report.objects = manifest->objects.size();

  std::exception_ptr reading_error;
  try {
    read_objects(reader, file, *manifest, sink, report);
  } catch (...) {
    reading_error = std::current_exception();
  }
  // An object received before what reading found wrong comes first in the volume: its
  // failure is the volume's error, as if the volume had been read one object at a time.
  sink.finish(report);
  if (reading_error) std::rethrow_exception(reading_error);
}

// Pulls one entry's data through `consume`, insisting on exactly `size` bytes.
template <typename Consume>
void stream_entry(detail::ArchiveReader& reader, const ManifestObject& object, Consume&& consume) {
  const void* data = nullptr;
  std::size_t size = 0;
  std::uint64_t total = 0;
  while (reader.read_block(data, size)) {
    total += size;
    if (total > object.size) throw Error("object " + object.digest + " in " + reader.where() + " is longer than its manifest entry");
    consume(data, size);
  }
  if (total != object.size)
    throw Error("bundle " + reader.where() + " is truncated inside object " + object.digest);
}

// Verifies a volume's objects on several cores: this thread reads the tar and hands each
// object's bytes to the hash lanes, which hash it while the next is read (and, with more
// cores, several objects at once). Digests are judged in manifest order as they come, so the
// first damaged object is the one reported, as when one object was hashed at a time.
class HashingSink : public ObjectSink {
 public:
  HashingSink() : lanes_(std::max(2u, std::thread::hardware_concurrency())) {}
  bool already_present(const ManifestObject&) override { return false; }
  void receive(detail::ArchiveReader& reader, const ManifestObject& object, VolumeReport& report) override {
    judge_hashed(report, HashLanes::Wait::no);
    const std::size_t number = lanes_.begin();
    stream_entry(reader, object, [&](const void* data, std::size_t size) { lanes_.update(data, size); });
    lanes_.end();
    pending_.push_back({number, object, reader.where()});
  }
  void finish(VolumeReport& report) override { judge_hashed(report, HashLanes::Wait::yes); }
  std::set<std::string> verified;

 private:
  struct Pending {
    std::size_t number;
    ManifestObject object;
    std::string where;
  };
  // Judges the hashed objects at the head of the queue, in order; with Wait::yes, all of them.
  void judge_hashed(VolumeReport& report, HashLanes::Wait wait) {
    while (!pending_.empty()) {
      const Pending& oldest = pending_.front();
      auto got = lanes_.digest(oldest.number, wait);
      if (!got) return;
      if (*got != oldest.object.digest) {
        const std::string message = mismatch_message("object in " + oldest.where + " is damaged",
                                                     "sha256:" + oldest.object.digest, "sha256:" + *got);
        pending_.clear();
        throw Error(message);
      }
      verified.insert(oldest.object.digest);
      ++report.objects_verified;
      report.bytes_verified += oldest.object.size;
      pending_.pop_front();
    }
  }

  HashLanes lanes_;
  std::deque<Pending> pending_;
};

// Test-only hooks, so that a test can SIGKILL an import at a known point (tests/bundle/
// cli_test.cpp). When the variable names a FIFO that the test holds open for reading, the
// import announces the point on it (`line`) and then waits until no reader is left. Unset, or
// naming anything but a FIFO with a reader, it does nothing. The points:
//   PODPLANE_TEST_IMPORT_PAUSE        after the first object commits ("committed <digest>")
//   PODPLANE_TEST_IMPORT_PAUSE_VIEWS  after every row commits, before the views are written
//                                     ("rows committed")
void pause_for_test(const char* variable, const std::string& line) {
  const char* fifo = std::getenv(variable);
  if (fifo == nullptr) return;
  UniqueFd fd(::open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) return;
  pollfd until_no_reader{fd.get(), 0, 0};  // POLLERR once the last reader has closed its end
  while (::poll(&until_no_reader, 1, -1) < 0 && errno == EINTR) {
  }
}

void pause_for_test_after_first_commit(const std::string& digest) {
  static bool paused = false;
  if (paused) return;
  paused = true;
  pause_for_test("PODPLANE_TEST_IMPORT_PAUSE", "committed " + digest + "\n");
}

// Imports a volume's objects on several cores. This thread reads the tar and only copies
// each object into a temp file of the store; reading it back to hash it, checking the digest
// and syncing it (ObjectWriter::seal) run on the pool, a few objects at once, so the hashing
// of one overlaps the copying of the next and the disk's work for both. Publishing (rename,
// then row) comes back to this thread, the Store's, in manifest order: the store ends exactly
// as after a one-object-at-a-time import, with every object before the first damaged one and
// none after it.
class StoreSink : public ObjectSink {
 public:
  explicit StoreSink(cache::Store& store)
      : store_(store), pool_(std::max(2u, std::thread::hardware_concurrency())) {}
  ~StoreSink() override { drop_in_flight(); }
  StoreSink(const StoreSink&) = delete;
  StoreSink& operator=(const StoreSink&) = delete;

  bool already_present(const ManifestObject& object) override { return store_.has_object(object.digest); }

  void receive(detail::ArchiveReader& reader, const ManifestObject& object, VolumeReport& report) override {
    publish_ready(report, Wait::no);
    // Copied but not yet published: bounded, so that damage found late wastes little work
    // and the disk's backlog of dirty pages stays small.
    while (!in_flight_.empty() && (in_flight_.size() >= kMaxInFlight || bytes_in_flight_ >= kMaxBytesInFlight))
      publish_ready(report, Wait::for_oldest);
    auto owned = std::make_unique<Sealing>(object, reader.where(), store_.new_object_hashed_at_seal());
    stream_entry(reader, object, [&](const void* data, std::size_t size) { owned->writer.write(data, size); });
    Sealing* sealing = owned.get();
    in_flight_.push_back(std::move(owned));
    bytes_in_flight_ += object.size;
    // The task only borrows it: this thread destroys it (and so removes an unpublished temp
    // file) once the pool has no task left that uses it.
    pool_.submit([this, sealing] {
      std::exception_ptr error;
      try {
        sealing->writer.seal(sealing->object.digest);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        sealing->error = error;
        sealing->sealed = true;
      }
      sealed_.notify_all();
    });
  }

  void finish(VolumeReport& report) override {
    while (!in_flight_.empty()) publish_ready(report, Wait::for_oldest);
  }

 private:
  static constexpr std::size_t kMaxInFlight = 16;
  static constexpr std::uint64_t kMaxBytesInFlight = 128ULL << 20;

  struct Sealing {
    Sealing(ManifestObject of, std::string in, cache::ObjectWriter into)
        : object(std::move(of)), where(std::move(in)), writer(std::move(into)) {}
    ManifestObject object;
    std::string where;
    cache::ObjectWriter writer;
    std::exception_ptr error;  // set with `sealed`, under mutex_
    bool sealed = false;
  };
  enum class Wait { no, for_oldest };

  // Publishes the sealed objects at the head of the queue, in order (waiting for the oldest
  // first if asked). The first failure drops everything after it and is thrown.
  void publish_ready(VolumeReport& report, Wait wait) {
    while (!in_flight_.empty()) {
      Sealing* oldest = in_flight_.front().get();
      {
        std::unique_lock lock(mutex_);
        if (!oldest->sealed && wait == Wait::no) return;
        sealed_.wait(lock, [&] { return oldest->sealed; });
      }
      wait = Wait::no;
      std::unique_ptr<Sealing> sealed = std::move(in_flight_.front());
      in_flight_.pop_front();
      bytes_in_flight_ -= sealed->object.size;
      try {
        publish(*sealed, report);
      } catch (...) {
        drop_in_flight();
        throw;
      }
    }
  }

  void publish(Sealing& sealing, VolumeReport& report) {
    try {
      if (sealing.error) std::rethrow_exception(sealing.error);
      (void)sealing.writer.publish();
    } catch (const Error& e) {
      throw Error("object in " + sealing.where + " is damaged and was not imported: " + e.what());
    }
    ++report.objects_verified;
    report.bytes_verified += sealing.object.size;
    pause_for_test_after_first_commit(sealing.object.digest);
  }

  // Waits for the pool, then forgets what it sealed: the writers remove their temp files.
  void drop_in_flight() noexcept {
    pool_.wait();
    in_flight_.clear();
    bytes_in_flight_ = 0;
  }

  cache::Store& store_;
  std::mutex mutex_;
  std::condition_variable sealed_;
  std::deque<std::unique_ptr<Sealing>> in_flight_;  // this thread's alone
  std::uint64_t bytes_in_flight_ = 0;
  TaskPool pool_;  // last: destroyed first, so no task outlives what it uses
};

std::vector<PublicKey> load_trusted(const VerifyOptions& options) {
  std::vector<PublicKey> keys;
  for (const auto& file : options.trusted_keys) keys.push_back(PublicKey::load(file));
  return keys;
}

// Lists volumes of a multi-volume bundle that no file delivered, in this run or (per the
// audit log of `store`, when given) a complete earlier import.
void find_missing_volumes(ImportReport& report, const cache::Store* store) {
  std::map<std::string, std::pair<int, std::set<int>>> bundles;
  for (const auto& v : report.volumes) {
    if (v.bundle_id.empty()) continue;
    auto& [count, seen] = bundles[v.bundle_id];
    count = v.volume_count;
    seen.insert(v.volume_index);
  }
  if (store != nullptr && !bundles.empty()) {
    for (const auto& entry : store->audit_log()) {
      if (entry.action != "bundle-import") continue;
      json detail = json::parse(entry.detail, nullptr, false);
      if (!detail.is_object() || !detail.contains("volumes") || !detail["volumes"].is_array()) continue;
      for (const auto& v : detail["volumes"]) {
        if (!v.is_object() || !v.value("complete", false)) continue;
        auto it = bundles.find(v.value("bundle_id", ""));
        if (it != bundles.end()) it->second.second.insert(v.value("volume_index", 0));
      }
    }
  }
  // An import tells what the store still lacks; verify, which has no store, what it was not given.
  const std::string why = store != nullptr ? " has not been imported: its objects are still missing"
                                           : " was not among the files given: its objects were not verified";
  for (const auto& [id, info] : bundles) {
    for (int k = 1; k <= info.first; ++k) {
      if (!info.second.count(k))
        report.missing_volumes.push_back("volume " + std::to_string(k) + " of " + std::to_string(info.first) + " of bundle " +
                                         id.substr(0, 12) + why);
    }
  }
}

struct ImportedManifest {
  BundleManifest manifest;
  std::string signer;  // "sha256:<key id>" or "unsigned"
};

std::string short_id(const BundleManifest& m) { return m.bundle_id.substr(0, 12); }

// How `next` would move the store's `current` selection backwards: a provider at a lower
// version or gone, the stack's module package at a lower version. Empty when it does not.
std::vector<std::string> backward_steps(const cache::TfSelection& current, const cache::TfSelection& next) {
  std::vector<std::string> steps;
  for (const auto& old : current.providers) {
    auto it = std::find_if(next.providers.begin(), next.providers.end(), [&](const auto& p) { return p.address == old.address; });
    if (it == next.providers.end()) steps.push_back("it drops provider " + old.address + " " + old.version);
    else if (cache::version_precedes(it->version, old.version)) steps.push_back("provider " + old.address + " " + old.version + " -> " + it->version);
  }
  if (!current.module_version.empty() && next.module_address == current.module_address &&
      cache::version_precedes(next.module_version, current.module_version)) {
    steps.push_back("module " + current.module_address + " " + current.module_version + " -> " + next.module_version);
  }
  return steps;
}

bool same_selection(const cache::TfSelection& a, const cache::TfSelection& b) {
  auto key = [](const cache::TfSelection& s) {
    std::vector<std::string> parts{s.module_address, s.module_version, s.engine};
    for (const auto& p : s.providers) parts.push_back(p.address + " " + p.version + " " + p.constraints);
    std::sort(parts.begin() + 3, parts.end());
    return parts;
  };
  return key(a) == key(b);
}

// The selection of the newest bundle applies once every provider it names is here, and only
// forward: a bundle older than the newest its signer gave us before (a replay), or one whose
// selection has lower versions or fewer providers than the store's, is held unless
// Downgrades::allow. Its objects and rows were imported all the same (the store is additive).
void apply_selection(cache::Store& store, const std::vector<ImportedManifest>& manifests,
                     const std::map<std::string, std::optional<cache::BundleSignerMark>>& marks_before,
                     const VerifyOptions& options, ImportReport& report) {
  const ImportedManifest* newest = nullptr;
  for (const auto& m : manifests)
    if (m.manifest.tf_selection && (newest == nullptr || m.manifest.created_at > newest->manifest.created_at)) newest = &m;
  if (newest == nullptr) return;
  const BundleManifest& bundle = newest->manifest;
  cache::TfSelection selection = *bundle.tf_selection;
  std::vector<std::string> lacking;
  for (const auto& p : selection.providers) {
    cache::ArtifactQuery query;
    query.kind = cache::ArtifactKind::provider_package;
    query.address = p.address;
    query.version = p.version;
    if (store.artifacts(query).empty()) lacking.push_back(p.address + " " + p.version);
  }
  if (!lacking.empty()) {
    std::string list;
    for (const auto& l : lacking) list += (list.empty() ? "" : ", ") + l;
    report.notes.push_back("provider selection not applied yet: no package in the store for " + list);
    return;
  }
  auto current = store.tf_selection();
  std::set<std::string> platforms(selection.platforms.begin(), selection.platforms.end());
  if (current) platforms.insert(current->platforms.begin(), current->platforms.end());
  selection.platforms.assign(platforms.begin(), platforms.end());

  std::vector<std::string> backwards;
  auto mark = marks_before.find(newest->signer);
  if (mark != marks_before.end() && mark->second && bundle.created_at < mark->second->created_at) {
    backwards.push_back("bundle " + short_id(bundle) + " (created " + bundle.created_at + ") is older than bundle " +
                        mark->second->bundle_id.substr(0, 12) + " (created " + mark->second->created_at +
                        "), the newest already imported from " + newest->signer + ": a replay or a rollback");
  }
  if (current) {
    for (auto& step : backward_steps(*current, selection)) backwards.push_back("its selection moves back: " + step);
  }
  if (backwards.empty()) {
    store.in_transaction([&] { store.set_tf_selection(selection); });
    return;
  }
  if (options.downgrades == Downgrades::allow) {
    store.in_transaction([&] { store.set_tf_selection(selection); });
    for (const auto& why : backwards) {
      report.notes.push_back("tf selection of bundle " + short_id(bundle) + " applied by --allow-downgrade although " + why);
    }
    return;
  }
  if (current && same_selection(*current, selection)) {
    for (const auto& why : backwards) report.notes.push_back(why + "; its selection is the store's already, nothing moved");
    return;
  }
  for (const auto& why : backwards) report.held.push_back(why);
  report.held.push_back("the tf selection of bundle " + short_id(bundle) +
                        " was not applied; the store keeps its own (objects and rows were imported). Pass "
                        "--allow-downgrade to apply it");
}

// Whether the store holds an object, each digest asked once per volume.
class PresentObjects {
 public:
  explicit PresentObjects(const cache::Store& store) : store_(store) {}
  bool operator()(const std::string& digest) {
    auto it = present_.find(digest);
    if (it != present_.end()) return it->second;
    return present_[digest] = store_.has_object(digest);
  }

 private:
  const cache::Store& store_;
  std::map<std::string, bool> present_;
};

// Rows name their objects' hashes (size, zh, h1 of a zip, the upstream digest): the first
// problem of a new row whose object is here, checked before any row of the volume commits;
// empty when there is none.
std::string first_content_problem(const cache::Store& store, const BundleManifest& manifest, PresentObjects& have) {
  for (const auto& travelling : manifest.artifacts) {
    const cache::Artifact& a = travelling.artifact;
    if (!have(a.digest)) continue;
    auto existing = store.find_artifact(a.kind, a.address, a.version, a.platform, a.filename);
    if (existing && existing->digest == a.digest) continue;  // checked when it came in
    cache::Artifact row = a;
    row.zh = cache::zh_of(row);
    auto problems = cache::artifact_content_problems(store, row);
    if (!problems.empty()) return problems.front();
  }
  return {};
}

// The artifact rows whose objects are here, each with the provenance whose documents are here
// too; a row naming another object than the store's for the same item is a conflict. Returns
// how many rows are new to the store.
std::size_t add_artifact_rows(cache::Store& store, const BundleManifest& manifest, PresentObjects& have,
                              std::vector<std::string>& conflicts) {
  std::size_t added = 0;
  for (const auto& travelling : manifest.artifacts) {
    const cache::Artifact& a = travelling.artifact;
    if (!have(a.digest)) continue;
    auto existing = store.find_artifact(a.kind, a.address, a.version, a.platform, a.filename);
    if (existing && existing->digest != a.digest) {
      conflicts.push_back(mismatch_message("bundle row conflicts with the store for " + cache::describe(a),
                                           "sha256:" + existing->digest, "sha256:" + a.digest));
      continue;
    }
    cache::Artifact row = a;
    row.id = 0;
    std::int64_t id = store.add_artifact(row);
    if (!existing) ++added;
    auto known = store.provenance_of(id);
    for (auto p : travelling.provenance) {
      bool complete = true;
      for (const auto* d : {&p.shasums_digest, &p.signature_digest, &p.keys_digest})
        if (!d->empty() && !have(*d)) complete = false;
      if (!complete) continue;
      bool duplicate = std::any_of(known.begin(), known.end(), [&](const cache::Provenance& k) {
        return k.shasums_digest == p.shasums_digest && k.signature_digest == p.signature_digest &&
               k.keys_digest == p.keys_digest && k.key_fingerprint == p.key_fingerprint && k.result == p.result;
      });
      if (duplicate) continue;
      p.artifact_id = id;
      store.add_provenance(p);
    }
  }
  return added;
}

// The volume's rows checked again as they come in, by what the table says each kind gets at
// import (cache/recheck.hpp): an engine release zip against its SHA256SUMS (which travels with
// it, ahead of it) signed by the pinned release key, podplane's own release files against the
// SHA256SUMS that travels with them under the bundle's signature, and, where the cosign policy
// names keys, each image's stored signature. Checked against the rows as this transaction left
// them: throws, rolling the volume's rows back, on the first failure.
void recheck_volume_rows(const cache::Store& store, const BundleManifest& manifest, const cache::CosignPolicy& cosign_policy,
                         PresentObjects& have) {
  std::vector<cache::Artifact> rows;
  for (const auto& travelling : manifest.artifacts) {
    const cache::Artifact& a = travelling.artifact;
    if (!have(a.digest)) continue;
    auto row = store.find_artifact(a.kind, a.address, a.version, a.platform, a.filename);
    rows.push_back(row ? *row : a);
  }
  if (auto refusal = cache::recheck_rows(store, rows, cache::RecheckAt::import, &cosign_policy).first_refusal())
    throw Error(*refusal);
}

// The module trees whose files are all here; a tree of another h1 than the store's is a conflict.
// Returns how many trees are new to the store.
std::size_t add_module_tree_rows(cache::Store& store, const BundleManifest& manifest, PresentObjects& have,
                                 std::vector<std::string>& conflicts) {
  std::size_t added = 0;
  for (const auto& tree : manifest.module_trees) {
    if (!std::all_of(tree.files.begin(), tree.files.end(), [&](const auto& f) { return have(f.digest); })) continue;
    auto existing = store.find_module_tree(tree.address, tree.version);
    if (existing && existing->h1 != tree.h1) {
      conflicts.push_back(mismatch_message("bundle module tree conflicts with the store for " + tree.address + " " +
                                           tree.version, existing->h1, tree.h1));
      continue;
    }
    cache::ModuleTree row = tree;
    row.id = 0;
    (void)store.add_module_tree(row);
    if (!existing) ++added;
  }
  return added;
}

// The rows of one volume whose objects are all here, in one transaction (rerun whole on a busy
// store); what stops them is the volume's error, further conflicts are notes. The volume's
// counts of added rows are what the transaction committed: none when it rolled back.
void commit_volume_rows(cache::Store& store, const BundleManifest& manifest, const cache::CosignPolicy& cosign_policy,
                        VolumeReport& volume, ImportReport& report) {
  PresentObjects have(store);
  std::string content_problem = first_content_problem(store, manifest, have);
  if (!content_problem.empty()) {
    if (volume.error.empty()) volume.error = "index rows not recorded: " + content_problem;
    return;
  }
  std::vector<std::string> conflicts;
  std::size_t artifacts_added = 0, module_trees_added = 0;
  try {
    store.in_transaction([&] {
      conflicts.clear();
      artifacts_added = add_artifact_rows(store, manifest, have, conflicts);
      recheck_volume_rows(store, manifest, cosign_policy, have);
      module_trees_added = add_module_tree_rows(store, manifest, have, conflicts);
    });
    volume.artifacts_added = artifacts_added;
    volume.module_trees_added = module_trees_added;
  } catch (const Error& e) {
    if (volume.error.empty()) volume.error = std::string("index rows not recorded: ") + e.what();
  }
  for (const auto& c : conflicts) {
    if (volume.error.empty()) volume.error = c;
    else report.notes.push_back(c);
  }
}

// Rows of any given manifest that still lack objects, described and sorted.
std::vector<std::string> rows_waiting(const cache::Store& store, const std::vector<ImportedManifest>& manifests) {
  std::set<std::string> waiting;
  for (const auto& [m, signer] : manifests) {
    for (const auto& travelling : m.artifacts)
      for (const auto& d : objects_of(travelling))
        if (!store.has_object(d)) {
          waiting.insert(cache::describe(travelling.artifact));
          break;
        }
    for (const auto& tree : m.module_trees)
      for (const auto& f : tree.files)
        if (!store.has_object(f.digest)) {
          waiting.insert("module " + tree.address + " " + tree.version);
          break;
        }
  }
  return {waiting.begin(), waiting.end()};
}

void audit_import(cache::Store& store, const std::vector<fs::path>& files, const ImportReport& report) {
  json volumes = json::array();
  std::uint64_t imported = 0, bytes = 0;
  for (const auto& v : report.volumes) {
    imported += v.objects_verified;
    bytes += v.bytes_verified;
    volumes.push_back({{"file", v.file.string()},
                       {"bundle_id", v.bundle_id},
                       {"volume_index", v.volume_index},
                       {"volume_count", v.volume_count},
                       {"complete", !v.bundle_id.empty() && v.error.empty() && v.missing_objects.empty()},
                       {"signer", v.signer},
                       {"trusted", v.trusted_signer},
                       {"objects", v.objects},
                       {"imported", v.objects_verified},
                       {"already_present", v.objects_present},
                       {"missing", v.missing_objects.size()},
                       {"expired_at", v.expired_at},
                       {"rebuilt_from_parity", v.rebuilt},
                       {"error", v.error}});
  }
  store.audit("bundle-import", files.empty() ? "" : files.front().string(),
              {{"volumes", volumes},
               {"objects_imported", imported},
               {"bytes_imported", bytes},
               {"missing_volumes", report.missing_volumes},
               {"waiting_rows", report.waiting_rows.size()},
               {"selection_held", report.held},
               {"parity", report.parity},
               {"lost_volumes", report.lost},
               {"ok", report.ok()}});
}

enum class LostBundles { refuse, read_anyway };

std::string parity_finding(const ParityOutcome& outcome) {
  std::string finding;
  for (const auto& name : outcome.damaged) finding += (finding.empty() ? "" : ", ") + name + " damaged";
  for (const auto& name : outcome.missing) finding += (finding.empty() ? "" : ", ") + name + " missing";
  return finding;
}

// What par2 found, as the report's `parity:` and `lost:` lines, and the volumes to read. A
// bundle whose lost volumes parity cannot rebuild is refused whole by an import (none of its
// volumes is read, so nothing of it enters the store); verify still reads what it can.
std::vector<VolumeSource> take_parity_findings(PreparedVolumes& prepared, ImportReport& report, LostBundles lost_bundles) {
  for (auto& note : prepared.notes) report.notes.push_back(std::move(note));
  std::vector<VolumeSource> sources = std::move(prepared.sources);
  for (const auto& outcome : prepared.outcomes) {
    const std::string bundle = "bundle " + outcome.set.bundle + ": ";
    const std::string covered = std::to_string(outcome.set.volumes.size()) + " volume(s) covered by " +
                                std::to_string(outcome.set.files.size()) + " parity file(s)";
    if (outcome.damaged.empty() && outcome.missing.empty()) {
      report.parity.push_back(bundle + covered + ", all whole (each of the size and MD5 the parity set describes)");
    } else if (outcome.repaired) {
      report.parity.push_back(bundle + parity_finding(outcome) +
                              (lost_bundles == LostBundles::refuse
                                   ? ": repaired from parity (rebuilt by par2, then imported like any volume)"
                                   : ": repairable from parity (rebuilt by par2 into a scratch dir and verified below)"));
    }
    if (outcome.lost.empty()) continue;
    std::string finding = parity_finding(outcome);
    report.parity.push_back(bundle + (finding.empty() ? std::string("volumes lost") : finding) +
                            ": NOT repairable from parity (" + outcome.why_lost + ")" +
                            (lost_bundles == LostBundles::refuse ? "; none of its volumes is imported" : ""));
    for (const auto& name : outcome.lost) {
      const bool damaged = std::find(outcome.damaged.begin(), outcome.damaged.end(), name) != outcome.damaged.end();
      report.lost.push_back(name + (damaged ? " (damaged)" : " (missing)"));
    }
    if (lost_bundles == LostBundles::read_anyway) continue;
    for (const auto& file : outcome.given) {
      std::erase_if(sources, [&](const VolumeSource& source) { return source.file == file; });
      VolumeReport refused;
      refused.file = file;
      refused.held_back = true;
      refused.error = "not imported: bundle " + outcome.set.bundle + " has lost volumes that parity cannot rebuild (" +
                      std::to_string(outcome.lost.size()) + " lost, listed below)";
      report.volumes.push_back(std::move(refused));
    }
  }
  return sources;
}

void import_sources(cache::Store& store, const std::vector<VolumeSource>& sources, const std::vector<fs::path>& files,
                    const VerifyOptions& options, ImportReport& report) {
  if (store.read_only()) throw Error("cannot import into the read-only store at " + store.root().string());
  std::vector<PublicKey> trusted = load_trusted(options);
  const auto cosign_policy = cache::cosign_policy_of(options.cosign_keys, options.cosign_policy, options.cosign_keyless);
  std::vector<ImportedManifest> manifests;
  const std::string identity = store.identity();
  // The newest bundle of each signer before this run: a bundle older than that is a replay.
  std::map<std::string, std::optional<cache::BundleSignerMark>> marks_before;
  // Rows commit volume by volume and the views are written once at the end: a kill in between
  // leaves this mark, and the store's next open writes the views.
  cache::ViewsPending views_pending = store.views_pending();

  for (const auto& source : sources) {
    VolumeReport volume;
    std::optional<BundleManifest> manifest;
    StoreSink sink(store);
    try {
      read_volume(source, trusted, options, sink, volume, manifest);
    } catch (const Error& e) {
      volume.error = e.what();
    }
    if (!manifest) {
      report.volumes.push_back(std::move(volume));
      continue;
    }
    for (const auto& object : manifest->objects)
      if (!store.has_object(object.digest)) volume.missing_objects.push_back(object.digest);
    if (!marks_before.count(volume.signer)) marks_before[volume.signer] = store.bundle_signer(volume.signer);
    if (manifest->since && !manifest->since->store_id.empty() && manifest->since->store_id != identity)
      report.notes.push_back("bundle " + manifest->bundle_id.substr(0, 12) + " is a delta cut against store " +
                             manifest->since->store_id + ", not this store (" + identity +
                             "): rows whose objects this store lacks wait for them");

    commit_volume_rows(store, *manifest, cosign_policy, volume, report);
    manifests.push_back({std::move(*manifest), volume.signer});
    report.volumes.push_back(std::move(volume));
  }

  apply_selection(store, manifests, marks_before, options, report);
  // Rollback protection from now on: the newest bundle each signer gave us.
  for (const auto& m : manifests) store.record_bundle_signer(m.signer, m.manifest.created_at, m.manifest.bundle_id);

  report.waiting_rows = rows_waiting(store, manifests);
  find_missing_volumes(report, &store);

  if (!manifests.empty()) {
    pause_for_test("PODPLANE_TEST_IMPORT_PAUSE_VIEWS", "rows committed\n");
    cache::rebuild_views(store);
  }
  views_pending.done();
  audit_import(store, files, report);
}

}  // namespace

bool ImportReport::ok() const {
  return missing_volumes.empty() && waiting_rows.empty() && held.empty() && lost.empty() &&
         std::all_of(volumes.begin(), volumes.end(), [](const VolumeReport& v) { return v.error.empty(); });
}

ImportReport verify_bundle(const std::vector<fs::path>& files, const VerifyOptions& options) {
  std::vector<PublicKey> trusted = load_trusted(options);
  ImportReport report;
  PreparedVolumes prepared = prepare_volumes(files, options.parity);
  for (const auto& source : take_parity_findings(prepared, report, LostBundles::read_anyway)) {
    VolumeReport volume;
    std::optional<BundleManifest> manifest;
    HashingSink sink;
    try {
      read_volume(source, trusted, options, sink, volume, manifest);
    } catch (const Error& e) {
      volume.error = e.what();
    }
    if (manifest)
      for (const auto& object : manifest->objects)
        if (!sink.verified.count(object.digest)) volume.missing_objects.push_back(object.digest);
    report.volumes.push_back(std::move(volume));
  }
  find_missing_volumes(report, nullptr);
  return report;
}

ImportReport import_bundle(cache::Store& store, const std::vector<fs::path>& files, const VerifyOptions& options) {
  if (store.read_only()) throw Error("cannot import into the read-only store at " + store.root().string());
  ImportReport report;
  PreparedVolumes prepared = prepare_volumes(files, options.parity);
  const std::vector<VolumeSource> sources = take_parity_findings(prepared, report, LostBundles::refuse);
  import_sources(store, sources, files, options, report);
  return report;
}

ImportReport import_bundle(const fs::path& deps_root, const std::vector<fs::path>& files, const VerifyOptions& options) {
  std::vector<PublicKey> trusted = load_trusted(options);
  (void)cache::cosign_policy_of(options.cosign_keys, options.cosign_policy, options.cosign_keyless);  // a bad key or policy stops it before a store exists
  // Parity first, before any store is opened: a bundle parity cannot make whole is refused
  // with the store as it was.
  ImportReport report;
  PreparedVolumes prepared = prepare_volumes(files, options.parity);
  const std::vector<VolumeSource> sources = take_parity_findings(prepared, report, LostBundles::refuse);
  if (sources.empty()) return report;
  // A refused import leaves no trace: when no volume can be imported (missing, unsigned,
  // untrusted, forged, expired, bad rows), the report says why and no store is created.
  // An existing store has nothing to leave behind, so its import reads each header once.
  if (!fs::exists(cache::layout::index_db(deps_root))) {
    ImportReport preflight = report;
    bool any = false;
    for (const auto& source : sources) {
      VolumeReport volume;
      volume.file = source.file;
      volume.rebuilt = source.rebuilt;
      try {
        OpenVolume open = open_volume(source);
        auto manifest = read_header(*open.reader, source.file, trusted, options, volume);
        volume.bundle_id = manifest.bundle_id;
        volume.volume_index = manifest.volume_index;
        volume.volume_count = manifest.volume_count;
        any = true;
      } catch (const Error& e) {
        volume.error = e.what();
      }
      preflight.volumes.push_back(std::move(volume));
    }
    if (!any) {
      for (auto& volume : preflight.volumes) volume.bundle_id.clear();
      return preflight;
    }
  }
  auto store = cache::Store::open(deps_root, cache::Store::Access::read_write);
  import_sources(store, sources, files, options, report);
  return report;
}

VolumeHeader read_volume_header(const fs::path& file, const VerifyOptions& options) {
  std::vector<PublicKey> trusted = load_trusted(options);
  VolumeReport report;
  report.file = file;
  OpenVolume open = open_volume(VolumeSource{file, file, ""});
  VolumeHeader header{read_header(*open.reader, file, trusted, options, report), report.signer, report.trusted_signer,
                      !report.expired_at.empty()};
  return header;
}

}  // namespace podplane::bundle
