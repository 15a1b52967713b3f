# Cross-compiles podplane for linux-arm64 on an amd64 Debian host (scripts/package --arch arm64,
# docs/packaging.md): Debian's cross toolchain (g++-aarch64-linux-gnu) against the arm64
# libraries that scripts/setup installs beside the host's (dpkg multiarch).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# librnp0 and libbotan-2-19 cannot be installed for two architectures at once (they are not
# Multi-Arch: same), so scripts/setup unpacks their arm64 builds into a folder of their own,
# with a librnp.pc that points there.
if(DEFINED ENV{PODPLANE_CROSS_EXTRA})
  set(podplane_cross_extra "$ENV{PODPLANE_CROSS_EXTRA}")
else()
  set(podplane_cross_extra /opt/podplane-cross/arm64)
endif()
set(ENV{PKG_CONFIG_LIBDIR} "${podplane_cross_extra}/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# librnp.so.0 names libbotan-2.so.19 and libtspi.so.1, which the linker must find there too.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${podplane_cross_extra}/usr/lib/aarch64-linux-gnu")
