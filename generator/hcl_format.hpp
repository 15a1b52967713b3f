#pragma once
// Writing .tf files as `tofu fmt` (hclwrite.Format) would leave them: 2-space indentation by
// bracket depth and `=` aligned across each run of adjacent single-line attributes. The
// generator writes HCL text line by line through HclText and formats it once at the end.
#include <string>
#include <string_view>
#include <vector>

namespace podplane::generator {

// Re-indents and aligns text in the subset of HCL the generator emits (no heredocs, no
// trailing comments). Idempotent: formatting formatted text returns it unchanged.
[[nodiscard]] std::string format_hcl(std::string_view text);

// Line-oriented builder; indentation and alignment come from format_hcl().
class HclText {
 public:
  HclText& line(std::string_view text);
  HclText& blank();
  HclText& comment(std::string_view text);           // "# text" (one line per '\n')
  HclText& open(std::string_view header);             // "header {"
  HclText& close(std::string_view closer = "}");
  HclText& attr(std::string_view name, std::string_view expression);
  [[nodiscard]] std::string formatted() const;

 private:
  std::vector<std::string> lines_;
};

// Expressions.
std::string hcl_string(std::string_view text);                    // Go-quoted literal
std::string hcl_string_or_null(std::string_view text);            // null when empty
std::string hcl_list(const std::vector<std::string>& expressions);  // ["a", "b"]
std::string hcl_string_list(const std::vector<std::string>& strings);
std::string hcl_bool(bool value);

// A name usable in HCL identifiers: every character other than [A-Za-z0-9_] becomes '_'.
std::string hcl_identifier(std::string_view text);
// An object key: bare when it is a valid identifier, quoted otherwise.
std::string hcl_key(std::string_view text);

}  // namespace podplane::generator
