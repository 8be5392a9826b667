#!/usr/bin/env bash
# cross-macos.sh -- cross-build the project for macOS arm64 and x86_64 with zig cc (build/macos-*), no tests.
#
# The runtime uses Mach APIs (task_info phys_footprint, Mach-O symbol
# naming in assembly) on macOS; this catches macOS-only compile and link
# errors on the Linux CI host, where no Apple SDK or macOS runner exists.
# Zig 0.11 (from npm, see ci/zig.sh) provides the macOS headers, libSystem
# stubs and a Mach-O linker. The binaries cannot run here, so the script only
# builds them and then uses file(1) to prove they are Mach-O of the right
# architecture. Prerequisites: ci/install-deps.sh base cross-macos.
# Usage: ci/cross-macos.sh [extra cmake configure args...]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require cross-macos.sh "base cross-macos" cmake file

zig="$("$root/ci/zig.sh")"
echo "cross-macos.sh: using $zig ($("$zig" version))"

status=0

for arch in arm64 x86_64; do
    build="build/macos-$arch"
    cmake -S . -B "$build" \
        -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/zig-macos-$arch.cmake" "$@"
    cmake --build "$build" --parallel "$jobs"

    # Every non-script file with an exec bit outside CMakeFiles/ is a built
    # program or shared library; file(1) must call each Mach-O of this arch,
    # and at least one must be an executable.
    found=0
    while IFS= read -r -d '' exe; do
        desc="$(file -b "$exe")"
        case "$desc" in
            "Mach-O 64-bit $arch executable"*)
                found=$((found + 1))
                echo "cross-macos.sh: OK   ${exe#./}: $desc"
                ;;
            "Mach-O 64-bit $arch dynamically linked shared library"*|"Mach-O 64-bit $arch bundle"*)
                echo "cross-macos.sh: OK   ${exe#./}: $desc"
                ;;
            *script*|*text*) ;;
            *)
                echo "cross-macos.sh: FAIL ${exe#./}: $desc (want Mach-O 64-bit $arch)" >&2
                status=1
                ;;
        esac
    done < <(find "./$build" -path '*/CMakeFiles' -prune -o -type f -perm -u+x -print0)
    if [[ "$found" -eq 0 ]]; then
        echo "cross-macos.sh: FAIL no executables found in $build" >&2
        status=1
    else
        echo "cross-macos.sh: $build: $found Mach-O $arch executable(s)"
    fi
done
exit "$status"
