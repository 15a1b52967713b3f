#pragma once
// The S3 operations `mirror export s3://…` needs (ListObjectsV2, PutObject, the multipart
// upload, DeleteObject) on one bucket, path-style (<endpoint>/<bucket>/<key>, what Ceph RGW,
// MinIO and AWS all answer), each request signed with AWS Signature Version 4 by libcurl and
// sent through HttpClient, so it keeps the retry budget, timeouts and TLS trust of every other
// request (net/http.hpp). The caller gives each body's sha256, which the server checks.
// Errors: podplane::Error naming the object (s3://bucket/key), the endpoint, and S3's error
// code and message, with what to check for the common ones. Not thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "net/http.hpp"

namespace podplane::net {

struct S3Config {
  std::string endpoint;  // "https://host[:port][/path]", no trailing slash
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;  // never printed
  std::string session_token;      // "" unless temporary credentials; never printed

  // The standard variables of the AWS tools: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else
  // AWS's own https://s3.<region>.amazonaws.com; AWS_REGION, else AWS_DEFAULT_REGION, else
  // us-east-1; AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (required); AWS_SESSION_TOKEN.
  // UsageError naming the variable that is missing or malformed.
  [[nodiscard]] static S3Config from_environment();
};

struct S3Object {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;  // without its quotes
};

class S3Bucket {
 public:
  S3Bucket(S3Config config, std::string bucket, HttpOptions options = HttpOptions::from_environment());

  // Every object whose key starts with `prefix`, page by page (ListObjectsV2).
  [[nodiscard]] std::vector<S3Object> list(const std::string& prefix);
  // PutObject; returns the ETag the server gives the object.
  [[nodiscard]] std::string put(const std::string& key, const RequestBody& body, const std::string& sha256_hex,
                                const std::string& content_type);
  // The multipart upload: returns the upload id, each part's ETag, and the object's ETag.
  [[nodiscard]] std::string start_multipart(const std::string& key, const std::string& content_type);
  [[nodiscard]] std::string put_part(const std::string& key, const std::string& upload_id, int part_number,
                                     const RequestBody& body, const std::string& sha256_hex);
  [[nodiscard]] std::string complete_multipart(const std::string& key, const std::string& upload_id,
                                               const std::vector<std::string>& part_etags);
  // The ETag of the object now at `key` (HeadObject): where an answer lacks one (Ceph RGW 16
  // answers CompleteMultipartUpload with an empty <ETag>).
  [[nodiscard]] std::string etag(const std::string& key);
  // Best effort, for cleanup after a failed upload: never throws.
  void abort_multipart(const std::string& key, const std::string& upload_id) noexcept;
  void remove(const std::string& key);

  // "s3://bucket/key".
  [[nodiscard]] std::string name(const std::string& key) const;
  [[nodiscard]] const std::string& endpoint() const { return config_.endpoint; }

 private:
  HttpResponse send(Method method, const std::string& key, const std::string& query, RequestBody body,
                    const std::string& sha256_hex, std::vector<std::string> headers, const std::string& what);

  S3Config config_;
  std::string bucket_;
  HttpClient http_;
};

// S3's URI encoding (SigV4): every byte but A-Z a-z 0-9 - . _ ~ as %XX; '/' kept when asked.
[[nodiscard]] std::string s3_uri_encode(std::string_view text, bool keep_slash);

// The entity-decoded texts of the elements named `tag` in an S3 XML answer, in order (only the
// flat, namespace-free elements S3 answers hold: <Key>, <ETag>, <Code>, …).
[[nodiscard]] std::vector<std::string> s3_xml_texts(std::string_view xml, std::string_view tag);

}  // namespace podplane::net
