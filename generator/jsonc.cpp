#include "generator/jsonc.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"
#include "base/input_limits.hpp"

namespace podplane::generator {

namespace {

// Walks the text once, tracking which JSON Pointer each value sits at. It trusts nlohmann to
// have rejected malformed input already, so it only has to be right on well-formed JSONC.
class LineScanner {
 public:
  LineScanner(std::string_view text, std::map<std::string, int>& lines) : text_(text), lines_(lines) {}

  void scan() {
    skip_space();
    value("");
  }

 private:
  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        // As nlohmann reads it: a line comment ends at LF, CR or NUL.
        while (pos_ < text_.size() && text_[pos_] != '\n' && text_[pos_] != '\r' && text_[pos_] != '\0') ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
        pos_ += 2;
        while (pos_ + 1 < text_.size() && !(text_[pos_] == '*' && text_[pos_ + 1] == '/')) {
          if (text_[pos_] == '\n') ++line_;
          ++pos_;
        }
        pos_ += 2;
      } else {
        return;
      }
    }
  }

  // A string token, decoded as nlohmann decodes it, so that keys with escapes map to the
  // same JSON Pointer as the parsed value's keys.
  std::string string() {
    std::size_t start = pos_;
    bool escaped = false;
    ++pos_;  // opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        escaped = true;
        ++pos_;
      }
      ++pos_;
    }
    ++pos_;
    std::string_view token = text_.substr(start, std::min(pos_, text_.size()) - start);
    if (!escaped) return std::string(token.substr(1, token.size() >= 2 ? token.size() - 2 : 0));
    auto decoded = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
    return decoded.is_string() ? decoded.get<std::string>() : std::string(token);
  }

  void value(const std::string& pointer) {
    skip_space();
    if (pos_ >= text_.size()) return;
    lines_[pointer] = line_;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      for (;;) {
        skip_space();
        if (pos_ >= text_.size()) return;
        if (text_[pos_] == '}') { ++pos_; return; }
        if (text_[pos_] == ',') { ++pos_; continue; }
        int key_line = line_;
        std::string key = string();
        skip_space();
        ++pos_;  // ':'
        std::string child = pointer + "/" + json_pointer_token(key);
        value(child);
        // A value on the line after its key still belongs to the key's line for messages.
        lines_[child] = key_line;
      }
    } else if (c == '[') {
      ++pos_;
      std::size_t index = 0;
      for (;;) {
        skip_space();
        if (pos_ >= text_.size()) return;
        if (text_[pos_] == ']') { ++pos_; return; }
        if (text_[pos_] == ',') { ++pos_; continue; }
        value(pointer + "/" + std::to_string(index++));
      }
    } else if (c == '"') {
      string();
    } else {
      std::size_t start = pos_;
      while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != ',' &&
             text_[pos_] != '}' && text_[pos_] != ']' && text_[pos_] != '/')
        ++pos_;
      // Always move on: should this scanner and nlohmann ever read a byte differently, a stray
      // '}' or '/' here must not make the caller's loop spin (found by the jsonc fuzz target).
      if (pos_ == start) ++pos_;
    }
  }

  std::string_view text_;
  std::map<std::string, int>& lines_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

int JsoncDocument::line_of(const std::string& pointer) const {
  std::string current = pointer;
  for (;;) {
    auto found = lines.find(current);
    if (found != lines.end()) return found->second;
    if (current.empty()) return 1;
    current.erase(current.rfind('/'));
  }
}

JsoncDocument parse_jsonc(std::string_view text, std::string_view source_name) {
  JsoncDocument document;
  // Size, depth and number range are checked first: the line scanner below recurses once per
  // level and keeps every pointer, so it must never see hostile nesting.
  document.value = parse_json_within_limits(text, source_name, JsonComments::allow);
  LineScanner(text, document.lines).scan();
  return document;
}

std::string json_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string display_path(const std::string& pointer) {
  if (pointer.empty()) return "(root)";
  std::string out;
  std::size_t pos = 1;
  while (pos <= pointer.size()) {
    std::size_t next = pointer.find('/', pos);
    if (next == std::string::npos) next = pointer.size();
    std::string token = pointer.substr(pos, next - pos);
    std::string unescaped;
    for (std::size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) {
        unescaped += token[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        unescaped += token[i];
      }
    }
    bool index = !unescaped.empty() &&
                 unescaped.find_first_not_of("0123456789") == std::string::npos;
    if (index) {
      out += "[" + unescaped + "]";
    } else {
      if (!out.empty()) out += ".";
      out += unescaped;
    }
    pos = next + 1;
  }
  return out;
}

}  // namespace podplane::generator
