#include "lockfile/hcl.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "base/error.hpp"

namespace podplane::lockfile::hcl {
namespace {

bool is_identifier_start(unsigned char c) {
  // Non-ASCII bytes are let through: HCL identifiers may be Unicode letters.
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

bool is_identifier_char(unsigned char c) { return is_identifier_start(c) || (c >= '0' && c <= '9') || c == '-'; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// A quoted string read in literal mode: its decoded value, or that it is a template.
struct QuotedString {
  std::string value;
  bool is_template = false;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view source_name, const InputLimits& limits)
      : text_(text), name_(source_name), limits_(limits) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Body parse_file() {
    Body body = parse_body(std::nullopt);
    return body;
  }

 private:
  std::string_view text_;
  std::string_view name_;
  std::vector<std::size_t> line_starts_;
  std::size_t at_ = 0;
  InputLimits limits_;
  int depth_ = 0;  // blocks, tuples, objects and template sequences open around at_

  // One more level of nesting for as long as it lives; past the limit, an error at `offset`.
  // Every recursion of the reader goes through one, so hostile nesting cannot exhaust the stack.
  class Nested {
   public:
    Nested(Parser& parser, std::size_t offset) : parser_(parser) {
      if (++parser_.depth_ > parser_.limits_.max_depth) parser_.fail_too_deep(offset);
    }
    ~Nested() { --parser_.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& parser_;
  };

  [[noreturn]] void fail_too_deep(std::size_t offset) const {
    fail(offset, "nested deeper than " + std::to_string(limits_.max_depth) +
                     " levels (blocks, brackets and template sequences count)");
  }

  // ---- positions and errors ----

  SourcePos pos_of(std::size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    std::size_t line_index = static_cast<std::size_t>(it - line_starts_.begin()) - 1;
    return SourcePos{static_cast<int>(line_index + 1), static_cast<int>(offset - line_starts_[line_index] + 1)};
  }

  [[noreturn]] void fail(std::size_t offset, const std::string& message) const {
    SourcePos pos = pos_of(offset);
    throw Error(std::string(name_) + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": " +
                message);
  }

  bool eof() const { return at_ >= text_.size(); }
  char cur() const { return eof() ? '\0' : text_[at_]; }
  char peek(std::size_t ahead) const { return at_ + ahead < text_.size() ? text_[at_ + ahead] : '\0'; }
  bool looking_at(std::string_view s) const { return text_.substr(at_, s.size()) == s; }

  // Errors quote no bytes of the file beyond one punctuation character: a file read as HCL may
  // be a secret linked in by a hostile root, and its error may land in a CI comment. File, line
  // and column say where.
  std::string describe_here() const {
    if (eof()) return "end of file";
    char c = cur();
    if (c == '\n') return "newline";
    if (std::ispunct(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
    return "a character that cannot go there";
  }

  // ---- whitespace and comments ----

  // Skips spaces, tabs, carriage returns and comments, but not newlines (they end attributes).
  // A "#" or "//" comment stops before its newline; a "/* */" comment may span lines.
  void skip_inline() {
    while (!eof()) {
      char c = cur();
      if (c == ' ' || c == '\t' || (c == '\r' && peek(1) == '\n')) {
        ++at_;
      } else if (c == '#' || (c == '/' && peek(1) == '/')) {
        while (!eof() && cur() != '\n') ++at_;
      } else if (c == '/' && peek(1) == '*') {
        std::size_t start = at_;
        auto end = text_.find("*/", at_ + 2);
        if (end == std::string_view::npos) fail(start, "unterminated comment: \"/*\" has no closing \"*/\"");
        at_ = end + 2;
      } else {
        break;
      }
    }
  }

  void skip_all_space() {
    while (true) {
      skip_inline();
      if (cur() == '\n') {
        ++at_;
        continue;
      }
      break;
    }
  }

  std::string read_identifier() {
    std::size_t start = at_;
    while (!eof() && is_identifier_char(static_cast<unsigned char>(cur()))) ++at_;
    return std::string(text_.substr(start, at_ - start));
  }

  // ---- bodies ----

  // Reads items until EOF (top level) or the '}' closing the block opened at `open`.
  Body parse_body(std::optional<std::size_t> open) {
    Body body;
    while (true) {
      skip_all_space();
      if (eof()) {
        if (open) fail(*open, "unclosed block: this \"{\" has no matching \"}\"");
        return body;
      }
      if (cur() == '}') {
        if (!open) fail(at_, "unexpected \"}\" outside of any block");
        ++at_;
        return body;
      }
      std::size_t item_start = at_;
      if (!is_identifier_start(static_cast<unsigned char>(cur()))) {
        fail(at_, "expected an attribute or block name, found " + describe_here());
      }
      std::string name = read_identifier();
      skip_inline();
      if (cur() == '=' && peek(1) != '=') {
        ++at_;
        skip_inline();
        if (eof() || cur() == '\n') fail(at_, "expected a value for this attribute");
        if (const Attribute* previous = body.attribute(name)) {
          fail(item_start, "attribute redefined (first defined at line " + std::to_string(previous->pos.line) + ")");
        }
        Value value = parse_expression();
        body.attributes.push_back(Attribute{name, std::move(value), pos_of(item_start)});
        expect_item_end(open.has_value());
        continue;
      }
      Block block;
      block.type = name;
      block.pos = pos_of(item_start);
      while (true) {
        if (cur() == '"') {
          std::size_t label_start = at_;
          QuotedString label = read_quoted_string();
          if (label.is_template) fail(label_start, "a block label cannot contain template sequences");
          block.labels.push_back(std::move(label.value));
        } else if (is_identifier_start(static_cast<unsigned char>(cur()))) {
          block.labels.push_back(read_identifier());
        } else {
          break;
        }
        skip_inline();
      }
      if (cur() != '{') {
        fail(at_, "expected \"=\" or \"{\" after this name, found " + describe_here());
      }
      std::size_t brace = at_;
      ++at_;
      {
        Nested nested(*this, item_start);
        block.body = parse_body(brace);
      }
      body.blocks.push_back(std::move(block));
      expect_item_end(open.has_value());
    }
  }

  // After an attribute or a block: a newline, end of file, or the "}" of a one-line block.
  void expect_item_end(bool nested) {
    skip_inline();
    if (eof() || cur() == '\n') return;
    if (cur() == '}' && nested) return;
    fail(at_, "expected a newline after this item, found " + describe_here());
  }

  // ---- expressions ----

  bool at_expression_end() const {
    if (eof()) return true;
    char c = cur();
    return c == '\n' || c == ',' || c == '}' || c == ']' || c == ')';
  }

  Value parse_expression() {
    std::size_t start = at_;
    SourcePos pos = pos_of(start);
    if (std::optional<Value> literal = try_literal()) {
      std::size_t after = at_;
      skip_inline();
      if (at_expression_end()) {
        at_ = after;
        literal->pos = pos;
        return std::move(*literal);
      }
    }
    at_ = start;
    skip_raw_expression();
    std::size_t end = at_;
    while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\t' || text_[end - 1] == '\r')) --end;
    Value value;
    value.data = Expression{std::string(text_.substr(start, end - start))};
    value.pos = pos;
    return value;
  }

  // A literal value starting here, or nullopt (position then unspecified) if this is not one.
  std::optional<Value> try_literal() {
    char c = cur();
    Value value;
    if (c == '"') {
      QuotedString s = read_quoted_string();
      if (s.is_template) return std::nullopt;
      value.data = std::move(s.value);
      return value;
    }
    if (is_digit(c) || (c == '-' && is_digit(peek(1)))) {
      std::size_t start = at_;
      if (c == '-') ++at_;
      while (is_digit(cur())) ++at_;
      if (cur() == '.' && is_digit(peek(1))) {
        ++at_;
        while (is_digit(cur())) ++at_;
      }
      if ((cur() == 'e' || cur() == 'E') &&
          (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
        at_ += 2;
        while (is_digit(cur())) ++at_;
      }
      value.data = std::strtod(std::string(text_.substr(start, at_ - start)).c_str(), nullptr);
      return value;
    }
    if (is_identifier_start(static_cast<unsigned char>(c))) {
      std::string word = read_identifier();
      if (word == "true" || word == "false") {
        value.data = (word == "true");
        return value;
      }
      if (word == "null") {
        value.data = nullptr;
        return value;
      }
      return std::nullopt;
    }
    if (c == '[') return try_tuple();
    if (c == '{') return try_object();
    return std::nullopt;
  }

  bool next_word_is_for() {
    std::size_t saved = at_;
    skip_all_space();
    bool is_for = looking_at("for") && !is_identifier_char(static_cast<unsigned char>(peek(3)));
    at_ = saved;
    return is_for;
  }

  std::optional<Value> try_tuple() {
    Nested nested(*this, at_);
    ++at_;  // '['
    if (next_word_is_for()) return std::nullopt;
    Tuple items;
    while (true) {
      skip_all_space();
      if (cur() == ']') {
        ++at_;
        break;
      }
      if (eof() || cur() == ',' || cur() == '}' || cur() == ')') return std::nullopt;
      items.push_back(parse_expression());
      skip_all_space();
      if (cur() == ',') {
        ++at_;
      } else if (cur() != ']') {
        return std::nullopt;
      }
    }
    Value value;
    value.data = std::move(items);
    return value;
  }

  std::optional<Value> try_object() {
    Nested nested(*this, at_);
    ++at_;  // '{'
    if (next_word_is_for()) return std::nullopt;
    Object members;
    while (true) {
      skip_all_space();
      if (cur() == '}') {
        ++at_;
        break;
      }
      std::string key;
      if (cur() == '"') {
        QuotedString quoted = read_quoted_string();
        if (quoted.is_template) return std::nullopt;
        key = std::move(quoted.value);
      } else if (is_identifier_start(static_cast<unsigned char>(cur()))) {
        key = read_identifier();
      } else {
        return std::nullopt;  // a computed key: keep the whole object as an expression
      }
      skip_inline();
      if (cur() != '=' && cur() != ':') return std::nullopt;
      if (cur() == '=' && peek(1) == '=') return std::nullopt;
      ++at_;
      skip_inline();
      if (eof() || cur() == '\n') return std::nullopt;
      Value member = parse_expression();
      members.push_back(Member{std::move(key), std::move(member)});
      skip_inline();
      if (cur() == ',') {
        ++at_;
      } else if (cur() != '\n' && cur() != '}') {
        return std::nullopt;
      }
    }
    Value value;
    value.data = std::move(members);
    return value;
  }

  // Reads "..." starting at the quote; decodes escapes; notes template sequences.
  QuotedString read_quoted_string() {
    std::size_t open = at_;
    ++at_;
    QuotedString out;
    while (true) {
      if (eof() || cur() == '\n') fail(open, "unterminated string: this quote has no closing quote on its line");
      char c = cur();
      if (c == '"') {
        ++at_;
        return out;
      }
      if (c == '\\') {
        std::size_t escape = at_;
        char e = peek(1);
        at_ += 2;
        switch (e) {
          case 'n': out.value.push_back('\n'); break;
          case 'r': out.value.push_back('\r'); break;
          case 't': out.value.push_back('\t'); break;
          case '"': out.value.push_back('"'); break;
          case '\\': out.value.push_back('\\'); break;
          case 'u':
          case 'U': {
            std::size_t digits = e == 'u' ? 4 : 8;
            std::string hex(text_.substr(at_, digits));
            if (hex.size() != digits || !std::all_of(hex.begin(), hex.end(), [](unsigned char h) { return std::isxdigit(h); })) {
              fail(escape, std::string("invalid \\") + e + " escape: expected " + std::to_string(digits) + " hex digits");
            }
            at_ += digits;
            append_utf8(out.value, static_cast<std::uint32_t>(std::strtoul(hex.c_str(), nullptr, 16)));
            break;
          }
          default:
            fail(escape, "invalid escape sequence");
        }
        continue;
      }
      if ((c == '$' || c == '%') && peek(1) == c && peek(2) == '{') {
        // "$${" and "%%{" are literal "${" and "%{".
        out.value.push_back(c);
        out.value.push_back('{');
        at_ += 3;
        continue;
      }
      if ((c == '$' || c == '%') && peek(1) == '{') {
        out.is_template = true;
        at_ += 2;
        skip_template_sequence(at_ - 2);
        continue;
      }
      out.value.push_back(c);
      ++at_;
    }
  }

  // Inside "${ … }" or "%{ … }": up to the matching "}", through nested strings and braces.
  void skip_template_sequence(std::size_t open) {
    Nested nested(*this, open);
    int depth = 1;
    while (true) {
      if (eof()) fail(open, "unterminated template sequence: no closing \"}\"");
      char c = cur();
      if (c == '"') {
        (void)read_quoted_string();
        continue;
      }
      if (c == '{' && depth_ + depth++ > limits_.max_depth) fail_too_deep(at_);
      if (c == '}' && --depth == 0) {
        ++at_;
        return;
      }
      ++at_;
    }
  }

  // "<<ID" or "<<-ID" directly followed by a newline.
  std::optional<std::string> heredoc_marker() const {
    if (!looking_at("<<")) return std::nullopt;
    std::size_t i = at_ + 2;
    if (i < text_.size() && text_[i] == '-') ++i;
    std::size_t id_start = i;
    while (i < text_.size() && is_identifier_char(static_cast<unsigned char>(text_[i]))) ++i;
    if (i == id_start) return std::nullopt;
    std::size_t id_end = i;
    if (i < text_.size() && text_[i] == '\r') ++i;
    if (i >= text_.size() || text_[i] != '\n') return std::nullopt;
    return std::string(text_.substr(id_start, id_end - id_start));
  }

  void skip_heredoc(const std::string& id) {
    std::size_t open = at_;
    std::size_t line = text_.find('\n', at_);
    while (true) {
      if (line == std::string_view::npos) fail(open, "unterminated heredoc: no closing \"" + id + "\" line");
      std::size_t start = line + 1;
      std::size_t end = text_.find('\n', start);
      std::string_view content = text_.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      if (!content.empty() && content.back() == '\r') content.remove_suffix(1);
      auto first = content.find_first_not_of(" \t");
      if (first != std::string_view::npos && content.substr(first) == id) {
        at_ = end == std::string_view::npos ? text_.size() : end;
        return;
      }
      line = end;
    }
  }

  // Skips any expression: up to a newline, ',' or closing bracket at depth zero.
  void skip_raw_expression() {
    std::vector<std::pair<char, std::size_t>> open;  // expected closer and where it opened
    while (true) {
      skip_inline();
      if (eof()) {
        if (!open.empty()) fail(open.back().second, "unclosed bracket in expression");
        return;
      }
      char c = cur();
      if (open.empty() && (c == '\n' || c == ',' || c == '}' || c == ']' || c == ')')) return;
      if (c == '(' || c == '[' || c == '{') {
        if (depth_ + static_cast<int>(open.size()) >= limits_.max_depth) fail_too_deep(at_);
        open.emplace_back(c == '(' ? ')' : c == '[' ? ']' : '}', at_);
        ++at_;
      } else if (c == ')' || c == ']' || c == '}') {
        if (c != open.back().first) {
          fail(at_, std::string("mismatched \"") + c + "\": expected \"" + open.back().first + "\"");
        }
        open.pop_back();
        ++at_;
      } else if (c == '"') {
        (void)read_quoted_string();
      } else if (auto id = heredoc_marker()) {
        skip_heredoc(*id);
      } else {
        ++at_;
      }
    }
  }
};

}  // namespace

const Attribute* Body::attribute(std::string_view name) const {
  for (const auto& attribute : attributes) {
    if (attribute.name == name) return &attribute;
  }
  return nullptr;
}

std::vector<const Block*> Body::blocks_of_type(std::string_view type) const {
  std::vector<const Block*> found;
  for (const auto& block : blocks) {
    if (block.type == type) found.push_back(&block);
  }
  return found;
}

Body parse(std::string_view text, std::string_view source_name, const InputLimits& limits) {
  check_input_size(text.size(), source_name, limits);
  // A UTF-8 byte-order mark is not part of the syntax.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return Parser(text, source_name, limits).parse_file();
}

std::string quote(std::string_view text) {
  // hclwrite's escaping: the five short escapes, doubled template introducers, and \u for
  // other control characters. Everything else (UTF-8 included) is written as is.
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '$':
      case '%':
        out.push_back(static_cast<char>(c));
        if (i + 1 < text.size() && text[i + 1] == '{') out.push_back(static_cast<char>(c));
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 0xf]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"";
  return out;
}

}  // namespace podplane::lockfile::hcl
