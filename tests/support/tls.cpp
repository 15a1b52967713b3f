#include "tests/support/tls.hpp"

#include <stdexcept>

#include "tests/support/test_support.hpp"

namespace podplane::test {

TestTls write_test_tls(const fs::path& dir, const TestTlsOptions& options) {
  fs::create_directories(dir);
  TestTls tls{dir / options.cert_file, dir / options.key_file};
  std::string alt_names;
  for (const auto& name : options.alt_names) alt_names += (alt_names.empty() ? "" : ",") + name;
  auto made = run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days",
                   std::to_string(options.days), "-subj", "/CN=" + options.common_name, "-addext",
                   "subjectAltName=" + alt_names, "-addext", "basicConstraints=critical,CA:TRUE", "-keyout",
                   tls.key.string(), "-out", tls.cert.string()});
  if (made.exit_code != 0) throw std::runtime_error("openssl req failed:\n" + made.err);
  if (options.key_readable_by_all) fs::permissions(tls.key, fs::perms::others_read, fs::perm_options::add);
  return tls;
}

}  // namespace podplane::test
