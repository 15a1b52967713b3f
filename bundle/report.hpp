#pragma once
// The transfer report of a bundle, for the person who approves what crosses the air gap: a
// CycloneDX 1.6 JSON document (NAME.cdx.json) with one component per row the bundle carries
// and a self-contained HTML page of the same (NAME.report.html: escaped, no script, no
// external resource). Both are made from the manifests' rows alone, so the same bundle gives
// the same bytes, and neither is signed (docs/threat-model.md). Errors are podplane::Error.
#include <filesystem>
#include <string>

#include "bundle/contents.hpp"

namespace podplane::bundle {

struct ReportFiles {
  std::filesystem::path cyclonedx;  // NAME.cdx.json
  std::filesystem::path html;       // NAME.report.html
};
ReportFiles report_files(const std::filesystem::path& bundle);

std::string cyclonedx_json(const BundleContents& contents);
std::string report_html(const BundleContents& contents);

// Writes both beside the bundle, each durably (base/durable_write.hpp).
ReportFiles write_transfer_report(const std::filesystem::path& bundle, const BundleContents& contents);

}  // namespace podplane::bundle
