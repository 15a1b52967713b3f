#include "mirror/serve_ranges.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <random>

#include "base/ascii.hpp"

namespace podplane::mirror {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Decimal digits only; a value beyond 64 bits saturates (it lies past any size anyway).
std::optional<std::uint64_t> parse_digits(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      value = std::numeric_limits<std::uint64_t>::max();
    } else {
      value = value * 10 + digit;
    }
  }
  return value;
}

}  // namespace

RangePlan plan_ranges(std::string_view header, std::uint64_t size) {
  RangePlan whole;
  RangePlan unsatisfiable{RangeOutcome::unsatisfiable, {}};
  header = trim(header);
  auto equals = header.find('=');
  // A unit we do not know must be ignored (RFC 9110 §14.2); an empty representation has no ranges.
  if (!ascii_iequals(trim(header.substr(0, equals)), "bytes") || size == 0) return whole;
  if (equals == std::string_view::npos) return unsatisfiable;  // "bytes" alone: invalid

  RangePlan plan{RangeOutcome::partial, {}};
  std::size_t members = 0;
  std::string_view set = header.substr(equals + 1);
  while (true) {
    auto comma = set.find(',');
    std::string_view member = trim(set.substr(0, comma));
    if (!member.empty()) {  // the list syntax allows empty elements
      ++members;
      auto dash = member.find('-');
      if (dash == std::string_view::npos) return unsatisfiable;
      auto first_text = member.substr(0, dash), last_text = member.substr(dash + 1);
      if (first_text.empty()) {  // suffix: the last N bytes
        auto suffix = parse_digits(last_text);
        if (!suffix) return unsatisfiable;
        if (*suffix > 0) plan.ranges.push_back({size - std::min(*suffix, size), size - 1});
      } else {
        auto first = parse_digits(first_text);
        std::optional<std::uint64_t> last;
        if (!last_text.empty()) last = parse_digits(last_text);
        if (!first || (!last_text.empty() && !last) || (last && *last < *first)) return unsatisfiable;
        if (*first < size) plan.ranges.push_back({*first, std::min(last.value_or(size - 1), size - 1)});
      }
    }
    if (comma == std::string_view::npos) break;
    set.remove_prefix(comma + 1);
  }
  if (members == 0) return unsatisfiable;
  if (members > kMaxRanges) return whole;
  if (plan.ranges.empty()) return unsatisfiable;
  return plan;
}

std::string content_range(const ByteRange& range, std::uint64_t size) {
  return "bytes " + std::to_string(range.first) + "-" + std::to_string(range.last) + "/" + std::to_string(size);
}

std::string unsatisfied_range(std::uint64_t size) { return "bytes */" + std::to_string(size); }

BodyLayout BodyLayout::slice(std::uint64_t offset, std::uint64_t length) {
  BodyLayout layout;
  if (length > 0) layout.pieces_.push_back({"", offset, length});
  layout.size_ = length;
  return layout;
}

BodyLayout BodyLayout::multipart(const std::vector<ByteRange>& ranges, std::uint64_t size, std::string_view part_type,
                                 std::string_view boundary) {
  // RFC 9110 §14.6 with RFC 2046 §5.1.1 framing: each part opens with "--boundary", its
  // headers and an empty line; the CRLF before the next delimiter belongs to the delimiter.
  BodyLayout layout;
  auto text = [&layout](std::string bytes) {
    layout.size_ += bytes.size();
    layout.pieces_.push_back({std::move(bytes), 0, 0});
  };
  std::string delimiter = "--" + std::string(boundary);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    text((i == 0 ? "" : "\r\n") + delimiter + "\r\nContent-Type: " + std::string(part_type) +
         "\r\nContent-Range: " + content_range(ranges[i], size) + "\r\n\r\n");
    layout.pieces_.push_back({"", ranges[i].first, ranges[i].length()});
    layout.size_ += ranges[i].length();
  }
  text("\r\n" + delimiter + "--\r\n");
  return layout;
}

bool BodyLayout::produce(std::uint64_t offset, std::uint64_t length, const std::function<bool(std::string_view)>& text,
                         const std::function<bool(std::uint64_t, std::uint64_t)>& slice) const {
  std::uint64_t start = 0;  // body offset of the current piece
  for (const auto& piece : pieces_) {
    std::uint64_t piece_length = piece.text.empty() ? piece.length : piece.text.size();
    std::uint64_t end = start + piece_length;
    if (length == 0) break;
    if (offset < end) {
      std::uint64_t skip = offset - start;
      std::uint64_t take = std::min(piece_length - skip, length);
      bool ok = piece.text.empty() ? slice(piece.offset + skip, take)
                                   : text(std::string_view(piece.text).substr(static_cast<std::size_t>(skip),
                                                                              static_cast<std::size_t>(take)));
      if (!ok) return false;
      offset += take;
      length -= take;
    }
    start = end;
  }
  return true;
}

std::string random_boundary() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string boundary;
  for (int i = 0; i < 32; ++i) boundary += hex[generator() & 0xf];
  return boundary;
}

}  // namespace podplane::mirror
