#pragma once
// Writing .tf files by their structure, formatted as `terraform fmt` (hclwrite.Format) leaves
// them: 2-space indentation by depth, and `=` aligned across each run of adjacent single-line
// attributes. A renderer nests blocks and objects the way the file nests them:
//
//   HclFile file;
//   file.block("output", {"cluster_id"}, [&](HclBody& b) { b.attr("value", expr("local.cluster_id")); });
//   std::string text = file.text();
//
// Values from outside the code (config, store) go in only through str(), str_list() and object
// keys, which quote and escape them, so no value can end a string, open a template or start a
// new line of HCL; block labels must be identifiers (else Error). expr() and tmpl() take code
// written in the renderer.
// Pure text, no I/O; not thread-safe (one file per thread).
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::generator {

// An expression as written right of `=`, made only by the functions below.
class HclExpr {
 public:
  const std::string& text() const { return text_; }

 private:
  explicit HclExpr(std::string text) : text_(std::move(text)) {}
  friend HclExpr expr(std::string_view expression);
  std::string text_;
};

HclExpr expr(std::string_view expression);        // code as written: local.id, var.x >= 8, file("…"), list(string)
HclExpr str(std::string_view text);               // a quoted string: quotes, backslashes, control characters,
                                                  // "${" and "%{" escaped as hclwrite escapes them
HclExpr str_or_null(std::string_view text);       // null when empty
HclExpr tmpl(std::string_view code);              // a quoted template written as is ("${local.x}-y"): code only
HclExpr number(long long value);
HclExpr boolean(bool value);
HclExpr null_value();
HclExpr list(const std::vector<HclExpr>& items);  // [a, b] on one line
HclExpr str_list(const std::vector<std::string>& strings);

// A name usable in HCL identifiers: every character other than [A-Za-z0-9_] becomes '_'.
std::string hcl_identifier(std::string_view text);
// An object key: bare when it is a valid identifier, quoted otherwise.
std::string hcl_key(std::string_view text);

struct HclLines;

// The body of a file, a block or an object. In a block, a nested block is set off from what
// precedes it by a blank line (unless a comment stands right above it); every other blank line
// is asked for with blank(), and a blank line never opens or closes a body nor doubles.
// Keys of an object are quoted where they are not identifiers (hcl_key); attribute names and
// block types in a block are code, written as given; block labels are identifiers (hcl_key
// leaves them bare), written quoted, and anything else throws Error: terraform reads no other
// label, and `terraform fmt` drops one that holds an escaped "${".
class HclBody {
 public:
  using Fill = std::function<void(HclBody&)>;

  HclBody& attr(std::string_view name, const HclExpr& value);  // name = value
  HclBody& object(std::string_view name, const Fill& fill);    // name = { … }
  // name = [ { … }, … ]: one object per item, filled by fill_item(body, item).
  // Empty, an object or a list still opens and closes on lines of its own ("= {" then "}").
  template <class Items, class FillItem>
  HclBody& objects(std::string_view name, const Items& items, FillItem fill_item) {
    std::vector<Fill> fills;
    for (const auto& item : items) fills.push_back([&fill_item, &item](HclBody& body) { fill_item(body, item); });
    return object_list(name, fills);
  }
  HclBody& block(std::string_view type, const std::vector<std::string>& labels, const Fill& fill);  // type "l1" "l2" { … }
  HclBody& block(std::string_view type, const Fill& fill);
  HclBody& comment(std::string_view text);  // "# text", one line per '\n'
  HclBody& blank();

 protected:
  enum class Kind { file, block, object };
  HclBody(std::shared_ptr<HclLines> lines, Kind kind, int depth);

  void begin_item(Kind item);
  void comment_lines(std::string_view text);
  void nested(Kind kind, const Fill& fill, std::string closer);
  std::string name_in_body(std::string_view name) const;
  HclBody& object_list(std::string_view name, const std::vector<Fill>& fills);

  std::shared_ptr<HclLines> lines_;
  Kind kind_;
  int depth_;
  std::size_t first_line_;  // where this body's lines begin
  bool heading_ = false;    // a file heading waits for its item
};

// A whole .tf file: its top-level items are set off from each other by a blank line.
class HclFile : public HclBody {
 public:
  HclFile();
  // A comment right above the next item (a comment() stands as a paragraph of its own).
  HclFile& heading(std::string_view text);
  // The formatted file, ending in one newline.
  [[nodiscard]] std::string text() const;
};

}  // namespace podplane::generator
