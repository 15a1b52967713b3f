// Which request heads the event loop answers from a prepared head (mirror/plain_request.hpp):
// only a GET or HEAD of a plain path over HTTP/1.1 with headers known not to change the answer.
// Everything else must go to cpp-httplib, so each refusal here is a request whose answer could
// differ from a document's usual bytes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mirror/plain_request.hpp"

namespace podplane::mirror {
namespace {

// The parsed request's target points into the head, so the heads live as long as the test.
std::optional<PlainRequest> parsed(const std::string& head) {
  static std::vector<std::unique_ptr<std::string>> heads;
  heads.push_back(std::make_unique<std::string>(head));
  return parse_plain_request(*heads.back());
}

TEST(PlainRequest, AGetOrHeadOfAPathWithKnownHeadersIsPlain) {
  auto get = parsed("GET /v1/providers/x.json HTTP/1.1\r\nHost: m:8443\r\nUser-Agent: wrk\r\nAccept: */*\r\n"
                    "accept-encoding: gzip\r\nAccept-Language: en\r\nCache-Control: no-cache\r\nPragma: no-cache\r\n"
                    "X-Terraform-Version: 1.12.2\r\n\r\n");
  ASSERT_TRUE(get.has_value());
  EXPECT_FALSE(get->head);
  EXPECT_EQ(get->target, "/v1/providers/x.json");
  EXPECT_FALSE(get->close);

  auto head = parsed("HEAD /v2/ HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(head.has_value());
  EXPECT_TRUE(head->head);
  EXPECT_EQ(head->target, "/v2/");
  EXPECT_TRUE(head->close);

  auto keep = parsed("GET / HTTP/1.1\r\nConnection:  Keep-Alive \r\n\r\n");
  ASSERT_TRUE(keep.has_value());
  EXPECT_FALSE(keep->close);
  EXPECT_TRUE(parsed("GET / HTTP/1.1\r\n\r\n").has_value());
}

TEST(PlainRequest, AnythingThatMayChangeTheAnswerIsNot) {
  for (const char* head : {
           "POST /x HTTP/1.1\r\nHost: m\r\n\r\n",                              // another method
           "get /x HTTP/1.1\r\n\r\n",                                          // methods are case-sensitive
           "GET /x HTTP/1.0\r\n\r\n",                                          // keep-alive rules differ
           "GET /x HTTP/2\r\n\r\n",
           "GET x HTTP/1.1\r\n\r\n",                                           // not a path
           "GET http://m/x HTTP/1.1\r\n\r\n",                                  // absolute form
           "GET /x?artifactType=a HTTP/1.1\r\n\r\n",                           // a query
           "GET /a%2fb HTTP/1.1\r\n\r\n",                                      // an escape
           "GET /a#b HTTP/1.1\r\n\r\n",
           "GET /a\\b HTTP/1.1\r\n\r\n",
           "GET /a\x80 HTTP/1.1\r\n\r\n",
           "GET /x HTTP/1.1\r\nRange: bytes=0-1\r\n\r\n",                      // a range
           "GET /x HTTP/1.1\r\nIf-Range: \"d\"\r\n\r\n",
           "GET /x HTTP/1.1\r\nIf-None-Match: \"d\"\r\n\r\n",                  // a header not on the list
           "GET /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",                     // a body
           "GET /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
           "GET /x HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
           "GET /x HTTP/1.1\r\nX-Request-Id: 1\r\n\r\n",
           "GET /x HTTP/1.1\r\nConnection: upgrade\r\n\r\n",                   // a Connection we do not take
           "GET /x HTTP/1.1\r\nConnection: close\r\nConnection: close\r\n\r\n",
           "GET /x HTTP/1.1\r\nHost: m\r\n",                                   // no blank line
           "GET /x HTTP/1.1\r\nHost: m\r\n\r\nGET /y HTTP/1.1\r\n\r\n",        // more than one head
           "GET /x HTTP/1.1\nHost: m\n\n",                                     // bare LF
           "GET /x HTTP/1.1\r\nHost m\r\n\r\n",                                // no colon
           "GET /x HTTP/1.1\r\n: m\r\n\r\n",                                   // no name
           "GET /x HTTP/1.1\r\nHo st: m\r\n\r\n",                              // not a token
           "GET /x HTTP/1.1\r\n Host: m\r\n\r\n",                              // a folded line
           "GET /x HTTP/1.1\r\nHost: m\x01\r\n\r\n",                           // a control character
           "GET  /x HTTP/1.1\r\n\r\n",
           "",
       }) {
    EXPECT_FALSE(parsed(head).has_value()) << head;
  }
  EXPECT_FALSE(parsed("GET /" + std::string(2048, 'a') + " HTTP/1.1\r\n\r\n").has_value());
  EXPECT_TRUE(parsed("GET /" + std::string(2047, 'a') + " HTTP/1.1\r\n\r\n").has_value());
}

}  // namespace
}  // namespace podplane::mirror
