#pragma once
// A real S3 for tests: Ceph's radosgw (Debian's ceph 16 packages, installed by scripts/setup)
// on a one-node cluster on loopback: one ceph-mon, one ceph-osd on memstore (objects in RAM, no
// disk to prepare), radosgw's beast frontend on an ephemeral port, everything (config, keys,
// logs, sockets) in the test's temp dir and every daemon killed with the fixture. Starts in
// about 12 s (radosgw creates its pools on the first start); an S3 user with known keys. The
// bucket calls go through curl's own SigV4 (`curl --aws-sigv4`), not through podplane's client.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/background.hpp"

namespace podplane::test {

// One object of a bucket listing, as the gateway reports it.
struct ListedObject {
  std::string key, etag, last_modified;
  std::uint64_t size = 0;
};

class RadosGateway {
 public:
  // The Debian binaries this needs, or "" when all are there ("no /usr/bin/radosgw: …").
  static std::string missing_programs();

  // Throws std::runtime_error with the daemons' logs when the cluster is not up within 60 s.
  explicit RadosGateway(const std::filesystem::path& dir);
  ~RadosGateway();
  RadosGateway(const RadosGateway&) = delete;
  RadosGateway& operator=(const RadosGateway&) = delete;

  const std::string& endpoint() const { return endpoint_; }  // http://127.0.0.1:PORT
  int port() const { return port_; }
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  // AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION for a podplane run.
  std::map<std::string, std::string> aws_env() const;

  void create_bucket(const std::string& bucket) const;
  // A bucket policy letting anyone GET the objects under `prefix` (what nginx in front needs).
  void allow_public_read(const std::string& bucket, const std::string& prefix) const;
  // PUT an object as another tool would (for "not an earlier export" tests).
  void put_object(const std::string& bucket, const std::string& key, const std::string& bytes) const;
  // Every object of the bucket under `prefix`, by key (ListObjectsV2 through curl).
  std::map<std::string, ListedObject> list(const std::string& bucket, const std::string& prefix = "") const;
  // The object's bytes and Content-Type, fetched with the user's signature.
  std::pair<std::string, std::string> get(const std::string& bucket, const std::string& key) const;
  // The tail of every daemon log, for failure messages.
  std::string logs() const;

 private:
  std::string curl(const std::vector<std::string>& args, const std::string& body_sha256) const;

  std::filesystem::path dir_;
  std::string endpoint_;
  int port_ = 0;
  std::string access_key_ = "podplane-test";
  std::string secret_key_;
  std::vector<std::unique_ptr<Background>> daemons_;  // mon, osd, radosgw: stopped in reverse
};

// nginx as docs/nginx/podplane-mirror-s3.conf ships it, in front of `prefix` (ending in '/')
// of a bucket of the gateway, over TLS with a test certificate; only the file's site values (the
// listen port, the certificate pair, the bucket URL) are replaced, as its own comment says.
// Throws std::runtime_error when the file lacks one of them or nginx does not start.
class NginxInFront {
 public:
  NginxInFront(const RadosGateway& gateway, const std::string& bucket, const std::string& prefix,
               const std::filesystem::path& dir);
  const std::string& url() const { return url_; }  // https://127.0.0.1:PORT, no trailing slash
  std::filesystem::path ca_file() const { return dir_ / "tls" / "cert.pem"; }
  std::filesystem::path access_log() const { return dir_ / "access.log"; }
  std::filesystem::path error_log() const { return dir_ / "error.log"; }

 private:
  std::filesystem::path dir_;
  std::string url_;
  std::unique_ptr<Background> nginx_;
};

}  // namespace podplane::test
