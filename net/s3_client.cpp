#include "net/s3_client.hpp"

#include <cstdlib>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/url.hpp"

namespace podplane::net {

namespace {

// sha256 of nothing: the payload hash of a request without a body.
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// The raw contents of each <tag>…</tag>, not decoded: a block (<Contents>) is read again
// element by element, and decoding it first could turn a key's "&lt;Size&gt;" into markup.
std::vector<std::string_view> raw_elements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> found;
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  for (std::size_t at = xml.find(open); at != std::string_view::npos; at = xml.find(open, at)) {
    const std::size_t start = at + open.size();
    const std::size_t end = xml.find(close, start);
    if (end == std::string_view::npos) break;
    found.push_back(xml.substr(start, end - start));
    at = end + close.size();
  }
  return found;
}

void append_utf8(std::string& out, unsigned long code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// XML's five named entities and numeric character references; anything else stays as written.
std::string decode_entities(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::size_t semicolon = text[i] == '&' ? text.find(';', i) : std::string_view::npos;
    if (semicolon == std::string_view::npos || semicolon - i > 10) {
      out += text[i];
      continue;
    }
    const std::string_view entity = text.substr(i + 1, semicolon - i - 1);
    if (entity == "amp") out += '&';
    else if (entity == "lt") out += '<';
    else if (entity == "gt") out += '>';
    else if (entity == "quot") out += '"';
    else if (entity == "apos") out += '\'';
    else if (entity.size() > 1 && entity[0] == '#') {
      const bool hex = entity[1] == 'x' || entity[1] == 'X';
      const std::string digits(entity.substr(hex ? 2 : 1));
      char* end = nullptr;
      const unsigned long code = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
      if (digits.empty() || *end != '\0' || code == 0 || code > 0x10FFFF) {
        out += text[i];
        continue;
      }
      append_utf8(out, code);
    } else {
      out += text[i];
      continue;
    }
    i = semicolon;
  }
  return out;
}

std::string first_text(std::string_view xml, std::string_view tag) {
  auto texts = s3_xml_texts(xml, tag);
  return texts.empty() ? std::string() : texts.front();
}

std::string unquoted(std::string etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

// What to check for the errors a misconfigured export meets first.
std::string hint_for(const std::string& code) {
  if (code == "NoSuchBucket") return "the bucket does not exist at this endpoint: create it, or check the bucket name and AWS_ENDPOINT_URL";
  if (code == "InvalidAccessKeyId") return "the endpoint knows no such access key: check AWS_ACCESS_KEY_ID";
  if (code == "SignatureDoesNotMatch")
    return "the signature does not match: check AWS_SECRET_ACCESS_KEY (and AWS_REGION for endpoints that check it)";
  if (code == "AccessDenied") return "these credentials may not do this: check the bucket's policy for this user";
  if (code == "RequestTimeTooSkewed") return "this host's clock is too far from the endpoint's";
  return "";
}

}  // namespace

S3Config S3Config::from_environment() {
  S3Config config;
  config.region = environment("AWS_REGION");
  if (config.region.empty()) config.region = environment("AWS_DEFAULT_REGION");
  if (config.region.empty()) config.region = "us-east-1";
  config.endpoint = environment("AWS_ENDPOINT_URL_S3");
  const char* endpoint_variable = "AWS_ENDPOINT_URL_S3";
  if (config.endpoint.empty()) {
    config.endpoint = environment("AWS_ENDPOINT_URL");
    endpoint_variable = "AWS_ENDPOINT_URL";
  }
  if (config.endpoint.empty()) {
    config.endpoint = "https://s3." + config.region + ".amazonaws.com";
  } else {
    auto parts = split_url(config.endpoint);
    if (!parts || !has_http_scheme(config.endpoint) || !parts->query.empty() || !parts->fragment.empty() ||
        !parts->userinfo.empty())
      throw UsageError(mismatch_message(std::string(endpoint_variable) + " is not an endpoint URL",
                                        "http(s)://host[:port][/path]", redact_url(config.endpoint)));
    config.endpoint = without_trailing_slashes(config.endpoint);
  }
  config.access_key_id = environment("AWS_ACCESS_KEY_ID");
  config.secret_access_key = environment("AWS_SECRET_ACCESS_KEY");
  config.session_token = environment("AWS_SESSION_TOKEN");
  if (config.access_key_id.empty() || config.secret_access_key.empty())
    throw UsageError("an s3:// target needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment");
  return config;
}

S3Bucket::S3Bucket(S3Config config, std::string bucket, HttpOptions options)
    : config_(std::move(config)), bucket_(std::move(bucket)), http_(std::move(options)) {}

std::string S3Bucket::name(const std::string& key) const { return "s3://" + bucket_ + "/" + key; }

HttpResponse S3Bucket::send(Method method, const std::string& key, const std::string& query, RequestBody body,
                            const std::string& sha256_hex, std::vector<std::string> headers, const std::string& what) {
  HttpRequest request;
  request.method = method;
  request.url = config_.endpoint + "/" + s3_uri_encode(bucket_, false) + "/" + s3_uri_encode(key, true) +
                (query.empty() ? "" : "?" + query);
  request.body = std::move(body);
  request.headers = std::move(headers);
  request.headers.push_back("x-amz-content-sha256: " + sha256_hex);
  if (!config_.session_token.empty()) request.headers.push_back("x-amz-security-token: " + config_.session_token);
  request.aws_sigv4 = AwsSigV4{config_.region, "s3", config_.access_key_id, config_.secret_access_key};
  HttpResponse response;
  try {
    response = http_.send(request);
  } catch (const Error& error) {
    throw Error("cannot " + what + " at " + config_.endpoint + ": " + error.message());
  }
  if (response.status / 100 == 2) return response;
  // HEAD-less S3 errors carry <Error><Code>…</Code><Message>…</Message></Error>.
  const std::string code = first_text(response.body, "Code"), message = first_text(response.body, "Message");
  std::string text = "cannot " + what + " at " + config_.endpoint + ": " + (code.empty() ? "" : code + " ") + "(" +
                     response.status_text() + ")" + (message.empty() ? "" : ": " + message);
  if (auto hint = hint_for(code); !hint.empty()) text += "\n  " + hint;
  throw Error(text);
}

std::vector<S3Object> S3Bucket::list(const std::string& prefix) {
  std::vector<S3Object> objects;
  std::string token;
  for (;;) {
    // The canonical query of SigV4: parameters sorted by name, each value URI-encoded.
    std::string query = (token.empty() ? "" : "continuation-token=" + s3_uri_encode(token, false) + "&") +
                        "list-type=2&prefix=" + s3_uri_encode(prefix, false);
    auto response = send(Method::get, "", query, {}, kEmptySha256, {}, "list " + name(prefix));
    for (auto contents : raw_elements(response.body, "Contents")) {
      S3Object object;
      object.key = first_text(contents, "Key");
      object.etag = unquoted(first_text(contents, "ETag"));
      const std::string size = first_text(contents, "Size");
      char* end = nullptr;
      object.size = std::strtoull(size.c_str(), &end, 10);
      if (object.key.empty() || size.empty() || *end != '\0')
        throw Error("cannot list " + name(prefix) + " at " + config_.endpoint + ": an entry of the listing has no key or size");
      objects.push_back(std::move(object));
    }
    if (first_text(response.body, "IsTruncated") != "true") return objects;
    const std::string next = first_text(response.body, "NextContinuationToken");
    if (next.empty() || next == token)
      throw Error("cannot list " + name(prefix) + " at " + config_.endpoint + ": a truncated listing gave no next page");
    token = next;
  }
}

std::string S3Bucket::put(const std::string& key, const RequestBody& body, const std::string& sha256_hex,
                          const std::string& content_type) {
  auto response = send(Method::put, key, "", body, sha256_hex, {"Content-Type: " + content_type}, "upload " + name(key));
  return unquoted(response.header("etag"));
}

std::string S3Bucket::start_multipart(const std::string& key, const std::string& content_type) {
  auto response = send(Method::post, key, "uploads=", {}, kEmptySha256, {"Content-Type: " + content_type},
                       "start a multipart upload of " + name(key));
  std::string upload_id = first_text(response.body, "UploadId");
  if (upload_id.empty())
    throw Error("cannot start a multipart upload of " + name(key) + " at " + config_.endpoint + ": the answer has no UploadId");
  return upload_id;
}

std::string S3Bucket::put_part(const std::string& key, const std::string& upload_id, int part_number,
                               const RequestBody& body, const std::string& sha256_hex) {
  auto response = send(Method::put, key, "partNumber=" + std::to_string(part_number) + "&uploadId=" + s3_uri_encode(upload_id, false),
                       body, sha256_hex, {}, "upload part " + std::to_string(part_number) + " of " + name(key));
  return unquoted(response.header("etag"));
}

std::string S3Bucket::complete_multipart(const std::string& key, const std::string& upload_id,
                                         const std::vector<std::string>& part_etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (std::size_t i = 0; i < part_etags.size(); ++i)
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" + part_etags[i] + "\"</ETag></Part>";
  xml += "</CompleteMultipartUpload>";
  auto response = send(Method::post, key, "uploadId=" + s3_uri_encode(upload_id, false), RequestBody::bytes(xml),
                       sha256_hex(xml), {"Content-Type: application/xml"}, "complete the multipart upload of " + name(key));
  // A 200 may still carry an <Error> (S3 reports late failures of this call in the body).
  if (const std::string code = first_text(response.body, "Code"); !code.empty())
    throw Error("cannot complete the multipart upload of " + name(key) + " at " + config_.endpoint + ": " + code + ": " +
                first_text(response.body, "Message"));
  return unquoted(first_text(response.body, "ETag"));
}

std::string S3Bucket::etag(const std::string& key) {
  auto response = send(Method::head, key, "", {}, kEmptySha256, {}, "read the ETag of " + name(key));
  return unquoted(response.header("etag"));
}

void S3Bucket::abort_multipart(const std::string& key, const std::string& upload_id) noexcept {
  try {
    (void)send(Method::delete_, key, "uploadId=" + s3_uri_encode(upload_id, false), {}, kEmptySha256, {},
               "abort the multipart upload of " + name(key));
  } catch (...) {
    // The upload is left for the bucket's lifecycle rules; the export reports its own error.
  }
}

void S3Bucket::remove(const std::string& key) {
  (void)send(Method::delete_, key, "", {}, kEmptySha256, {}, "remove " + name(key));
}

std::string s3_uri_encode(std::string_view text, bool keep_slash) {
  return percent_encoded(text, keep_slash ? "/" : "");
}

std::vector<std::string> s3_xml_texts(std::string_view xml, std::string_view tag) {
  std::vector<std::string> texts;
  for (auto raw : raw_elements(xml, tag)) texts.push_back(decode_entities(raw));
  return texts;
}

}  // namespace podplane::net
