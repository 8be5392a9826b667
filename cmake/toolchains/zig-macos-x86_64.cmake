# zig-macos-x86_64.cmake -- cross-compile for macOS x86_64 (Mach-O) with `zig cc -target x86_64-macos`.
#
# Use: cmake -S . -B build/macos-x86_64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/zig-macos-x86_64.cmake
# (ci/cross-macos.sh does this). Zig 0.11 comes from npm into .tools/ (ci/zig.sh);
# Zig bundles the macOS libc headers (incl. <mach/mach.h>) and libSystem stubs,
# so no Apple SDK is needed. Nothing built here can run on the Linux host.
#
# Quirks worked around / to respect:
#  * CMake wants a single compiler path, so CMAKE_C_COMPILER is a wrapper
#    script (ci/zig-cc-x86_64-macos) that execs `zig cc -target x86_64-macos`.
#    The target lives in the wrapper, not in CMAKE_C_FLAGS, so compiler-id
#    detection, try_compile, check_* and a user's -DCMAKE_C_FLAGS all keep it.
#  * CMAKE_AR / CMAKE_RANLIB must be `zig ar` / `zig ranlib` (wrappers):
#    zig's Mach-O linker rejects archives made by GNU ar, and GNU ranlib
#    cannot index Mach-O objects.
#  * CMAKE_OSX_SYSROOT / CMAKE_OSX_DEPLOYMENT_TARGET / CMAKE_OSX_ARCHITECTURES
#    are left empty: -isysroot would hide zig's bundled headers and
#    -arch is a multi-arch Apple-clang flag; the target sets both arch and OS.
#  * CMake's Darwin platform adds -Wl,-headerpad_max_install_names and
#    -Wl,-search_paths_first to link lines; zig 0.11 accepts both.
#  * .S files must be built as language ASM (project(... C ASM)); the ASM
#    compiler is the same wrapper (clang's integrated assembler, with cpp).
#  * Static libraries only were verified; shared libraries would additionally
#    need install_name_tool, which does not exist here.

set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

get_filename_component(_giveback_ci "${CMAKE_CURRENT_LIST_DIR}/../../ci" ABSOLUTE)
set(CMAKE_C_COMPILER   "${_giveback_ci}/zig-cc-x86_64-macos")
set(CMAKE_ASM_COMPILER "${_giveback_ci}/zig-cc-x86_64-macos")
set(CMAKE_AR           "${_giveback_ci}/zig-ar"     CACHE FILEPATH "zig ar" FORCE)
set(CMAKE_RANLIB       "${_giveback_ci}/zig-ranlib" CACHE FILEPATH "zig ranlib" FORCE)

set(CMAKE_OSX_SYSROOT "" CACHE PATH "unused: zig bundles the macOS headers" FORCE)
set(CMAKE_OSX_ARCHITECTURES "" CACHE STRING "unused: set by zig -target" FORCE)

# There is no macOS sysroot on disk: re-root find_library/find_path/
# find_package into a directory that does not exist so they cannot pick up
# the host's Linux libraries (e.g. /usr/lib/x86_64-linux-gnu/libjemalloc.so)
# and fail later at link time; likewise keep pkg-config away from host .pc files.
# Optional dependencies must therefore be found-or-skipped for macOS.
set(CMAKE_FIND_ROOT_PATH "${CMAKE_CURRENT_LIST_DIR}/no-macos-sysroot")
set(ENV{PKG_CONFIG_LIBDIR} "${CMAKE_CURRENT_LIST_DIR}/no-macos-sysroot")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
