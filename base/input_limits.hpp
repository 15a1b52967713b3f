#pragma once
// Limits on text from outside (files a user or a stack supplies, upstream answers, bundle
// entries) before any reader builds a tree from it: a size cap, so a huge file fails before
// it is read, and a nesting cap, so a hostile document cannot exhaust the stack of a
// recursive reader (or of nlohmann_json, whose copy, compare and dump recurse). Every parser
// of ours checks both; errors are podplane::Error with "source:line:column: …". Archives from
// outside are capped too (ArchiveLimits), on what they expand to.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace podplane {

struct InputLimits {
  std::size_t max_bytes = std::size_t{16} << 20;
  // Brackets, braces, blocks and template sequences open at once. Real lock files, .tf files,
  // CLI configs, cluster configs and registry answers stay below 20.
  int max_depth = 128;
};

inline constexpr InputLimits kDefaultInputLimits{};

// How far an archive from outside (a module package) may expand (docs/download.md "Module
// archives"): far above any real module package, far below a zip bomb's output. A bundle's
// entries are bounded by its signed manifest instead.
struct ArchiveLimits {
  std::uint64_t max_bytes = std::uint64_t{1} << 30;  // 1 GiB of file content, holes included
  std::uint64_t max_entries = 100000;               // files, directories and links
};

inline constexpr ArchiveLimits kDefaultArchiveLimits{};

// "1 GiB", "16 MiB", "512 KiB", "100 bytes": how the limits read in messages.
std::string describe_size_limit(std::size_t bytes);

// "<source>:1:1: <what> is N bytes, larger than the limit of 16 MiB" unless within limits.
void check_input_size(std::size_t size, std::string_view source_name, const InputLimits& limits = kDefaultInputLimits);

// The whole file, refused with an Error (before reading) when it is larger than the limit.
// `what` names the file in messages ("lock file", "cluster config").
[[nodiscard]] std::string read_file_within_limits(const std::filesystem::path& file, std::string_view what,
                                                  const InputLimits& limits = kDefaultInputLimits);
// The same for a file that may be absent: nullopt when it cannot be opened at all (missing,
// not readable); an Error when it opens but is too large or fails to read.
[[nodiscard]] std::optional<std::string> read_file_if_present_within_limits(const std::filesystem::path& file,
                                                                            std::string_view what,
                                                                            const InputLimits& limits = kDefaultInputLimits);

// The rest of a stream (standard input given as "-"), refused with an Error once it passes the
// limit. `source_name` names it in messages.
[[nodiscard]] std::string read_stream_within_limits(std::istream& in, std::string_view source_name,
                                                    const InputLimits& limits = kDefaultInputLimits);

enum class JsonComments { reject, allow };

// Checks what nlohmann_json does not: size, nesting depth and numbers out of the range of a
// double, each with line and column. Strings and (when allowed) comments are skipped.
void check_json_shape(std::string_view text, std::string_view source_name, JsonComments comments,
                      const InputLimits& limits = kDefaultInputLimits);

// check_json_shape, then nlohmann_json's parse; a syntax error also becomes
// "<source>:line:column: invalid JSON: …", quoting none of the document's bytes. For every
// JSON document from outside.
[[nodiscard]] nlohmann::json parse_json_within_limits(std::string_view text, std::string_view source_name,
                                                      JsonComments comments = JsonComments::reject,
                                                      const InputLimits& limits = kDefaultInputLimits);

}  // namespace podplane
