#pragma once
// Changing a set of files in one directory all or nothing, so that `cluster create|upgrade`
// can promise that an error leaves every file of a stack as it was.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::generator {

// The permission bits a written file gets, less the umask.
enum class FileMode {
  regular,     // 0644
  executable,  // 0755: a script the user runs
};

// One file of the set: its new bytes, or its removal.
struct FileChange {
  std::string name;                    // a file name in the directory (no '/')
  std::optional<std::string> content;  // std::nullopt: remove the file
  FileMode mode = FileMode::regular;   // of the new content
};

// The file system operations of a staged write: a seam so that tests can fail any one of
// them. The methods act on the real file system and throw podplane::Error.
class Disk {
 public:
  virtual ~Disk() = default;
  // Creates `file` (which must not exist; `mode` less the umask) holding `content`, synced.
  virtual void write_new(const std::filesystem::path& file, std::string_view content, FileMode mode);
  // Makes `file` another name for `from` (a hard link); false where the file system has none.
  [[nodiscard]] virtual bool link_new(const std::filesystem::path& from, const std::filesystem::path& file);
  // Creates `file` as a synced copy of `from`: its bytes, its mode and its times.
  virtual void copy_new(const std::filesystem::path& from, const std::filesystem::path& file);
  virtual void rename(const std::filesystem::path& from, const std::filesystem::path& to);
  virtual void remove(const std::filesystem::path& file);
  virtual void sync_directory(const std::filesystem::path& dir);
};

// Applies `changes`, in order, to the files of `dir`, all or nothing. Every byte is written
// first: each new content to a temp file in `dir` (".podplane.tmp.*"), and each file it
// replaces kept under another temp name (a hard link, else a copy). Only then is each temp renamed over its target and each removed file
// renamed aside, and `dir` synced. A target that is a symbolic link stays one: the file it
// points to is replaced (its temps beside it, its directory synced too). An error at any step undoes the renames made so far (by
// renames alone) and deletes the temps before it is rethrown: every file is as it was, bytes,
// mode and times. A crash leaves each target old or new, never half written.
void write_all_or_nothing(const std::filesystem::path& dir, const std::vector<FileChange>& changes, Disk& disk);

}  // namespace podplane::generator
