#pragma once
// Hex and base64 text of raw bytes. Pure functions; from_hex throws podplane::Error.
#include <optional>
#include <string>
#include <string_view>

namespace podplane {

[[nodiscard]] std::string to_hex(std::string_view raw);    // lower case
[[nodiscard]] std::string from_hex(std::string_view hex);  // either case; Error on odd length or a non-hex digit

[[nodiscard]] bool is_hex(std::string_view text);          // only 0-9, a-f, A-F (true when empty)
[[nodiscard]] bool is_lower_hex(std::string_view text);    // only 0-9, a-f (true when empty)
[[nodiscard]] bool is_sha256_hex(std::string_view text);   // 64 lower-case hex digits: how we write every sha256

[[nodiscard]] std::string base64_encode(std::string_view raw);  // standard alphabet, '=' padding
// Standard alphabet, '=' padding optional; nullopt when `text` is not base64.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace podplane
