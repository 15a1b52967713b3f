#pragma once
// libzip and ISA-L, owned and checked in one place: InflatingZip reads a zip's entries' stored
// bytes through libzip (raw, still compressed) and inflates them with ISA-L's igzip, about twice
// as fast as zlib, which libarchive inflates with. It serves libarchive::ZipReader (archive.hpp)
// the bytes of plain entries; libarchive still reads the archive's structure, names and headers.
// No other file calls zip_open or isal_inflate. Thread-compatible: one object per thread.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

namespace podplane::libzip {

class InflatingZip {
 public:
  // The zip opened by libzip with its strictest checks (every local header agrees with its
  // central-directory entry, names unique, the directory where the end record says), or
  // nullptr when libzip refuses it or when a name is one that libarchive rewrites ('\', bytes
  // over 0x7f, an Info-ZIP Unicode path field): the caller then reads it the old way alone.
  [[nodiscard]] static std::unique_ptr<InflatingZip> open(const std::filesystem::path& zip);
  ~InflatingZip();
  InflatingZip(const InflatingZip&) = delete;
  InflatingZip& operator=(const InflatingZip&) = delete;

  // The entry named `name` (raw bytes), when it is stored or deflated, not encrypted, and
  // `size` bytes long as the central directory says; nullopt otherwise.
  [[nodiscard]] std::optional<std::uint64_t> plain_entry(std::string_view name, std::uint64_t size) const;
  // Streams entry `index`'s content to `sink` in blocks of at most 256 KiB, never more bytes
  // than its central-directory size: Error "<doing>: <why>" when its data is corrupt or ends
  // early, inflates to another size, or does not match its CRC-32.
  void read(std::uint64_t index, const std::function<void(const void* data, std::size_t size)>& sink,
            std::string_view doing) const;

  struct Impl;

 private:
  explicit InflatingZip(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace podplane::libzip
