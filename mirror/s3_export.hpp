#pragma once
// `podplane mirror export s3://BUCKET/PREFIX`: the export plan (mirror/export_plan.hpp) written
// to S3-compatible object storage, so a bucket holds exactly the files `mirror export DIR` writes,
// each with its Content-Type. Incremental: the prefix is listed first, and a file whose key has
// the same size and ETag (the MD5 of its bytes, or of its parts for a multipart upload with our
// part size) is not uploaded again. Stages go up in order (mirror/export_plan.hpp PublishStage):
// every document after the files it names; keys the plan no longer holds are removed last.
// Only an empty prefix or an earlier export (the marker) is written to. Every store object is
// hashed on the way out, as for a directory. Errors: podplane::Error naming the object.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "mirror/serve_site.hpp"
#include "net/s3_client.hpp"

namespace podplane::mirror {

struct S3Target {
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
};

// Whether `target` names object storage ("s3://…").
[[nodiscard]] bool is_s3_target(std::string_view target);
// "s3://BUCKET[/PREFIX]". UsageError for anything else (no bucket, a bad bucket name, "..").
[[nodiscard]] S3Target parse_s3_target(std::string_view target);

struct S3ExportOptions {
  SiteOptions site;
  // Files larger than this go up as multipart uploads of parts this large (the last shorter),
  // streamed from the store. S3 wants parts of 5 MiB at least (but the last).
  std::uint64_t part_size = std::uint64_t{16} << 20;
};

struct S3ExportStats {
  std::size_t files = 0;           // files of the export (without the marker)
  std::size_t uploaded = 0;        // files put, the marker included
  std::size_t unchanged = 0;       // files already there with the same size and ETag
  std::size_t removed = 0;         // keys under the prefix the export no longer holds
  std::uint64_t bytes_uploaded = 0;
  std::size_t skipped_rows = 0;    // index rows the site left out (see MirrorSite::skipped)
  std::size_t images = 0;          // OCI image layouts written under registry/
  std::size_t git_repositories = 0;  // bare repositories written under git/
};

[[nodiscard]] S3ExportStats export_to_s3(const std::filesystem::path& deps_root, const S3Target& target,
                                         net::S3Bucket& bucket, const S3ExportOptions& options = {});

}  // namespace podplane::mirror
