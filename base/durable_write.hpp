#pragma once
// Writing a file a user relies on (a lock file, an inventory, a cluster config, a view, an
// exported document) so that a reader, a crash or an error finds the whole old file or the
// whole new one, never a mix and never a truncated file. The one owner of temp-beside, fsync,
// rename and directory fsync; every caller that replaces a file goes through here.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace podplane {

// The permission bits a written file gets: `exact` (whatever the umask says), or, without it,
// 0666 less the umask, as for any file a program creates.
struct FileMode {
  std::optional<std::uint32_t> exact;
};

// Replaces (or creates) `path` with `bytes`: a temp file in the same directory
// (temp_path_beside), every byte written, the file fsynced and closed, renamed over `path`,
// and the directory fsynced, each result checked. On any error the temp is removed, `path`
// is as it was, and podplane::Error says what failed and where. Concurrent writers of one
// path never share a temp: the last rename wins, whole.
// A user's target keeps what it is: a symbolic link is followed (write_target) and the file it
// names is replaced, the link kept; a device, FIFO or socket is opened and written in place,
// never replaced by a regular file.
void write_file_durably(const std::filesystem::path& path, std::string_view bytes, FileMode mode = {});

// The file a write of `path` lands in: `path`, or, where `path` is a symbolic link, the end of
// its chain of links (which need not exist yet). Error on a loop of links.
[[nodiscard]] std::filesystem::path write_target(const std::filesystem::path& path);

// Several files at once (the store's views), each with write_file_durably's guarantees but
// one: these are the store's own files, so a link or device found in their place is replaced,
// never written through (nothing planted in a deps root can send a write outside it). Their
// syncs are overlapped:
// the temp files written and fsynced on a few threads, then renamed in the order given, and
// each directory fsynced once. The first error (in the order given) is thrown after the rest
// were written or left as they were; a file whose temp failed keeps its old content.
struct FileToWrite {
  std::filesystem::path path;
  std::string_view bytes;
  FileMode mode;
};
void write_files_durably(const std::vector<FileToWrite>& files);

// True when `path` is a regular file holding exactly `bytes` (no link followed): replacing it
// would change nothing, so callers that report "unchanged" skip the write.
[[nodiscard]] bool file_holds(const std::filesystem::path& path, std::string_view bytes);

// ".<name>.tmp-<pid>-<random>" beside `path`: unique to this process and call, hidden, and
// recognised by is_temp_path_beside (a crash leaves only such names, which sweeps may drop).
[[nodiscard]] std::filesystem::path temp_path_beside(const std::filesystem::path& path);
[[nodiscard]] bool is_temp_path_beside(const std::filesystem::path& path);

// Writes all of `bytes` to `fd` (retrying short writes and EINTR); `file` names it in errors.
void write_all(int fd, std::string_view bytes, const std::filesystem::path& file);

// Makes the entries of `dir` (a rename into it) durable. A file system that cannot sync a
// directory (EINVAL: some FUSE and FAT mounts) has no more to give and is not an error.
void sync_directory(const std::filesystem::path& dir);

}  // namespace podplane
