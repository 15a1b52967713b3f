#include "generator/hcl_emitter.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"
#include "lockfile/hcl.hpp"

namespace podplane::generator {

// One output line: at `depth`, `lead` then, for a single-line attribute, its `= value` cell,
// which hclwrite aligns with the cells of the adjacent lines that have one.
struct HclLines {
  enum class Type { code, comment, blank };
  struct Line {
    Type type = Type::code;
    int depth = 0;
    std::string lead;
    std::string assign;
  };
  std::vector<Line> lines;

  void push(Type type, int depth, std::string lead, std::string assign = {}) {
    lines.push_back({type, depth, std::move(lead), std::move(assign)});
  }
  bool last_is(Type type) const { return !lines.empty() && lines.back().type == type; }
};

namespace {

using Type = HclLines::Type;

// The columns hclwrite counts for alignment: one per character, not per UTF-8 byte.
std::size_t columns(std::string_view text) {
  std::size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace

HclExpr expr(std::string_view expression) { return HclExpr(std::string(expression)); }
HclExpr str(std::string_view text) { return expr(lockfile::hcl::quote(text)); }
HclExpr str_or_null(std::string_view text) { return text.empty() ? null_value() : str(text); }
HclExpr tmpl(std::string_view code) { return expr("\"" + std::string(code) + "\""); }
HclExpr number(long long value) { return expr(std::to_string(value)); }
HclExpr boolean(bool value) { return expr(value ? "true" : "false"); }
HclExpr null_value() { return expr("null"); }

HclExpr list(const std::vector<HclExpr>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i].text();
  }
  return expr(out + "]");
}

HclExpr str_list(const std::vector<std::string>& strings) {
  std::vector<HclExpr> items;
  for (const auto& s : strings) items.push_back(str(s));
  return list(items);
}

std::string hcl_identifier(std::string_view text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out;
}

std::string hcl_key(std::string_view text) {
  bool identifier = !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_');
  for (char c : text) identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return identifier ? std::string(text) : lockfile::hcl::quote(text);
}

HclBody::HclBody(std::shared_ptr<HclLines> lines, Kind kind, int depth)
    : lines_(std::move(lines)), kind_(kind), depth_(depth), first_line_(lines_->lines.size()) {}

void HclBody::begin_item(Kind item) {
  bool written = lines_->lines.size() > first_line_;
  if (kind_ == Kind::file && written && !heading_) blank();
  if (kind_ == Kind::block && item == Kind::block && written && !lines_->last_is(Type::comment)) blank();
  heading_ = false;
}

std::string HclBody::name_in_body(std::string_view name) const {
  return kind_ == Kind::object ? hcl_key(name) : std::string(name);
}

void HclBody::nested(Kind kind, const Fill& fill, std::string closer) {
  HclBody body(lines_, kind, depth_ + 1);
  fill(body);
  auto& lines = lines_->lines;
  while (lines.size() > body.first_line_ && lines.back().type == Type::blank) lines.pop_back();
  lines_->push(Type::code, depth_, std::move(closer));
}

HclBody& HclBody::attr(std::string_view name, const HclExpr& value) {
  begin_item(Kind::object);
  lines_->push(Type::code, depth_, name_in_body(name), "= " + value.text());
  return *this;
}

HclBody& HclBody::object(std::string_view name, const Fill& fill) {
  begin_item(Kind::object);
  lines_->push(Type::code, depth_, name_in_body(name) + " = {");
  nested(Kind::object, fill, "}");
  return *this;
}

HclBody& HclBody::object_list(std::string_view name, const std::vector<Fill>& fills) {
  begin_item(Kind::object);
  lines_->push(Type::code, depth_, name_in_body(name) + " = [");
  HclBody items(lines_, Kind::object, depth_ + 1);
  for (const auto& fill : fills) {
    lines_->push(Type::code, depth_ + 1, "{");
    items.nested(Kind::object, fill, "},");
  }
  lines_->push(Type::code, depth_, "]");
  return *this;
}

HclBody& HclBody::block(std::string_view type, const std::vector<std::string>& labels, const Fill& fill) {
  std::string header(type);
  for (const auto& label : labels) {
    // Every name terraform reads from a label is an identifier, and `terraform fmt` drops a
    // label holding an escaped "${": so a label is an identifier or an error, never escaped.
    if (hcl_key(label) != label)
      throw Error(mismatch_message("cannot write the label of a " + std::string(type) + " block",
                                   "an identifier (letters, digits, '_' and '-')", lockfile::hcl::quote(label)));
    header += " \"" + label + "\"";
  }
  begin_item(Kind::block);
  lines_->push(Type::code, depth_, header + " {");
  nested(Kind::block, fill, "}");
  return *this;
}

HclBody& HclBody::block(std::string_view type, const Fill& fill) { return block(type, {}, fill); }

void HclBody::comment_lines(std::string_view text) {
  // Any line break in the text starts a new comment line, so the text cannot end the comment.
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find_first_of("\r\n", start);
    std::string_view piece = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    lines_->push(Type::comment, depth_, piece.empty() ? "#" : "# " + std::string(piece));
    if (end == std::string_view::npos) break;
    start = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
  }
}

HclBody& HclBody::comment(std::string_view text) {
  begin_item(Kind::object);
  comment_lines(text);
  return *this;
}

HclBody& HclBody::blank() {
  if (lines_->lines.size() > first_line_ && !lines_->last_is(Type::blank)) lines_->push(Type::blank, 0, "");
  return *this;
}

HclFile::HclFile() : HclBody(std::make_shared<HclLines>(), Kind::file, 0) {}

HclFile& HclFile::heading(std::string_view text) {
  begin_item(Kind::object);
  comment_lines(text);
  heading_ = true;
  return *this;
}

std::string HclFile::text() const {
  const auto& lines = lines_->lines;
  std::size_t count = lines.size();
  while (count > 0 && lines[count - 1].type == Type::blank) --count;
  // hclwrite's formatCells: each run of adjacent lines with an `=` cell aligns its `=` one
  // column past the widest lead of the run.
  std::vector<std::size_t> pad(count, 1);
  for (std::size_t i = 0; i < count;) {
    if (lines[i].assign.empty()) {
      ++i;
      continue;
    }
    std::size_t end = i, widest = 0;
    for (; end < count && !lines[end].assign.empty(); ++end)
      widest = std::max(widest, 2 * static_cast<std::size_t>(lines[end].depth) + columns(lines[end].lead));
    for (std::size_t j = i; j < end; ++j) pad[j] = widest - (2 * lines[j].depth + columns(lines[j].lead)) + 1;
    i = end;
  }
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& line = lines[i];
    if (line.type != Type::blank) {
      out.append(2 * static_cast<std::size_t>(line.depth), ' ');
      out += line.lead;
      if (!line.assign.empty()) out.append(pad[i], ' ').append(line.assign);
    }
    out += '\n';
  }
  return out;
}

}  // namespace podplane::generator
