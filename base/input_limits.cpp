#include "base/input_limits.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <istream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace podplane {

namespace {

// Line and column (1-based, columns in bytes) of `offset`, counted by a scan from the start:
// only ever done once, for the message of an error.
std::string position_of(std::string_view text, std::size_t offset) {
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return std::to_string(line) + ":" + std::to_string(offset - line_start + 1);
}

[[noreturn]] void fail_at(std::string_view text, std::string_view source_name, std::size_t offset,
                          const std::string& message) {
  throw Error(std::string(source_name) + ":" + position_of(text, offset) + ": " + message);
}

bool is_number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

}  // namespace

std::string describe_size_limit(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

void check_input_size(std::size_t size, std::string_view source_name, const InputLimits& limits) {
  if (size > limits.max_bytes)
    throw Error(std::string(source_name) + ":1:1: " + std::to_string(size) + " bytes, larger than the limit of " +
                describe_size_limit(limits.max_bytes));
}

namespace {

std::string read_within_limits(const UniqueFd& owned, const std::filesystem::path& file, std::string_view what,
                               const InputLimits& limits) {
  const int fd = owned.get();
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) check_input_size(static_cast<std::size_t>(st.st_size), file.string(), limits);
  // Read up to one byte past the limit: a file that grew, or a pipe, is caught too.
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read " + std::string(what) + " " + file.string() + ": " + std::strerror(errno));
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    check_input_size(text.size(), file.string(), limits);
  }
  return text;
}

}  // namespace

std::string read_file_within_limits(const std::filesystem::path& file, std::string_view what, const InputLimits& limits) {
  UniqueFd owned(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (owned.get() < 0) throw Error("cannot open " + std::string(what) + " " + file.string() + ": " + std::strerror(errno));
  return read_within_limits(owned, file, what, limits);
}

std::optional<std::string> read_file_if_present_within_limits(const std::filesystem::path& file, std::string_view what,
                                                              const InputLimits& limits) {
  UniqueFd owned(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (owned.get() < 0) return std::nullopt;
  return read_within_limits(owned, file, what, limits);
}

std::string read_stream_within_limits(std::istream& in, std::string_view source_name, const InputLimits& limits) {
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    check_input_size(text.size(), source_name, limits);
  }
  if (in.bad()) throw Error("cannot read " + std::string(source_name));
  return text;
}

void check_json_shape(std::string_view text, std::string_view source_name, JsonComments comments,
                      const InputLimits& limits) {
  check_input_size(text.size(), source_name, limits);
  int depth = 0;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      ++i;
    } else if (comments == JsonComments::allow && c == '/' && i + 1 < n && text[i + 1] == '/') {
      // As nlohmann reads it: a line comment ends at LF, CR or NUL.
      while (i < n && text[i] != '\n' && text[i] != '\r' && text[i] != '\0') ++i;
    } else if (comments == JsonComments::allow && c == '/' && i + 1 < n && text[i + 1] == '*') {
      auto end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth)
        fail_at(text, source_name, i, "nested deeper than " + std::to_string(limits.max_depth) + " levels");
      ++i;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
      ++i;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t start = i;
      while (i < n && is_number_char(text[i])) ++i;
      std::string token(text.substr(start, i - start));
      double value = std::strtod(token.c_str(), nullptr);
      if (std::isinf(value)) {
        if (token.size() > 40) token = token.substr(0, 40) + "…";
        fail_at(text, source_name, start, "number out of range: " + token);
      }
    } else {
      ++i;
    }
  }
}

nlohmann::json parse_json_within_limits(std::string_view text, std::string_view source_name, JsonComments comments,
                                        const InputLimits& limits) {
  check_json_shape(text, source_name, comments, limits);
  try {
    return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/comments == JsonComments::allow);
  } catch (const nlohmann::json::parse_error& error) {
    // nlohmann counts the byte just past the offending token; its text repeats the position.
    std::string message = error.what();
    if (auto detail = message.find("syntax error"); detail != std::string::npos) message = message.substr(detail);
    // Its "last read: '<token>'" quotes the document's bytes, and what follows it cannot be
    // told apart from them: a configuration file linked to a secret must not print the secret
    // (into a CI log). The line and column say where.
    if (auto quoted = message.find("; last read: "); quoted != std::string::npos) message.erase(quoted);
    fail_at(text, source_name, error.byte > 0 ? error.byte - 1 : 0, "invalid JSON: " + message);
  } catch (const nlohmann::json::exception& error) {
    throw Error(std::string(source_name) + ": invalid JSON: " + error.what());
  }
}

}  // namespace podplane
