// Range requests against mirror serve (RFC 9110 §14), with curl(1) as the client: single,
// open, suffix and multiple ranges, ranges past the end, If-Range, HEAD, and a resumed
// download. Multipart answers are parsed here and every part is checked against the file.
#include <gtest/gtest.h>

#include "base/ascii.hpp"
#include "mirror/serve_ranges.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;

struct CurlAnswer {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names, of the final answer
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

struct Part {
  std::map<std::string, std::string> headers;
  std::string body;
};

// Splits a multipart/byteranges body (RFC 9110 §14.6, RFC 2046 §5.1.1) on `boundary`.
// Returns nothing when the framing is wrong.
std::optional<std::vector<Part>> parse_multipart(const std::string& body, const std::string& boundary) {
  std::vector<Part> parts;
  const std::string delimiter = "--" + boundary;
  if (body.rfind(delimiter + "\r\n", 0) != 0) return std::nullopt;
  std::size_t at = delimiter.size() + 2;
  while (true) {
    auto head_end = body.find("\r\n\r\n", at);
    if (head_end == std::string::npos) return std::nullopt;
    Part part;
    std::istringstream lines(body.substr(at, head_end - at));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      auto colon = line.find(':');
      if (colon == std::string::npos) return std::nullopt;
      const std::string name = ascii_lower(line.substr(0, colon));
      part.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    // The part's length comes from its own Content-Range, so a wrong size shows as bad framing.
    auto range = part.headers["content-range"];
    unsigned long long first = 0, last = 0, total = 0;
    if (std::sscanf(range.c_str(), "bytes %llu-%llu/%llu", &first, &last, &total) != 3 || last < first) return std::nullopt;
    std::size_t data = head_end + 4;
    part.body = body.substr(data, static_cast<std::size_t>(last - first + 1));
    at = data + part.body.size();
    if (part.body.size() != last - first + 1) return std::nullopt;
    parts.push_back(std::move(part));
    if (body.compare(at, 2 + delimiter.size() + 4, "\r\n" + delimiter + "--\r\n") == 0 &&
        at + 2 + delimiter.size() + 4 == body.size())
      return parts;
    if (body.compare(at, 2 + delimiter.size() + 2, "\r\n" + delimiter + "\r\n") != 0) return std::nullopt;
    at += 2 + delimiter.size() + 2;
  }
}

class RangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work", 1024, 1024 * 1024 + 17);
    test::write_test_tls(temp_.path());
    server_ = std::make_unique<MirrorServe>(temp_ / "deps",
                                            std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert",
                                                                     (temp_ / "cert.pem").string(), "--tls-key",
                                                                     (temp_ / "key.pem").string()},
                                            temp_ / "serve.err");
    ASSERT_TRUE(server_->started()) << server_->log();
    file_ = contents_.artifact_bytes;
    size_ = file_.size();
    url_ = server_->url() + contents_.artifact_path;
    etag_ = "\"" + sha256_hex(file_) + "\"";
  }

  // curl(1) with the test CA; `args` before the URL. Headers of the last answer only.
  CurlAnswer curl(const std::vector<std::string>& args, const std::string& url) {
    fs::path body = temp_ / "body", headers = temp_ / "headers";
    std::error_code ec;
    fs::remove(body, ec);
    std::vector<std::string> argv{"curl", "-sS", "--cacert", (temp_ / "cert.pem").string(), "-D", headers.string(), "-o",
                                  body.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    auto result = run(argv);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    CurlAnswer answer;
    answer.body = fs::exists(body) ? read_file(body) : "";
    std::istringstream lines(read_file(headers));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("HTTP/", 0) == 0) {
        answer.headers.clear();
        answer.status = std::stoi(line.substr(line.find(' ') + 1));
        continue;
      }
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string name = ascii_lower(line.substr(0, colon));
      answer.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    return answer;
  }

  std::string content_range(std::size_t first, std::size_t last) const {
    return "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(size_);
  }

  void expect_single(const std::string& range, std::size_t first, std::size_t last) {
    auto answer = curl({"-H", "Range: " + range}, url_);
    EXPECT_EQ(answer.status, 206) << range;
    EXPECT_EQ(answer.header("content-range"), content_range(first, last)) << range;
    EXPECT_EQ(answer.header("content-length"), std::to_string(last - first + 1)) << range;
    EXPECT_EQ(answer.header("content-type"), "application/gzip") << range;
    EXPECT_TRUE(answer.body == file_.substr(first, last - first + 1)) << range << ": wrong bytes";
  }

  void expect_unsatisfiable(const std::string& range) {
    auto answer = curl({"-H", "Range: " + range}, url_);
    EXPECT_EQ(answer.status, 416) << range;
    EXPECT_EQ(answer.header("content-range"), "bytes */" + std::to_string(size_)) << range;
    EXPECT_EQ(answer.body.find(file_.substr(0, 64)), std::string::npos) << range;
  }

  void expect_whole(const std::vector<std::string>& args, const std::string& why) {
    auto answer = curl(args, url_);
    EXPECT_EQ(answer.status, 200) << why;
    EXPECT_EQ(answer.header("content-range"), "") << why;
    EXPECT_EQ(answer.header("content-length"), std::to_string(size_)) << why;
    EXPECT_TRUE(answer.body == file_) << why;
  }

  TempDir temp_;
  StoreContents contents_;
  std::unique_ptr<MirrorServe> server_;
  std::string file_, url_, etag_;
  std::size_t size_ = 0;
};

TEST_F(RangeTest, SingleOpenAndSuffixRanges) {
  expect_single("bytes=0-0", 0, 0);
  expect_single("bytes=1000-1999", 1000, 1999);
  expect_single("bytes=1000-", 1000, size_ - 1);                       // open
  expect_single("bytes=-100", size_ - 100, size_ - 1);                 // suffix
  expect_single("bytes=-" + std::to_string(size_ + 50), 0, size_ - 1);  // suffix longer than the file
  expect_single("bytes=" + std::to_string(size_ - 10) + "-" + std::to_string(size_ + 1000), size_ - 10, size_ - 1);
  expect_single("bytes=" + std::to_string(size_ - 1) + "-", size_ - 1, size_ - 1);
  // curl's own -r, and the unit is case-insensitive.
  auto r = curl({"-r", "5-9"}, url_);
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.body, file_.substr(5, 5));
  expect_single("BYTES=10-19", 10, 19);
}

TEST_F(RangeTest, RangesPastTheEndAnswer416WithTheSize) {
  expect_unsatisfiable("bytes=" + std::to_string(size_) + "-");
  expect_unsatisfiable("bytes=" + std::to_string(size_) + "-" + std::to_string(size_ + 10));
  expect_unsatisfiable("bytes=" + std::to_string(size_ * 4) + "-");
  expect_unsatisfiable("bytes=-0");
  expect_unsatisfiable("bytes=" + std::to_string(size_) + "-,99999999999-");  // none satisfiable
  expect_unsatisfiable("bytes=9-0");                                           // invalid: last before first
  expect_unsatisfiable("bytes=abc");
  expect_unsatisfiable("bytes=0-1,5-3");  // valid then invalid: still refused as a whole
  expect_unsatisfiable("bytes=");
  // The server keeps serving after them, and HEAD says the same.
  auto head = curl({"-I", "-H", "Range: bytes=" + std::to_string(size_) + "-"}, url_);
  EXPECT_EQ(head.status, 416);
  EXPECT_EQ(head.header("content-range"), "bytes */" + std::to_string(size_));
  expect_single("bytes=0-9", 0, 9);
}

TEST_F(RangeTest, MultipleRangesAnswerAnExactMultipartBody) {
  const std::string spec = "bytes=0-9,1000-1099,-20,500-";
  auto answer = curl({"-H", "Range: " + spec}, url_);
  ASSERT_EQ(answer.status, 206);
  auto type = answer.header("content-type");
  ASSERT_EQ(type.rfind("multipart/byteranges; boundary=", 0), 0u) << type;
  std::string boundary = type.substr(type.find('=') + 1);
  EXPECT_EQ(answer.header("content-length"), std::to_string(answer.body.size())) << "Content-Length is the body";
  EXPECT_EQ(answer.header("content-range"), "");
  auto parts = parse_multipart(answer.body, boundary);
  ASSERT_TRUE(parts.has_value()) << "multipart framing: " << answer.body.substr(0, 400);
  std::vector<std::pair<std::size_t, std::size_t>> expected = {{0, 9}, {1000, 1099}, {size_ - 20, size_ - 1}, {500, size_ - 1}};
  ASSERT_EQ(parts->size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto [first, last] = expected[i];
    EXPECT_EQ((*parts)[i].headers["content-range"], content_range(first, last)) << i;
    EXPECT_EQ((*parts)[i].headers["content-type"], "application/gzip") << i;
    EXPECT_TRUE((*parts)[i].body == file_.substr(first, last - first + 1)) << "part " << i << " bytes";
  }
  // HEAD gives the same length without a body.
  auto head = curl({"-I", "-H", "Range: " + spec}, url_);
  EXPECT_EQ(head.status, 206);
  EXPECT_EQ(head.header("content-length"), answer.header("content-length"));

  // Unsatisfiable members are dropped; one left is a plain 206, not a multipart.
  expect_single("bytes=0-9," + std::to_string(size_ + 5) + "-", 0, 9);
  // Two parts through curl's own -r.
  auto two = curl({"-r", "0-1,4-5"}, url_);
  EXPECT_EQ(two.status, 206);
  auto two_type = two.header("content-type");
  auto two_parts = parse_multipart(two.body, two_type.substr(two_type.find('=') + 1));
  ASSERT_TRUE(two_parts.has_value()) << two.body;
  EXPECT_EQ(two_parts->size(), 2u);
}

TEST_F(RangeTest, IgnoredRangesAnswerTheWholeFile) {
  expect_whole({"-H", "Range: items=0-9"}, "an unknown range unit");
  expect_whole({"-H", "Range: bytes=0-9", "-H", "If-Range: \"0000\""}, "If-Range with another entity tag");
  auto matching = curl({"-H", "Range: bytes=0-9", "-H", "If-Range: " + etag_}, url_);
  EXPECT_EQ(matching.status, 206) << "If-Range with our entity tag";
  EXPECT_EQ(matching.body, file_.substr(0, 10));
  auto whole = curl({}, url_);
  EXPECT_EQ(whole.header("etag"), etag_);
  EXPECT_EQ(whole.header("accept-ranges"), "bytes");
}

TEST_F(RangeTest, DocumentsTakeRangesToo) {
  std::string path = "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json";
  auto whole = curl({}, server_->url() + path);
  ASSERT_EQ(whole.status, 200);
  std::string document = whole.body;
  auto part = curl({"-H", "Range: bytes=2-11"}, server_->url() + path);
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.body, document.substr(2, 10));
  EXPECT_EQ(part.header("content-range"), "bytes 2-11/" + std::to_string(document.size()));
  auto past = curl({"-H", "Range: bytes=" + std::to_string(document.size()) + "-"}, server_->url() + path);
  EXPECT_EQ(past.status, 416);
  EXPECT_EQ(past.header("content-range"), "bytes */" + std::to_string(document.size()));
}

TEST_F(RangeTest, CurlResumesAnInterruptedDownload) {
  fs::path partial = temp_ / "partial.bin";
  podplane::test::write_file(partial, file_.substr(0, 300000));
  auto result = run({"curl", "-sS", "--fail", "--cacert", (temp_ / "cert.pem").string(), "-C", "-", "-o", partial.string(), url_});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(read_file(partial) == file_) << "the resumed file is whole";
  EXPECT_EQ(server_->stop(), 0);
  EXPECT_NE(server_->log().find("\" 206 " + std::to_string(size_ - 300000)), std::string::npos) << server_->log();
}

TEST(RangePlan, FollowsRfc9110) {
  using mirror::ByteRange;
  using mirror::plan_ranges;
  using mirror::RangeOutcome;
  auto ranges = [](std::string_view header, std::uint64_t size) { return plan_ranges(header, size).ranges; };
  EXPECT_EQ(ranges("bytes=0-499", 10000), (std::vector<ByteRange>{{0, 499}}));
  EXPECT_EQ(ranges("bytes=500-999", 10000), (std::vector<ByteRange>{{500, 999}}));
  EXPECT_EQ(ranges("bytes=-500", 10000), (std::vector<ByteRange>{{9500, 9999}}));
  EXPECT_EQ(ranges("bytes=9500-", 10000), (std::vector<ByteRange>{{9500, 9999}}));
  EXPECT_EQ(ranges("bytes=0-0,-1", 10000), (std::vector<ByteRange>{{0, 0}, {9999, 9999}}));
  EXPECT_EQ(ranges("bytes= 0-1 , , 4-5 ", 10), (std::vector<ByteRange>{{0, 1}, {4, 5}})) << "list whitespace, empty elements";
  EXPECT_EQ(ranges("bytes=5-99999999999999999999999", 10), (std::vector<ByteRange>{{5, 9}})) << "huge numbers saturate";
  EXPECT_EQ(plan_ranges("bytes=99999999999999999999999-", 10).outcome, RangeOutcome::unsatisfiable);
  EXPECT_EQ(plan_ranges("bytes=10-", 10).outcome, RangeOutcome::unsatisfiable);
  EXPECT_EQ(plan_ranges("bytes=1-+2", 10).outcome, RangeOutcome::unsatisfiable);
  EXPECT_EQ(plan_ranges("bytes=0x1-2", 10).outcome, RangeOutcome::unsatisfiable);
  EXPECT_EQ(plan_ranges("bytes", 10).outcome, RangeOutcome::unsatisfiable);
  EXPECT_EQ(plan_ranges("items=0-1", 10).outcome, RangeOutcome::whole);
  EXPECT_EQ(plan_ranges("bytes=0-1", 0).outcome, RangeOutcome::whole) << "an empty file ignores ranges";
  std::string many = "bytes=0-0";
  for (std::size_t i = 1; i <= mirror::kMaxRanges; ++i) many += "," + std::to_string(i) + "-" + std::to_string(i);
  EXPECT_EQ(plan_ranges(many, 100).outcome, RangeOutcome::whole) << "too many ranges: the whole file";

  // The multipart layout's size is exactly the bytes it produces, for any cut of it.
  auto layout = mirror::BodyLayout::multipart({{0, 9}, {20, 29}}, 100, "application/zip", "BOUNDARY");
  std::string representation(100, 'x');
  for (int i = 0; i < 100; ++i) representation[static_cast<std::size_t>(i)] = static_cast<char>('a' + i % 26);
  auto produce = [&](std::uint64_t offset, std::uint64_t length) {
    std::string out;
    auto text = [&](std::string_view bytes) {
      out.append(bytes);
      return true;
    };
    auto slice = [&](std::uint64_t at, std::uint64_t count) {
      out.append(representation.substr(static_cast<std::size_t>(at), static_cast<std::size_t>(count)));
      return true;
    };
    EXPECT_TRUE(layout.produce(offset, length, text, slice));
    return out;
  };
  std::string whole = produce(0, layout.size());
  EXPECT_EQ(whole.size(), layout.size());
  EXPECT_EQ(whole, "--BOUNDARY\r\nContent-Type: application/zip\r\nContent-Range: bytes 0-9/100\r\n\r\n" +
                       representation.substr(0, 10) +
                       "\r\n--BOUNDARY\r\nContent-Type: application/zip\r\nContent-Range: bytes 20-29/100\r\n\r\n" +
                       representation.substr(20, 10) + "\r\n--BOUNDARY--\r\n");
  for (std::uint64_t cut = 0; cut <= layout.size(); cut += 7)
    EXPECT_EQ(produce(0, cut) + produce(cut, layout.size() - cut), whole) << cut;
}

}  // namespace
}  // namespace podplane::serve_test
