#!/usr/bin/env bash
# cross-arm64.sh -- cross-build the project for aarch64 Linux into build/arm64 and run ctest under qemu-user.
#
# The runtime does pointer/alignment/page-size tricks that must hold on a
# 64-bit ARM (weaker memory model, other ABI) and not only on the x86_64 CI
# host. Debian's GNU cross compiler builds it and qemu-user runs the test
# binaries (via CMAKE_CROSSCOMPILING_EMULATOR in the toolchain file), so no
# ARM machine is needed. Prerequisites: ci/install-deps.sh base cross-arm64.
# Usage: ci/cross-arm64.sh [extra cmake configure args...]
#   e.g. ci/cross-arm64.sh -G Ninja -DCMAKE_BUILD_TYPE=Debug
# Under qemu tests run several times slower: give them generous timeouts.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require cross-arm64.sh "base cross-arm64" aarch64-linux-gnu-gcc qemu-aarch64 cmake ctest

cmake -S . -B build/arm64 \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" "$@"
cmake --build build/arm64 --parallel "$jobs"
ctest --test-dir build/arm64 --output-on-failure --parallel "$jobs"
