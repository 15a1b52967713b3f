#include "mirror/s3_export.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/scratch_dir.hpp"
#include "base/unique_fd.hpp"
#include "mirror/export_plan.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kScheme = "s3://";
constexpr std::uint64_t kMinimumPartSize = std::uint64_t{5} << 20;

// S3's own bucket names are 3 to 63 of [a-z0-9.-]; older RGW and MinIO buckets may also hold
// capitals and '_'. Nothing that could leave the path segment.
bool is_bucket_name(std::string_view name) {
  if (name.size() < 3 || name.size() > 255) return false;
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') return false;
  return name != "..";
}

// A part of a multipart upload, with the digests taken while the file was read.
struct Part {
  std::uint64_t offset = 0, length = 0;
  std::string md5_raw, md5_hex, sha256_hex;
};

// What a file's upload needs to know before it starts: its size, the ETag S3 will give it, the
// payload hash of a single PUT, and its parts when it goes up in parts.
struct Prepared {
  std::uint64_t size = 0;
  std::string etag;
  std::string sha256_hex;
  std::vector<Part> parts;  // empty: one PUT
  fs::path file;            // the body's file; empty: ExportFile::bytes
};

// The ETag of a multipart upload: the MD5 of the parts' binary MD5s, "-" and the part count.
std::string multipart_etag(const std::vector<Part>& parts) {
  Hasher md5(DigestAlgorithm::md5);
  for (const auto& part : parts) md5.update(part.md5_raw);
  return md5.finish_hex() + "-" + std::to_string(parts.size());
}

// Reads `file` once: its sha256, its MD5, and those of each part when it is large.
Prepared prepare_file(const fs::path& file, std::uint64_t size, const S3ExportOptions& options) {
  Prepared prepared;
  prepared.file = file;
  prepared.size = size;
  UniqueFd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw Error("cannot read " + file.string() + ": " + std::strerror(errno));
  const bool in_parts = size > options.part_size;
  Hasher whole_sha256, whole_md5(DigestAlgorithm::md5);
  std::optional<Hasher> part_sha256, part_md5;
  Part part;
  std::vector<char> buffer(1 << 20);
  std::uint64_t done = 0;
  auto finish_part = [&] {
    part.md5_raw = part_md5->finish_raw();
    part.md5_hex = to_hex(part.md5_raw);
    part.sha256_hex = part_sha256->finish_hex();
    prepared.parts.push_back(part);
    part_md5.reset();
    part_sha256.reset();
  };
  while (done < size) {
    if (in_parts && !part_md5) {
      part = Part{done, std::min(options.part_size, size - done), {}, {}, {}};
      part_md5.emplace(DigestAlgorithm::md5);
      part_sha256.emplace();
    }
    std::uint64_t want = buffer.size();
    if (in_parts) want = std::min(want, part.offset + part.length - done);
    want = std::min(want, size - done);
    const ssize_t got = ::read(in.get(), buffer.data(), static_cast<std::size_t>(want));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw Error("cannot read " + file.string() + ": " + (got < 0 ? std::strerror(errno) : "it is shorter than " + std::to_string(size) + " bytes"));
    whole_sha256.update(buffer.data(), static_cast<std::size_t>(got));
    whole_md5.update(buffer.data(), static_cast<std::size_t>(got));
    if (in_parts) {
      part_sha256->update(buffer.data(), static_cast<std::size_t>(got));
      part_md5->update(buffer.data(), static_cast<std::size_t>(got));
    }
    done += static_cast<std::uint64_t>(got);
    if (in_parts && done == part.offset + part.length) finish_part();
  }
  prepared.sha256_hex = whole_sha256.finish_hex();
  prepared.etag = in_parts ? multipart_etag(prepared.parts) : whole_md5.finish_hex();
  return prepared;
}

// The digests of one planned file. A store object is checked against its digest with the same
// read; a module package is built into the scratch dir first (it is read twice when uploaded).
Prepared prepare(const ExportFile& planned, ObjectChecks& checks, const fs::path& scratch, const S3ExportOptions& options) {
  switch (planned.source) {
    case FileSource::bytes: {
      Prepared prepared;
      prepared.size = planned.bytes.size();
      prepared.sha256_hex = sha256_hex(planned.bytes);
      Hasher md5(DigestAlgorithm::md5);
      md5.update(planned.bytes);
      prepared.etag = md5.finish_hex();
      return prepared;
    }
    case FileSource::store_object: {
      auto size = static_cast<std::uint64_t>(planned.size);
      std::error_code ec;
      const auto actual = fs::file_size(planned.object, ec);
      if (ec || actual != size) {
        checks.check("/" + planned.path, planned.object, planned.sha256, planned.size);  // says what is wrong
        throw Error("not exporting /" + planned.path + ": " + planned.object.string() + " changed while being read");
      }
      auto prepared = prepare_file(planned.object, size, options);
      if (prepared.sha256_hex != planned.sha256)
        throw Error(mismatch_message("not exporting /" + planned.path + ": the store object " + planned.object.string() +
                                         " does not hold the bytes it is published under",
                                     "sha256:" + planned.sha256, "sha256:" + prepared.sha256_hex));
      checks.record(planned.sha256);
      return prepared;
    }
    case FileSource::generated_file:
      return prepare_file(planned.object, static_cast<std::uint64_t>(planned.size), options);
    case FileSource::module_package: {
      checks.check_package("/" + planned.path, *planned.module);
      const fs::path file = scratch / "package.tar.gz";
      UniqueFd out(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (!out) throw Error("cannot create " + file.string() + ": " + std::strerror(errno));
      std::uint64_t size = 0;
      write_module_tar_gz(*planned.module, [&](const char* data, std::size_t n) {
        write_all(out.get(), std::string_view(data, n), file);
        size += n;
      });
      out.close_checked(file.string());
      return prepare_file(file, size, options);
    }
  }
  throw Error("unknown file source");
}

void expect_etag(const net::S3Bucket& bucket, const std::string& key, const std::string& what, const std::string& expected,
                 const std::string& got) {
  if (got == expected) return;
  throw Error(mismatch_message("the ETag " + bucket.endpoint() + " gave " + what + " of " + bucket.name(key) +
                                   " is not the MD5 of the bytes sent: they changed on the way, or the bucket encrypts "
                                   "with SSE-KMS or SSE-C, whose ETags are not MD5s (an incremental export needs them)",
                               expected, got.empty() ? "(none)" : got));
}

// One multipart upload, aborted when any part fails so that no orphan parts stay behind.
void upload_in_parts(net::S3Bucket& bucket, const std::string& key, const std::string& content_type, const Prepared& prepared) {
  const std::string upload_id = bucket.start_multipart(key, content_type);
  try {
    std::vector<std::string> etags;
    for (std::size_t i = 0; i < prepared.parts.size(); ++i) {
      const auto& part = prepared.parts[i];
      const int number = static_cast<int>(i + 1);
      auto etag = bucket.put_part(key, upload_id, number, net::RequestBody::file_range(prepared.file, part.offset, part.length),
                                  part.sha256_hex);
      expect_etag(bucket, key, "part " + std::to_string(number), part.md5_hex, etag);
      etags.push_back(etag);
    }
    auto etag = bucket.complete_multipart(key, upload_id, etags);
    if (etag.empty()) etag = bucket.etag(key);
    expect_etag(bucket, key, "the whole upload", prepared.etag, etag);
  } catch (...) {
    bucket.abort_multipart(key, upload_id);
    throw;
  }
}

void upload(net::S3Bucket& bucket, const std::string& key, const ExportFile& planned, const Prepared& prepared) {
  if (!prepared.parts.empty()) {
    upload_in_parts(bucket, key, planned.content_type, prepared);
    return;
  }
  auto body = prepared.file.empty() ? net::RequestBody::bytes(planned.bytes)
                                    : net::RequestBody::file_range(prepared.file, 0, prepared.size);
  expect_etag(bucket, key, "the upload", prepared.etag, bucket.put(key, body, prepared.sha256_hex, planned.content_type));
}

// The listing of the prefix by key; refused unless the prefix is empty or an earlier export.
std::map<std::string, net::S3Object> listed_export(net::S3Bucket& bucket, const S3Target& target) {
  std::map<std::string, net::S3Object> listed;
  for (auto& object : bucket.list(target.prefix)) listed.emplace(object.key, std::move(object));
  if (!listed.empty() && !listed.contains(target.prefix + kExportMarker))
    throw Error("refusing to write to " + bucket.name(target.prefix) + " at " + bucket.endpoint() + ": it holds " +
                std::to_string(listed.size()) + " objects and is not an earlier podplane export (no " +
                bucket.name(target.prefix + kExportMarker) + ")");
  return listed;
}

}  // namespace

bool is_s3_target(std::string_view target) { return target.starts_with(kScheme); }

// Not base/url.hpp's split_url: s3://BUCKET/PREFIX is the AWS CLI's object address, not an RFC
// 3986 URL. Its bucket is a name, never a host[:port] or a login, and the rest is a key prefix
// of segments checked below, with no query, fragment or percent-escapes; the endpoint the bucket
// is reached at is a URL of its own (net/s3_client.hpp, AWS_ENDPOINT_URL).
S3Target parse_s3_target(std::string_view text) {
  auto refuse = [&](const std::string& why) {
    return UsageError(mismatch_message("not an object storage target: " + why, "s3://BUCKET[/PREFIX]", std::string(text)));
  };
  if (!is_s3_target(text)) throw refuse("it does not start with s3://");
  std::string_view rest = text.substr(kScheme.size());
  S3Target target;
  const auto slash = rest.find('/');
  target.bucket = std::string(rest.substr(0, slash));
  if (!is_bucket_name(target.bucket)) throw refuse("the bucket name must be 3 or more of A-Z a-z 0-9 . - _");
  std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  while (prefix.ends_with('/')) prefix.remove_suffix(1);
  for (std::size_t start = 0; start < prefix.size();) {
    const auto end = std::min(prefix.find('/', start), prefix.size());
    if (!is_safe_segment(prefix.substr(start, end - start)))
      throw refuse("each segment of the prefix must be 1 to 255 of A-Z a-z 0-9 . _ + ~ @ = , - and not . or ..");
    start = end + 1;
  }
  if (!prefix.empty()) target.prefix = std::string(prefix) + "/";
  return target;
}

S3ExportStats export_to_s3(const fs::path& deps_root, const S3Target& target, net::S3Bucket& bucket,
                           const S3ExportOptions& options) {
  if (options.part_size < kMinimumPartSize)
    throw UsageError("the part size of a multipart upload must be at least 5 MiB (S3's minimum)");
  auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
  auto plan = plan_export(store, options.site);
  for (const auto& reason : plan.skipped) std::cerr << "podplane: mirror export: skipped " << reason << "\n";
  auto listed = listed_export(bucket, target);

  S3ExportStats stats;
  stats.skipped_rows = plan.skipped.size();
  stats.images = plan.images;
  stats.git_repositories = plan.git_repositories;
  ScratchDir scratch("podplane-s3-export-");
  ObjectChecks checks;
  for (const auto& planned : plan.files) {
    const std::string key = target.prefix + planned.path;
    if (planned.stage != PublishStage::marker) ++stats.files;
    const auto prepared = prepare(planned, checks, scratch.path(), options);
    auto found = listed.find(key);
    const bool same = found != listed.end() && found->second.size == prepared.size && found->second.etag == prepared.etag;
    if (found != listed.end()) listed.erase(found);
    if (same) {
      ++stats.unchanged;
      continue;
    }
    upload(bucket, key, planned, prepared);
    ++stats.uploaded;
    stats.bytes_uploaded += prepared.size;
  }
  // Last: what is left was named only by documents that have just been replaced.
  for (const auto& [key, object] : listed) {
    bucket.remove(key);
    ++stats.removed;
  }
  return stats;
}

}  // namespace podplane::mirror
