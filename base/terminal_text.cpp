#include "base/terminal_text.hpp"

namespace podplane {

namespace {

constexpr char kHex[] = "0123456789abcdef";

template <typename Sink>
void escape_byte(unsigned char byte, Sink&& sink) {
  const char escaped[4] = {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
  sink(escaped, 4);
}

template <typename Sink>
void escape_c1(unsigned char second, Sink&& sink) {
  const char escaped[6] = {'\\', 'u', '0', '0', kHex[second >> 4], kHex[second & 0xf]};
  sink(escaped, 6);
}

bool is_c0_to_escape(unsigned char byte, Newlines newlines) {
  if (byte == '\t') return false;
  if (byte == '\n') return newlines == Newlines::escape;
  return byte < 0x20 || byte == 0x7f;
}

}  // namespace

std::string printable(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  auto sink = [&](const char* data, std::size_t size) { out.append(data, size); };
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (is_c0_to_escape(byte, newlines)) {
      escape_byte(byte, sink);
    } else if (byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      escape_c1(static_cast<unsigned char>(text[++i]), sink);
    } else {
      out.push_back(static_cast<char>(byte));
    }
  }
  return out;
}

PrintableStreambuf::~PrintableStreambuf() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_lead_) target_->sputc(static_cast<char>(0xC2));
  target_->pubsync();
}

void PrintableStreambuf::put(unsigned char byte) {
  auto sink = [&](const char* data, std::size_t size) { target_->sputn(data, static_cast<std::streamsize>(size)); };
  if (pending_lead_) {
    pending_lead_ = false;
    if (byte >= 0x80 && byte <= 0x9F) {
      escape_c1(byte, sink);
      return;
    }
    target_->sputc(static_cast<char>(0xC2));
  }
  if (byte == 0xC2) {
    pending_lead_ = true;
  } else if (is_c0_to_escape(byte, Newlines::keep)) {
    escape_byte(byte, sink);
  } else {
    target_->sputc(static_cast<char>(byte));
  }
}

PrintableStreambuf::int_type PrintableStreambuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  std::lock_guard<std::mutex> lock(mutex_);
  put(static_cast<unsigned char>(traits_type::to_char_type(ch)));
  return ch;
}

std::streamsize PrintableStreambuf::xsputn(const char* data, std::streamsize count) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Runs of bytes that need nothing go on in one call; the rest byte by byte.
  std::streamsize run = 0;
  for (std::streamsize i = 0; i < count; ++i) {
    auto byte = static_cast<unsigned char>(data[i]);
    if (!pending_lead_ && byte != 0xC2 && !is_c0_to_escape(byte, Newlines::keep)) {
      ++run;
      continue;
    }
    if (run > 0) target_->sputn(data + i - run, run);
    run = 0;
    put(byte);
  }
  if (run > 0) target_->sputn(data + count - run, run);
  return count;
}

int PrintableStreambuf::sync() {
  std::lock_guard<std::mutex> lock(mutex_);
  return target_->pubsync();
}

}  // namespace podplane
