#include "generator/hcl_format.hpp"

#include <cctype>

#include "lockfile/hcl.hpp"

namespace podplane::generator {

namespace {

struct ScannedLine {
  std::string lead;    // up to, not including, the assignment's " ="
  std::string assign;  // "= …" when the line is a single-line attribute, else empty
  int net_brackets = 0;
  bool blank = false;
};

// Splits one trimmed line the way hclwrite's linesForFormat does: the first bare '=' (not
// part of ==, !=, <=, >=, =>) after the first token starts the "assign" cell when the rest
// of the line is bracket-balanced. Strings (with their ${} interpolations) and comments are
// skipped when counting brackets.
ScannedLine scan(std::string_view text) {
  ScannedLine line;
  std::size_t begin = 0;
  while (begin < text.size() && (text[begin] == ' ' || text[begin] == '\t')) ++begin;
  std::size_t end = text.size();
  while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\t' || text[end - 1] == '\r')) --end;
  std::string_view body = text.substr(begin, end - begin);
  if (body.empty()) {
    line.blank = true;
    return line;
  }
  int depth_total = 0;
  std::size_t equals_at = std::string_view::npos;
  int depth_after_equals = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '"') {
      ++i;
      while (i < body.size() && body[i] != '"') {
        if (body[i] == '\\') ++i;
        ++i;
      }
      continue;
    }
    if (c == '#' || (c == '/' && i + 1 < body.size() && body[i + 1] == '/')) break;
    int change = 0;
    if (c == '{' || c == '[' || c == '(') change = 1;
    if (c == '}' || c == ']' || c == ')') change = -1;
    depth_total += change;
    if (equals_at != std::string_view::npos) depth_after_equals += change;
    if (c == '=' && equals_at == std::string_view::npos && i > 0) {
      char before = body[i - 1];
      char after = i + 1 < body.size() ? body[i + 1] : '\0';
      bool operator_char = before == '=' || before == '!' || before == '<' || before == '>' || after == '=' || after == '>';
      if (!operator_char) equals_at = i;
    }
  }
  line.net_brackets = depth_total;
  if (equals_at != std::string_view::npos && depth_after_equals == 0) {
    std::size_t lead_end = equals_at;
    while (lead_end > 0 && body[lead_end - 1] == ' ') --lead_end;
    line.lead = std::string(body.substr(0, lead_end));
    std::size_t rhs = equals_at + 1;
    while (rhs < body.size() && body[rhs] == ' ') ++rhs;
    line.assign = "= " + std::string(body.substr(rhs));
  } else {
    line.lead = std::string(body);
  }
  return line;
}

}  // namespace

std::string format_hcl(std::string_view text) {
  std::vector<ScannedLine> lines;
  std::vector<int> indent;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos) newline = text.size();
    if (!(newline == text.size() && start == text.size())) lines.push_back(scan(text.substr(start, newline - start)));
    start = newline + 1;
  }
  // formatIndent: a line that opens brackets is indented at the current depth and pushes the
  // count; a line that closes pops before it is indented.
  std::vector<int> stack;
  for (auto& line : lines) {
    if (line.blank) {
      indent.push_back(0);
      continue;
    }
    if (line.net_brackets > 0) {
      indent.push_back(2 * static_cast<int>(stack.size()));
      stack.push_back(line.net_brackets);
    } else if (line.net_brackets < 0) {
      int closed = -line.net_brackets;
      while (closed > 0 && !stack.empty()) {
        if (closed > stack.back()) {
          closed -= stack.back();
          stack.pop_back();
        } else if (closed < stack.back()) {
          stack.back() -= closed;
          closed = 0;
        } else {
          stack.pop_back();
          closed = 0;
        }
      }
      indent.push_back(2 * static_cast<int>(stack.size()));
    } else {
      indent.push_back(2 * static_cast<int>(stack.size()));
    }
  }
  // formatCells: align the '=' of each run of adjacent lines that have an assign cell.
  std::vector<std::size_t> pad(lines.size(), 1);
  std::size_t i = 0;
  while (i < lines.size()) {
    if (lines[i].assign.empty()) {
      ++i;
      continue;
    }
    std::size_t chain_end = i;
    std::size_t widest = 0;
    while (chain_end < lines.size() && !lines[chain_end].assign.empty()) {
      widest = std::max(widest, indent[chain_end] + lines[chain_end].lead.size());
      ++chain_end;
    }
    for (std::size_t j = i; j < chain_end; ++j) pad[j] = widest - (indent[j] + lines[j].lead.size()) + 1;
    i = chain_end;
  }
  std::string out;
  for (std::size_t j = 0; j < lines.size(); ++j) {
    if (!lines[j].blank) {
      out.append(static_cast<std::size_t>(indent[j]), ' ');
      out += lines[j].lead;
      if (!lines[j].assign.empty()) {
        out.append(pad[j], ' ');
        out += lines[j].assign;
      }
    }
    out += '\n';
  }
  return out;
}

HclText& HclText::line(std::string_view text) {
  lines_.emplace_back(text);
  return *this;
}

HclText& HclText::blank() {
  if (!lines_.empty() && !lines_.back().empty()) lines_.emplace_back();
  return *this;
}

HclText& HclText::comment(std::string_view text) {
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos) newline = text.size();
    std::string_view piece = text.substr(start, newline - start);
    lines_.push_back(piece.empty() ? "#" : "# " + std::string(piece));
    start = newline + 1;
  }
  return *this;
}

HclText& HclText::open(std::string_view header) { return line(std::string(header) + " {"); }

HclText& HclText::close(std::string_view closer) { return line(closer); }

HclText& HclText::attr(std::string_view name, std::string_view expression) {
  return line(std::string(name) + " = " + std::string(expression));
}

std::string HclText::formatted() const {
  std::string text;
  std::size_t count = lines_.size();
  while (count > 0 && lines_[count - 1].empty()) --count;  // no trailing blank lines
  for (std::size_t i = 0; i < count; ++i) text += lines_[i] + "\n";
  return format_hcl(text);
}

std::string hcl_string(std::string_view text) { return lockfile::hcl::quote(text); }

std::string hcl_string_or_null(std::string_view text) { return text.empty() ? "null" : hcl_string(text); }

std::string hcl_list(const std::vector<std::string>& expressions) {
  std::string out = "[";
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    if (i > 0) out += ", ";
    out += expressions[i];
  }
  return out + "]";
}

std::string hcl_string_list(const std::vector<std::string>& strings) {
  std::vector<std::string> quoted;
  for (const auto& s : strings) quoted.push_back(hcl_string(s));
  return hcl_list(quoted);
}

std::string hcl_bool(bool value) { return value ? "true" : "false"; }

std::string hcl_identifier(std::string_view text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out;
}

std::string hcl_key(std::string_view text) {
  bool identifier = !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_');
  for (char c : text) identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return identifier ? std::string(text) : hcl_string(text);
}

}  // namespace podplane::generator
