#include "base/zip_inflate.hpp"

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <zip.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"

namespace podplane::libzip {
namespace {

// Both buffers stay in L2 beside the SHA-256 that usually consumes the output: 256 KiB was
// the fastest of 64 KiB to 4 MiB on a 86 MiB Go binary (docs/performance.md).
constexpr std::size_t kBufferSize = 256 * 1024;
constexpr std::uint16_t kInfoZipUnicodePath = 0x7075;

struct ZipDiscard {
  void operator()(zip_t* handle) const noexcept { zip_discard(handle); }  // read-only: nothing to write
};
struct ZipFileClose {
  void operator()(zip_file_t* file) const noexcept { zip_fclose(file); }
};

// What the central directory says of one entry.
struct EntryFacts {
  std::uint64_t size = 0;
  std::uint64_t compressed_size = 0;
  std::uint32_t crc = 0;
  bool plain = false;  // stored or deflated, not encrypted, every field known
  bool deflated = false;
};

// True when libarchive hands this name over unchanged: it turns '\' into '/' in zips made on
// MS-DOS, converts names flagged UTF-8 and prefers an Info-ZIP Unicode path field.
bool name_taken_verbatim(zip_t* handle, zip_uint64_t index, std::string_view name) {
  for (unsigned char c : name) {
    if (c == '\\' || c >= 0x80) return false;
  }
  for (zip_flags_t where : {ZIP_FL_CENTRAL, ZIP_FL_LOCAL}) {
    if (zip_file_extra_fields_count_by_id(handle, index, kInfoZipUnicodePath, where) != 0) return false;
  }
  return true;
}

EntryFacts facts_of(const zip_stat_t& stat) {
  EntryFacts facts;
  constexpr zip_uint64_t needed =
      ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC | ZIP_STAT_COMP_METHOD | ZIP_STAT_ENCRYPTION_METHOD;
  if ((stat.valid & needed) != needed || stat.encryption_method != ZIP_EM_NONE) return facts;
  facts.size = stat.size;
  facts.compressed_size = stat.comp_size;
  facts.crc = stat.crc;
  facts.deflated = stat.comp_method == ZIP_CM_DEFLATE;
  facts.plain = facts.deflated || (stat.comp_method == ZIP_CM_STORE && stat.comp_size == stat.size);
  return facts;
}

std::string inflate_error(int status) {
  switch (status) {
    case ISAL_INVALID_BLOCK: return "corrupt deflate data (an invalid block)";
    case ISAL_INVALID_SYMBOL: return "corrupt deflate data (an invalid symbol)";
    case ISAL_INVALID_LOOKBACK: return "corrupt deflate data (a distance before the start)";
    default: return "corrupt deflate data (igzip status " + std::to_string(status) + ")";
  }
}

}  // namespace

struct InflatingZip::Impl {
  std::unique_ptr<zip_t, ZipDiscard> handle;
  std::vector<EntryFacts> entries;
  std::unordered_map<std::string, std::int64_t> index_of_name;  // -1: the name is not unique
  std::unique_ptr<inflate_state> inflater = std::make_unique<inflate_state>();
  std::vector<unsigned char> in = std::vector<unsigned char>(kBufferSize);
  std::vector<unsigned char> out = std::vector<unsigned char>(kBufferSize);

  void read_stored(zip_file_t* file, const EntryFacts& facts, const std::function<void(const void*, std::size_t)>& sink,
                   std::uint64_t& total, std::uint32_t& crc, const std::string& doing);
  void read_deflated(zip_file_t* file, const EntryFacts& facts, const std::function<void(const void*, std::size_t)>& sink,
                     std::uint64_t& total, std::uint32_t& crc, const std::string& doing);
};

InflatingZip::InflatingZip(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InflatingZip::~InflatingZip() = default;

std::unique_ptr<InflatingZip> InflatingZip::open(const std::filesystem::path& zip) {
  int status = 0;
  // ZIP_CHECKCONS also refuses duplicate names: those zips keep libarchive's reading alone, so
  // which duplicate's content counts stays as it was.
  std::unique_ptr<zip_t, ZipDiscard> handle(zip_open(zip.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &status));
  if (handle == nullptr) return nullptr;
  const zip_int64_t count = zip_get_num_entries(handle.get(), 0);
  if (count < 0) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->entries.reserve(static_cast<std::size_t>(count));
  for (zip_uint64_t i = 0; i < static_cast<zip_uint64_t>(count); ++i) {
    const char* raw = zip_get_name(handle.get(), i, ZIP_FL_ENC_RAW);
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (raw == nullptr || zip_stat_index(handle.get(), i, ZIP_FL_ENC_RAW, &stat) != 0) return nullptr;
    if (!name_taken_verbatim(handle.get(), i, raw)) return nullptr;
    auto [at, added] = impl->index_of_name.emplace(raw, static_cast<std::int64_t>(i));
    if (!added) at->second = -1;
    impl->entries.push_back(facts_of(stat));
  }
  impl->handle = std::move(handle);
  return std::unique_ptr<InflatingZip>(new InflatingZip(std::move(impl)));
}

std::optional<std::uint64_t> InflatingZip::plain_entry(std::string_view name, std::uint64_t size) const {
  auto at = impl_->index_of_name.find(std::string(name));
  if (at == impl_->index_of_name.end() || at->second < 0) return std::nullopt;
  const auto index = static_cast<std::uint64_t>(at->second);
  const EntryFacts& facts = impl_->entries[index];
  if (!facts.plain || facts.size != size) return std::nullopt;
  return index;
}

void InflatingZip::Impl::read_stored(zip_file_t* file, const EntryFacts& facts,
                                     const std::function<void(const void*, std::size_t)>& sink, std::uint64_t& total,
                                     std::uint32_t& crc, const std::string& doing) {
  for (;;) {
    const zip_int64_t got = zip_fread(file, in.data(), in.size());
    if (got < 0) throw Error(doing + ": " + zip_file_strerror(file));
    if (got == 0) return;
    total += static_cast<std::uint64_t>(got);
    if (total > facts.size) throw Error(doing + ": holds more bytes than its size in the central directory");
    crc = crc32_gzip_refl(crc, in.data(), static_cast<std::uint64_t>(got));
    sink(in.data(), static_cast<std::size_t>(got));
  }
}

void InflatingZip::Impl::read_deflated(zip_file_t* file, const EntryFacts& facts,
                                       const std::function<void(const void*, std::size_t)>& sink, std::uint64_t& total,
                                       std::uint32_t& crc, const std::string& doing) {
  inflate_state& state = *inflater;
  isal_inflate_init(&state);
  state.crc_flag = ISAL_GZIP_NO_HDR;  // raw deflate; state.crc is the CRC-32 of the output
  bool input_ended = false;
  while (state.block_state != ISAL_BLOCK_FINISH) {
    if (state.avail_in == 0 && !input_ended) {
      const zip_int64_t got = zip_fread(file, in.data(), in.size());
      if (got < 0) throw Error(doing + ": " + zip_file_strerror(file));
      input_ended = got == 0;
      state.next_in = in.data();
      state.avail_in = static_cast<std::uint32_t>(got);
    }
    state.next_out = out.data();
    state.avail_out = static_cast<std::uint32_t>(out.size());
    const int status = isal_inflate(&state);
    if (status < 0) throw Error(doing + ": " + inflate_error(status));
    const std::size_t produced = out.size() - state.avail_out;
    total += produced;
    // A bomb that understates its size is stopped here, one buffer past the size at most.
    if (total > facts.size) throw Error(doing + ": inflates beyond its size in the central directory");
    if (produced > 0) sink(out.data(), produced);
    if (input_ended && state.avail_in == 0 && produced == 0 && state.block_state != ISAL_BLOCK_FINISH) {
      throw Error(doing + ": its deflate data ends early (the zip is truncated or corrupt)");
    }
  }
  crc = state.crc;
}

void InflatingZip::read(std::uint64_t index, const std::function<void(const void* data, std::size_t size)>& sink,
                        std::string_view doing_view) const {
  const std::string doing(doing_view);
  if (index >= impl_->entries.size()) throw Error(doing + ": no entry " + std::to_string(index));
  const EntryFacts& facts = impl_->entries[index];
  std::unique_ptr<zip_file_t, ZipFileClose> file(zip_fopen_index(impl_->handle.get(), index, ZIP_FL_COMPRESSED));
  if (file == nullptr) throw Error(doing + ": " + zip_strerror(impl_->handle.get()));
  std::uint64_t total = 0;
  std::uint32_t crc = 0;
  if (facts.deflated) impl_->read_deflated(file.get(), facts, sink, total, crc, doing);
  else impl_->read_stored(file.get(), facts, sink, total, crc, doing);
  if (total != facts.size) {
    throw Error(doing + ": " + std::to_string(total) + " bytes where the central directory says " +
                std::to_string(facts.size));
  }
  if (crc != facts.crc) throw Error(doing + ": its CRC-32 does not match the central directory's (corrupt data)");
}

}  // namespace podplane::libzip
