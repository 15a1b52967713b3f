#pragma once
// Text from outside (upstream answers, bundle entries, file names, config keys) on its way to
// a terminal. Control bytes a terminal would act on (ESC sequences, CR rewriting a line, NUL,
// BEL, backspace, DEL, and the C1 controls U+0080–U+009F) become visible escapes: C0 and DEL
// as \xHH, C1 as \u00HH (which keeps JSON output valid JSON). Tabs, newlines and every other
// UTF-8 character pass unchanged. Nothing from outside can then rewrite or hide what we print.
#include <mutex>
#include <streambuf>
#include <string>
#include <string_view>

namespace podplane {

enum class Newlines { keep, escape };

[[nodiscard]] std::string printable(std::string_view text, Newlines newlines = Newlines::keep);

// Passes every byte written to it through printable() (newlines kept) on to `target`, which
// must outlive it. main() puts one in front of std::cout and std::cerr, so every message,
// report and table is covered in one place. Safe to write from several threads.
class PrintableStreambuf : public std::streambuf {
 public:
  explicit PrintableStreambuf(std::streambuf* target) : target_(target) {}
  ~PrintableStreambuf() override;
  PrintableStreambuf(const PrintableStreambuf&) = delete;
  PrintableStreambuf& operator=(const PrintableStreambuf&) = delete;

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* data, std::streamsize count) override;
  int sync() override;

 private:
  void put(unsigned char byte);  // with mutex_ held

  std::streambuf* target_;
  std::mutex mutex_;
  bool pending_lead_ = false;  // a 0xC2 byte waits to see whether a C1 control follows
};

}  // namespace podplane
