#pragma once
// Byte-range requests for `mirror serve` (RFC 9110 §14): which parts of a representation of
// known size a Range header asks for, and the body that answers them, either one slice or an
// exact multipart/byteranges body (§14.6). Pure functions of their arguments; thread-safe.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::mirror {

struct ByteRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive, < the representation's size
  std::uint64_t length() const { return last - first + 1; }
  bool operator==(const ByteRange&) const = default;
};

enum class RangeOutcome {
  whole,          // 200 with everything: no Range, a unit other than bytes, or too many ranges
  partial,        // 206 with `ranges`: one as a plain body, several as multipart/byteranges
  unsatisfiable,  // 416 with "Content-Range: bytes */SIZE": invalid, or nothing inside the size
};

struct RangePlan {
  RangeOutcome outcome = RangeOutcome::whole;
  std::vector<ByteRange> ranges;  // partial only, in the order asked, clamped to the size
};

// More ranges than this in one request are ignored (the whole representation is sent), so a
// request cannot make the server write many small overlapping parts (RFC 9110 §14.2 allows it).
inline constexpr std::size_t kMaxRanges = 16;

// `header` is the Range field value. An empty representation ignores ranges.
[[nodiscard]] RangePlan plan_ranges(std::string_view header, std::uint64_t size);

// "bytes FIRST-LAST/SIZE" and "bytes */SIZE".
[[nodiscard]] std::string content_range(const ByteRange& range, std::uint64_t size);
[[nodiscard]] std::string unsatisfied_range(std::uint64_t size);

// A response body as literal text and slices of the representation, in order.
class BodyLayout {
 public:
  // The whole representation, or one range of it.
  [[nodiscard]] static BodyLayout slice(std::uint64_t offset, std::uint64_t length);
  // multipart/byteranges for `ranges` of a representation of `size` and media type `part_type`;
  // `boundary` must not occur in the representation (a random one: see random_boundary()).
  [[nodiscard]] static BodyLayout multipart(const std::vector<ByteRange>& ranges, std::uint64_t size,
                                            std::string_view part_type, std::string_view boundary);

  std::uint64_t size() const { return size_; }
  // Produces the body bytes [offset, offset + length) in order: text through `text`, slices
  // of the representation through `slice` (offset, length in the representation). Stops and
  // returns false when either returns false.
  bool produce(std::uint64_t offset, std::uint64_t length, const std::function<bool(std::string_view)>& text,
               const std::function<bool(std::uint64_t, std::uint64_t)>& slice) const;

 private:
  struct Piece {
    std::string text;             // literal bytes, or empty for a slice
    std::uint64_t offset = 0;     // slice: where in the representation
    std::uint64_t length = 0;     // bytes this piece adds to the body
  };
  std::vector<Piece> pieces_;
  std::uint64_t size_ = 0;
};

// 32 random hex digits for a multipart boundary.
[[nodiscard]] std::string random_boundary();

}  // namespace podplane::mirror
