#!/usr/bin/env bash
# abi.sh -- the shared library's ABI against the one recorded for its
# release (abi/libgiveback.abi), with libabigail (abidw, abidiff).
#
#   ci/abi.sh check [BUILD_DIR]    fails on any change of the ABI: a
#                                  function's or a public struct's
#                                  layout, a symbol gone or added
#   ci/abi.sh update [BUILD_DIR]   records the build's ABI as the new
#                                  baseline; refuses an incompatible
#                                  change under an unchanged SONAME
#
# BUILD_DIR is a configured and built tree (default build/release, the
# release stage's). The rule (giveback.h, "The ABI"): public structs only
# grow at their end and are passed with their size; anything else that
# breaks an older binary needs a new SONAME (the minor version while the
# major is 0). A change that keeps older binaries working (a function or
# a field at a struct's end added) is still a change: it is recorded with
# `update` in the same commit, so that the next check compares against it.
# Prerequisites: ci/install-deps.sh abi (abigail-tools). Linux only: the
# baseline is an ELF corpus.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mode="${1:-check}"
build="${2:-build/release}"
baseline=abi/libgiveback.abi

case "$mode" in
    check | update) ;;
    *) echo "usage: ci/abi.sh check|update [BUILD_DIR]" >&2; exit 2 ;;
esac
for tool in abidw abidiff; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "abi.sh: $tool not found; run: ci/install-deps.sh abi" >&2
        exit 2
    fi
done

# The shared library the link name points to now (a build tree may still
# hold the files of an earlier version).
lib="$(readlink -f "$build/libgiveback.so" 2>/dev/null || true)"
if [[ -z "$lib" || ! -f "$lib" ]]; then
    echo "abi.sh: no libgiveback.so in $build: build the release preset first" >&2
    exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Paths and line numbers are left out, so the corpus names the ABI alone.
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir runtime/include \
    --drop-private-types --out-file "$tmp/new.abi" "$lib"

soname_of() {   # soname_of CORPUS: the SONAME the corpus records
    sed -n "s/.*<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p" "$1" | head -n 1
}
new_soname="$(soname_of "$tmp/new.abi")"

if [[ ! -f "$baseline" ]]; then
    if [[ "$mode" == update ]]; then
        mkdir -p abi
        cp "$tmp/new.abi" "$baseline"
        echo "abi.sh: recorded the ABI of $new_soname in $baseline"
        exit 0
    fi
    echo "abi.sh: no baseline ($baseline): run ci/abi.sh update and commit it" >&2
    exit 1
fi
old_soname="$(soname_of "$baseline")"

rc=0
abidiff "$baseline" "$tmp/new.abi" >"$tmp/report" 2>&1 || rc=$?
# abidiff's status is a bit field: 1 an error, 2 a usage error, 4 the ABI
# changed, 8 the change is incompatible (a symbol removed).
if ((rc & 3)); then
    cat "$tmp/report" >&2
    echo "abi.sh: abidiff failed (status $rc)" >&2
    exit 2
fi

if [[ "$mode" == update ]]; then
    if ((rc & 8)) && [[ "$new_soname" == "$old_soname" ]]; then
        cat "$tmp/report"
        echo "abi.sh: an incompatible change under the same SONAME ($old_soname): raise the version" \
            "(the minor one while the major is 0) in CMakeLists.txt first" >&2
        exit 1
    fi
    cp "$tmp/new.abi" "$baseline"
    echo "abi.sh: recorded the ABI of $new_soname in $baseline (was $old_soname)"
    exit 0
fi

if ((rc == 0)) && [[ "$new_soname" == "$old_soname" ]]; then
    echo "abi.sh: the ABI of $new_soname is the one recorded in $baseline"
    exit 0
fi
cat "$tmp/report"
if [[ "$new_soname" != "$old_soname" ]]; then
    echo "abi.sh: the SONAME is now $new_soname (recorded: $old_soname): if this is a release" \
        "with a new ABI, record it with ci/abi.sh update" >&2
elif ((rc & 8)); then
    echo "abi.sh: an incompatible change of the ABI under the same SONAME ($old_soname):" \
        "older binaries would break; keep the ABI, or raise the version and record it" >&2
else
    echo "abi.sh: the ABI of $old_soname changed: a struct may only grow at its end (passed with" \
        "its size), a function only be added; if the change is such, record it with ci/abi.sh update" >&2
fi
exit 1
