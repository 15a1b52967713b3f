# Finds every third-party dependency, failing with the Debian package to install.
find_package(PkgConfig QUIET)
if(NOT PkgConfig_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config (or run ./scripts/setup)")
endif()

# podplane_pkg(<imported target> <pkg-config module> <Debian package>)
function(podplane_pkg target module debian)
  pkg_check_modules(${target} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${debian} (or run ./scripts/setup)")
  endif()
endfunction()

# podplane_cmake_pkg(<package> <Debian package>)
macro(podplane_cmake_pkg package debian)
  find_package(${package} QUIET CONFIG)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "${package} not found: apt-get install ${debian} (or run ./scripts/setup)")
  endif()
endmacro()

podplane_pkg(CURL libcurl libcurl4-openssl-dev)
podplane_pkg(LIBARCHIVE libarchive libarchive-dev)
# The fast path of provider zips' h1: libzip hands out raw entries, ISA-L's igzip inflates them.
podplane_pkg(LIBZIP libzip libzip-dev)
podplane_pkg(ISAL libisal libisal-dev)
podplane_pkg(OPENSSL openssl libssl-dev)
podplane_pkg(SQLITE3 sqlite3 libsqlite3-dev)
podplane_pkg(RNP librnp librnp-dev)
podplane_pkg(HTTPLIB cpp-httplib libcpp-httplib-dev)
# The PKCS#11 header only (p11-kit's pkcs11.h): a token's module is loaded with dlopen
# (base/pkcs11.hpp), so nothing of p11-kit is linked.
podplane_pkg(P11KIT p11-kit-1 libp11-kit-dev)
podplane_cmake_pkg(nlohmann_json nlohmann-json3-dev)
podplane_cmake_pkg(CLI11 libcli11-dev)
find_package(Threads REQUIRED)

# libcurl must be the OpenSSL flavour: SSL_CERT_FILE and our TLS tests rely on it.
execute_process(COMMAND curl-config --ssl-backends OUTPUT_VARIABLE PODPLANE_CURL_SSL OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(PODPLANE_CURL_SSL AND NOT PODPLANE_CURL_SSL MATCHES "OpenSSL")
  message(FATAL_ERROR "libcurl uses ${PODPLANE_CURL_SSL}, not OpenSSL: apt-get install libcurl4-openssl-dev")
endif()

if(PODPLANE_BUILD_TESTS)
  find_package(GTest QUIET CONFIG)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "GoogleTest not found: apt-get install libgtest-dev libgmock-dev")
  endif()
endif()

# podplane_library(<name> USES <folders…> LINKS <targets…>): one static library per code folder,
# made of every .cpp in the folder (so parallel work adds files without touching this list).
# .sql files beside the sources are embedded by the folder's own CMakeLists when needed.
#
# The arrows between folders (docs/design.md §2, README "Layout") are enforced here: a library
# compiles against an include root of its own, <build>/include_roots/<name>/, holding a
# symbolic link to its own folder and to each folder named in USES, and nothing else. So
# `#include "net/http.hpp"` in cache/ fails to compile with "net/http.hpp: No such file
# or directory", and so does a header of an allowed folder that reaches further than the
# includer may (bundle/ including a cache/ header that includes lockfile/). The library exports
# no include path of ours, so a consumer never sees a folder through it; generated headers are
# on the include path of their owner alone. Tests, benchmarks, tools and cli/ see the whole
# tree (they use every layer). The layers.* tests (tests/layers/) prove the rule holds.
function(podplane_library name)
  cmake_parse_arguments(ARG "" "" "USES;LINKS" ${ARGN})
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  add_library(${name} STATIC ${sources})
  set(root ${PROJECT_BINARY_DIR}/include_roots/${name})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(used ${folder} ${ARG_USES})
    if(NOT IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${used})
      message(FATAL_ERROR "podplane_library(${name}): USES names '${used}', which is not a folder of ours")
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${used} ${root}/${used} SYMBOLIC)
  endforeach()
  set_target_properties(${name} PROPERTIES PODPLANE_INCLUDE_ROOT ${root})
  target_include_directories(${name} PRIVATE ${root})
  target_compile_definitions(${name} PUBLIC PODPLANE_VERSION="${PROJECT_VERSION}")
  target_link_libraries(${name} PUBLIC ${ARG_LINKS})
endfunction()
