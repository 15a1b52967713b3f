#include "fetch/tool_sources.hpp"

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/url.hpp"
#include "net/download.hpp"

namespace podplane::fetch {

namespace fs = std::filesystem;

fs::path stored_tool_file(const cache::Store& store, const std::optional<cache::Artifact>& row, const std::string& filename,
                          const std::string& how_to_get_it) {
  if (!row || !store.has_object(row->digest))
    throw Error(filename + " is not in the store at " + store.root().string() + "; " + how_to_get_it);
  const fs::path object = store.object_path(row->digest);
  const std::string got = file_digest_hex(object);
  if (got != row->digest) throw Error(mismatch_message("hash mismatch for " + filename + " in the store", row->digest, got));
  return object;
}

std::string mirror_tool_dir(const std::string& base_url, std::string_view name, const std::string& version) {
  return without_trailing_slashes(base_url) + "/tools/" + std::string(name) + "/" + version + "/";
}

std::string fetch_tool_document(net::HttpClient& http, const std::string& dir, const std::string& name) {
  auto response = http.get(dir + name);
  if (response.status != 200) throw Error("cannot fetch " + name + " from " + net::redact_url(dir + name) + ": " + response.status_text());
  return response.body;
}

fs::path fetch_tool_file(const net::HttpOptions& http, const std::string& dir, const std::string& filename, const std::string& sha256,
                         const fs::path& scratch) {
  net::DownloadItem item;
  item.url = dir + filename;
  item.expected_sha256 = sha256;
  item.label = filename;
  net::DownloadOptions download;
  download.http = http;
  download.progress = net::Progress::quiet;
  net::Downloader downloader(download);
  const fs::path file = scratch / filename;
  downloader.fetch_to_file(item, file);  // checks expected_sha256 as the bytes stream: no second read
  return file;
}

}  // namespace podplane::fetch
