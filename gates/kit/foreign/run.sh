#!/usr/bin/env bash
# run.sh -- what the kit finds in three allocators that are not giveback:
# builds the glibc, mimalloc and jemalloc gate programs, clean and poisoned,
# and runs each allocator's matrix with gbgate matrix.
#
# Each allocator has a folder of its own (glibc/, mimalloc/, jemalloc/): its
# program, and the kit's three files, expected.tsv (the colours), gates.tsv
# (how the gate runs, the cap and why) and builds.tsv (the builds, and the
# define run.sh compiles each with). The programs are built here with the C
# compiler alone (CC, default cc, and pkg-config where the library ships a
# module), apart from giveback's CMake build, so the kit can gate these
# allocators in a tree that has no giveback at all.
#
# A matrix whose gate does not run on this machine (runs-on in its
# expected.tsv: glibc, or linux where CI installs mimalloc and jemalloc)
# is not built or run, and is reported as n/a: never as a pass.
#
# Usage: gates/kit/foreign/run.sh [--out DIR] [ALLOCATOR...]
#   --out DIR   where the programs (bin/), the matrices (one folder each,
#               as gbgate matrix writes them) and summary.md go; default
#               gbgate-foreign in the current folder
#   ALLOCATOR   glibc, mimalloc or jemalloc; default all three
# Exits 0 when every cell that ran has its expected colour and reason, 1
# when a cell does not or a program does not build, 2 on a usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kit="$(dirname "$here")"
gbgate="$kit/gbgate"
all=(glibc mimalloc jemalloc)

die() {
    echo "run.sh: $*" >&2
    exit 2
}

out="gbgate-foreign"
allocators=()
while (($#)); do
    case "$1" in
        --out) out="${2:?--out takes a folder}"; shift 2 ;;
        -h | --help) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        glibc | mimalloc | jemalloc) allocators+=("$1"); shift ;;
        *) die "unknown argument \"$1\" (allocators: ${all[*]})" ;;
    esac
done
((${#allocators[@]})) || allocators=("${all[@]}")

mkdir -p "$out/bin"
out="$(cd "$out" && pwd)"
bin="$out/bin"
platforms="$("$gbgate" platforms)"

# The project's usual flags: C11 and warnings, -Werror under CI (as
# ci/lib.sh does for the CMake builds), so a warning in a gate program
# fails CI as it would anywhere else in the tree.
cc="${CC:-cc}"
cflags=(-std=c11 -O2 -g -Wall -Wextra -D_GNU_SOURCE)
[[ -n "${CI:-}" ]] && cflags+=(-Werror)

# libs_of ALLOCATOR: its compile and link flags. Debian's libmimalloc-dev
# ships no pkg-config module (only a CMake package), so -lmimalloc is the
# fallback; glibc malloc needs nothing.
libs_of() {
    case "$1" in
        glibc) ;;
        mimalloc) pkg-config --cflags --libs mimalloc 2>/dev/null || echo "-lmimalloc" ;;
        jemalloc) pkg-config --cflags --libs jemalloc 2>/dev/null || echo "-ljemalloc" ;;
    esac
}

# runs_here EXPECTED: true when a gate row of EXPECTED runs on this
# machine; prints the platforms its rows name.
runs_here() {
    local runs p r on=1
    runs="$(awk -F'\t' '!/^#/ && NF && $1 != "gate" { print $2 }' "$1" | sort -u | tr '\n' ' ')"
    echo "${runs% }"
    for r in $runs; do
        on=1
        for p in $platforms; do [[ "$p" == "$r" ]] && on=0; done
        ((on == 0)) && return 0
    done
    return 1
}

# build ALLOCATOR: compiles every build of its builds.tsv into bin/.
build() {
    local a="$1" name cmd define path libs
    read -r -a libs <<<"$(libs_of "$a")"
    while IFS=$'\t' read -r name cmd define; do
        path="${cmd//\$\{FOREIGN_BIN\}/$bin}"
        [[ "$path" == "$bin/"* ]] || { echo "run.sh: $a/builds.tsv: the build $name does not run a program in \${FOREIGN_BIN}" >&2; return 1; }
        [[ "$define" == - ]] && define=""
        if ! "$cc" "${cflags[@]}" ${define:+"-D$define"} "$here/$a/$a.c" -o "$path" ${libs[@]+"${libs[@]}"} \
            2>"$out/$a.build.log"; then
            cat "$out/$a.build.log" >&2
            echo "run.sh: $a: the $name build does not compile (is its library installed? ci/install-deps.sh gate)" >&2
            return 1
        fi
    done < <(awk -F'\t' '!/^#/ && NF && $1 != "build"' "$here/$a/builds.tsv")
    rm -f "$out/$a.build.log"
}

status=0
summary="$out/summary.md"
{
    echo "# What the kit finds in three allocators"
    echo
    echo "Platforms: $platforms. Each matrix: gates/kit/foreign/<allocator>/ (why each cell is that colour: gates/kit/foreign/README.md)."
} >"$summary"
for a in "${allocators[@]}"; do
    echo
    echo "=== $a"
    rm -rf "${out:?}/$a"
    mkdir -p "$out/$a"
    if ! runs="$(runs_here "$here/$a/expected.tsv")"; then
        echo "run.sh: $a: n/a here: its gate runs on $runs only, and this machine is: $platforms (not run, not a pass)"
        printf '\n## %s\n\nn/a: the gate runs on %s only; this machine is %s. Not run, and not counted as a pass.\n' \
            "$a" "$runs" "$platforms" >>"$summary"
        continue
    fi
    if ! build "$a"; then
        status=1
        printf '\n## %s\n\nFAILED: the programs do not build (see the log of make gate).\n' "$a" >>"$summary"
        continue
    fi
    rc=0
    FOREIGN_BIN="$bin" "$gbgate" matrix --expected "$here/$a/expected.tsv" --builds "$here/$a/builds.tsv" \
        --out "$out/$a" || rc=$?
    if ((rc != 0)); then
        status=1
        echo "run.sh: $a: the matrix has a wrong cell or could not run (gbgate matrix exited $rc)" >&2
    fi
    printf '\n## %s%s\n\n' "$a" "$( ((rc == 0)) || echo ": FAILED")" >>"$summary"
    if [[ -f "$out/$a/matrix.md" ]]; then
        cat "$out/$a/matrix.md" >>"$summary"
    else
        echo "No matrix: gbgate matrix exited $rc before writing one." >>"$summary"
    fi
done
echo
echo "run.sh: wrote $summary"
if ((status != 0)); then
    echo "run.sh: FAILED: a foreign-allocator matrix has a wrong cell or did not run" >&2
fi
exit "$status"
