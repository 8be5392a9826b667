# zig-macos-x86_64.cmake -- cross-compile for macOS x86_64 (Mach-O) on Linux with `zig cc -target x86_64-macos`.
#
# Use: cmake -S . -B build/macos-x86_64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/zig-macos-x86_64.cmake
# (ci/cross-macos.sh does this). Zig 0.11 comes from npm into .tools/ (ci/zig.sh);
# it bundles the macOS libc headers (incl. <mach/mach.h>), libSystem stubs
# and a Mach-O linker, so no Apple SDK is needed. Nothing built here can run
# on the Linux host: this build proves compiling and linking only.
#
# Quirks worked around here (verified with CMake 3.25 and zig 0.11.0):
#  * CMake wants one compiler path, so CMAKE_C_COMPILER is a wrapper script
#    (ci/zig-cc-x86_64-macos) that execs `zig cc -target x86_64-macos`. The
#    target lives in the wrapper, not in CMAKE_C_FLAGS, so compiler-id
#    detection, try_compile, check_* and a caller's -DCMAKE_C_FLAGS keep it.
#  * ci/zig-cc drops -Wl,-v: CMake passes it while detecting the compiler ABI
#    and zig fails with "unsupported linker arg: -v"; the detection then
#    fails quietly and CMAKE_SIZEOF_VOID_P stays empty.
#  * CMAKE_AR / CMAKE_RANLIB are `zig ar` / `zig ranlib` (wrappers, FORCEd):
#    with GNU ar's archives zig's linker fails ("MalformedArchive").
#  * CMAKE_OSX_SYSROOT / CMAKE_OSX_ARCHITECTURES are forced empty: -isysroot
#    would hide zig's bundled headers, -arch is Apple clang's; the target
#    sets both CPU and OS.
#  * CMake's Darwin platform file turns rpath support off on a Linux host
#    (no sw_vers); zig-macos-rules.cmake turns it back on, so shared libraries
#    get @rpath/lib*.dylib install names as on a real Mac.
#  * The link flags CMake's Darwin platform adds (-Wl,-headerpad_max_install_names,
#    -Wl,-search_paths_first, -Wl,-rpath, -dynamiclib, -install_name,
#    -current_version) are all accepted by zig.
#  * find_library/find_path/find_package/pkg-config are re-rooted to a
#    directory that does not exist (there is no macOS sysroot on disk), so
#    they can never hand out the Linux host's libraries.
# For the project's CMakeLists.txt:
#  * .S files need language ASM (project(... C ASM)); the ASM compiler is the
#    same wrapper (clang's integrated assembler, run through cpp). Apple
#    symbols carry a leading underscore (#ifdef __APPLE__).
#  * zig rejects or cannot link: -flto ("LTO is not yet supported with the
#    Mach-O object format"), -fsanitize=address, --coverage and
#    -fprofile-instr-generate (no runtimes), -march=native/-mcpu=<host>,
#    -Wl,-map. It silently accepts GNU-only -Wl,--gc-sections, -Wl,--as-needed
#    and -Wl,-z,*. No extra warnings appeared with -Wall -Wextra -Werror.
#  * With no -O flag (CMake's Debug) zig cc builds with UBSan in trap mode,
#    unlike Apple clang; pass -fno-sanitize=undefined to match it.
#  * Binaries are stamped minos 11.7 (zig's default macOS floor).
#  * try_run / check_*_runs cannot work (no emulator); cmake --install would
#    need install_name_tool to rewrite rpaths, which does not exist here.

set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_VERSION 20.0)   # Darwin 20 = macOS 11 (else: the Linux host's uname -r)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

get_filename_component(_giveback_ci "${CMAKE_CURRENT_LIST_DIR}/../../ci" ABSOLUTE)
set(CMAKE_C_COMPILER   "${_giveback_ci}/zig-cc-x86_64-macos")
set(CMAKE_ASM_COMPILER "${_giveback_ci}/zig-cc-x86_64-macos")
set(CMAKE_AR           "${_giveback_ci}/zig-ar"     CACHE FILEPATH "zig ar" FORCE)
set(CMAKE_RANLIB       "${_giveback_ci}/zig-ranlib" CACHE FILEPATH "zig ranlib" FORCE)
set(CMAKE_USER_MAKE_RULES_OVERRIDE_C "${CMAKE_CURRENT_LIST_DIR}/zig-macos-rules.cmake")

set(CMAKE_OSX_SYSROOT "" CACHE PATH "unused: zig bundles the macOS headers" FORCE)
set(CMAKE_OSX_ARCHITECTURES "" CACHE STRING "unused: set by zig -target" FORCE)

# No macOS sysroot exists on disk: re-root searches into a directory that
# does not exist, so optional dependencies are simply not found for macOS.
set(CMAKE_FIND_ROOT_PATH "${CMAKE_CURRENT_LIST_DIR}/no-macos-sysroot")
set(ENV{PKG_CONFIG_LIBDIR} "${CMAKE_CURRENT_LIST_DIR}/no-macos-sysroot")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
