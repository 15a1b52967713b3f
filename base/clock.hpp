#pragma once
// Wall-clock times as podplane writes them: RFC 3339 UTC to the second for every time in the
// index, manifests, the audit log and the access log, and a compact form for file names. One
// owner, so every stored time parses with parse_utc_timestamp.
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace podplane {

// "2026-12-03T14:07:01Z".
[[nodiscard]] std::string utc_timestamp(std::time_t when);
// utc_timestamp() of now.
[[nodiscard]] std::string utc_timestamp_now();
// "20261203T140701Z": sorts as time does and needs no quoting in a file name.
[[nodiscard]] std::string utc_file_stamp(std::time_t when);
// The time of a "YYYY-MM-DDTHH:MM:SSZ" text (exactly that shape); std::nullopt otherwise.
[[nodiscard]] std::optional<std::time_t> parse_utc_timestamp(std::string_view text);

}  // namespace podplane
