# aarch64-linux-gnu.cmake -- cross-compile for aarch64 Linux with Debian's GNU cross toolchain; tests run under qemu-user.
#
# Use: cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# (ci/cross-arm64.sh does this). Needs gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross and qemu-user (ci/install-deps.sh cross-arm64).
# CMAKE_CROSSCOMPILING_EMULATOR makes ctest (and try_run, and add_test
# commands naming an executable target) run aarch64 binaries through
# qemu-aarch64, with -L pointing it at the cross libc's dynamic loader.
#
# For the project's CMakeLists.txt (verified with CMake 3.25, GCC 12, qemu 7.2):
#  * .S files need language ASM; the cross gcc assembles them (__aarch64__,
#    __ELF__ defined; add a .note.GNU-stack section).
#  * No -march=native / -mcpu=native: they describe the x86_64 host.
#  * Under qemu-user, RSS and address-space limits (RLIMIT_AS) are the
#    emulator's, and tests run several times slower: gate such tests on
#    CMAKE_CROSSCOMPILING_EMULATOR and give generous timeouts.
#  * Only the cross libc is in the sysroot, so optional libraries (jemalloc,
#    mimalloc, ...) are not found: keep them optional.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER   aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)   # only used if a project enables CXX (g++-aarch64-linux-gnu)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)

set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;/usr/aarch64-linux-gnu")

# Headers/libraries/packages only from the cross sysroot; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must not hand out the host's x86_64 .pc files.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/aarch64-linux-gnu/lib/pkgconfig:/usr/share/pkgconfig")
