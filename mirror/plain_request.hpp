#pragma once
// The plainest request heads, read by `mirror serve`'s event loop without cpp-httplib: a GET or
// HEAD of a path over HTTP/1.1 whose headers are all of the few known not to change a
// document's answer. Such a request's answer is the same bytes for every client (cpp-httplib's
// head, kept once per document, then the document), so the loop answers it from memory
// (serve.cpp, "prepared heads"). Anything else — another method or version, a query, an
// escaped path, a Range or conditional header, a body, a header this list does not know, a
// malformed line — is not plain, and cpp-httplib reads it as before: being wrong here can only
// cost speed, never change an answer.
#include <optional>
#include <string_view>

namespace podplane::mirror {

struct PlainRequest {
  bool head = false;      // HEAD (else GET)
  std::string_view target;  // the request target as sent: a path, no '?', no '%'
  bool close = false;     // "Connection: close"
};

// `bytes`: the request line and headers up to and with the blank line.
[[nodiscard]] std::optional<PlainRequest> parse_plain_request(std::string_view bytes);

}  // namespace podplane::mirror
