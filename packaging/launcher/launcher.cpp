// bin/podplane of the self-contained tarball (docs/packaging.md): starts lib/podplane through
// the glibc loader carried in lib/, so that no library of the host is ever loaded. Linked
// -static, so it needs nothing of the host either.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// The glibc loader scripts/package carries in lib/, under its soname.
#if defined(__x86_64__)
constexpr const char* kLoaderName = "ld-linux-x86-64.so.2";
#elif defined(__aarch64__)
constexpr const char* kLoaderName = "ld-linux-aarch64.so.1";
#else
#error "scripts/package makes tarballs for x86-64 and aarch64 only"
#endif

// The CA bundle the carried libcurl and OpenSSL look for: they are Debian's builds.
constexpr const char* kDebianCaBundle = "/etc/ssl/certs/ca-certificates.crt";
// Where RHEL, CentOS, Rocky, Alma and Fedora keep the same bundle.
constexpr const char* kRhelCaBundle = "/etc/pki/tls/certs/ca-bundle.crt";

bool is_executable_file(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// The real path of this program: /proc/self/exe, or, where /proc is not mounted (a chroot, an
// early boot shell), argv[0] as the shell found it: a path when it holds a '/', else the first
// executable of that name on PATH.
std::string own_path(const char* argv0) {
  char buffer[PATH_MAX];
  ssize_t length = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (length > 0) return std::string(buffer, static_cast<std::size_t>(length));

  std::string found;
  if (std::strchr(argv0, '/') != nullptr) {
    found = argv0;
  } else if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (std::size_t start = 0; start <= dirs.size();) {
      std::size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string dir = dirs.substr(start, end - start);
      std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + argv0;
      if (is_executable_file(candidate)) {
        found = candidate;
        break;
      }
      start = end + 1;
    }
  }
  if (found.empty()) return {};
  // Resolves a symbolic link such as /usr/local/bin/podplane -> /opt/podplane/bin/podplane.
  if (::realpath(found.c_str(), buffer) == nullptr) return {};
  return buffer;
}

std::string parent(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// libcurl and OpenSSL in lib/ are Debian's, with Debian's CA bundle path compiled in; on RHEL
// and its relatives that file does not exist and every HTTPS transfer would fail with an
// unknown issuer. podplane hands SSL_CERT_FILE to libcurl (and git), and CURL_CA_BUNDLE is
// the curl spelling of the same, so both point at the RHEL bundle, unless the user chose one.
void use_host_ca_bundle() {
  if (std::getenv("SSL_CERT_FILE") != nullptr || std::getenv("CURL_CA_BUNDLE") != nullptr) return;
  if (::access(kDebianCaBundle, F_OK) == 0 || ::access(kRhelCaBundle, R_OK) != 0) return;
  ::setenv("SSL_CERT_FILE", kRhelCaBundle, 1);
  ::setenv("CURL_CA_BUNDLE", kRhelCaBundle, 1);
}

// The carried loader would load the host's LD_PRELOAD and LD_AUDIT libraries into podplane,
// built against another glibc than the carried one. They are moved aside for podplane alone,
// which puts them back for the host programs it runs (restore_host_loader_environment in
// base/child_process). /etc/ld.so.preload is read by every glibc loader, the carried one too,
// and cannot be turned off (docs/packaging.md).
void keep_host_libraries_out() {
  for (const char* name : {"LD_PRELOAD", "LD_AUDIT"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    ::setenv((std::string("PODPLANE_HOST_") + name).c_str(), value, 1);
    ::unsetenv(name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* argv0 = argc > 0 && argv[0] != nullptr ? argv[0] : "podplane";
  std::string self = own_path(argv0);
  if (self.empty()) {
    std::fprintf(stderr, "podplane: cannot find its own directory (no /proc/self/exe, and '%s' is not a path or on PATH)\n", argv0);
    return 127;
  }
  std::string lib = parent(parent(self)) + "/lib";
  std::string loader = lib + "/" + kLoaderName;
  std::string program = lib + "/podplane";
  use_host_ca_bundle();
  keep_host_libraries_out();

  // The loader's --argv0 (glibc 2.33 and later) keeps argv[0] as the user typed it, so help
  // and error messages name `podplane`, not the loader.
  std::vector<char*> args = {loader.data(), const_cast<char*>("--library-path"), lib.data(),
                             const_cast<char*>("--argv0"), const_cast<char*>(argv0), program.data()};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(loader.c_str(), args.data());
  std::fprintf(stderr, "podplane: cannot start %s: %s\n", loader.c_str(), std::strerror(errno));
  return 127;
}
