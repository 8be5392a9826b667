# zig-macos-rules.cmake -- C rule overrides for the zig-macos-*.cmake toolchain files.
#
# Included through CMAKE_USER_MAKE_RULES_OVERRIDE_C, i.e. after CMake's
# Darwin platform file, which is the only place this can be fixed: that file
# enables rpath support only when the *host's* `sw_vers` reports macOS >= 10.5,
# and on a Linux host there is no sw_vers. Without this, shared libraries get
# an absolute build-tree install_name and executables no -rpath; with it,
# MACOSX_RPATH yields @rpath/lib*.dylib as in a native macOS build.
# zig's Mach-O linker accepts -rpath.
set(CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG "-Wl,-rpath,")
