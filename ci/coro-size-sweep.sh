#!/usr/bin/env bash
# coro-size-sweep.sh -- the stress gate at several sizes of the coroutine
# descriptor, on glibc.
#
# The descriptor (gb_coro, runtime/src/coro.h) comes from malloc, between
# the blocks of the stress gate's regions when the malloc-back poison takes
# those from malloc too. A gate's colour must not hang on where glibc puts
# it: the stress shape is made so that glibc's own rules keep the poison's
# blocks (scenarios/scenarios.c, gbs_stress), and this sweep shows it. For
# each padding of GB_CORO_PAD (CMake; 0, 16, 32 and 48 bytes: four size
# classes of glibc's; the descriptor's own size is what the sweep prints,
# 248 bytes on x86-64 outside TSan) it builds, in build/coro-size-<pad>/, only the stress gate's
# programs of the clean and the malloc-back builds, and runs the stress
# gate (gates/stress.bats) on them: stress-program on clean, stress-program
# and stress-library on malloc-back. Each cell must have its colour in
# gates/expected.tsv: green on clean, red for retained-below on
# malloc-back. The clean build's library cell is left to the kill matrix,
# at the shipped size: the clean build's blocks are its own mappings, and
# its two gate programs differ only in glibc's mmap threshold, which none
# of its mallocs in this scenario meets, so the descriptor's size cannot
# tell them apart. The kill matrix has run the kit's failsafe already.
#
# Writes OUT (build/gate/coro-size by default): each size's cells as the
# gate wrote them (pad-<pad>.tsv, bats's output beside them), and
# sweep.tsv, one row per cell: the descriptor's size, the padding, the
# gate, the build, the colour, the peak resident size and the resident size
# after the final sweep (MiB). Prints the table. Exits non-zero if any
# cell has the wrong colour or is missing. Elsewhere than glibc it says so
# and exits 0: the rules the shape rests on are glibc's.
# Usage: ci/coro-size-sweep.sh [--out DIR] [--pads "0 16 32 48"]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require coro-size-sweep.sh "base gate" cmake bats ps awk cc

out=build/gate/coro-size
pads="0 16 32 48"
usage="usage: ci/coro-size-sweep.sh [--out DIR] [--pads \"0 16 32 48\"]"
while (($#)); do
    case "$1" in
        --out | --pads)
            (($# >= 2)) || { echo "$usage" >&2; exit 2; }
            if [[ "$1" == --out ]]; then out="$2"; else pads="$2"; fi
            shift 2
            ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done

if ! getconf GNU_LIBC_VERSION >/dev/null 2>&1; then
    echo "coro-size-sweep.sh: not run: the stress shape rests on glibc's rules, and this C library is not glibc"
    exit 0
fi

# descriptor_size PAD: sizeof(gb_coro) with GB_CORO_PAD=PAD, from the
# runtime's headers with the definitions its objects are built with.
descriptor_size() {
    local dir
    dir="$(mktemp -d)"
    local -a def=()
    (($1 > 0)) && def=("-DGB_CORO_PAD=$1")
    printf '%s\n' '#include "coro.h"' '#include <stdio.h>' 'int main(void)' '{' \
        '    printf("%zu\n", sizeof(gb_coro));' '    return 0;' '}' >"$dir/size.c"
    cc -std=c11 -D_DEFAULT_SOURCE -DGB_BUILDING ${def[@]+"${def[@]}"} -Iruntime/include -Iruntime/src \
        "$dir/size.c" -o "$dir/size"
    "$dir/size"
    rm -rf "$dir"
}

# cells PAD BUILD GATE_REGEX: the stress gates matching GATE_REGEX on BUILD,
# with the programs of build/coro-size-PAD; their cells go to the size's
# file. bats fails for a red cell, which is judged below, not here.
cells() {
    GATE_BUILD="$2" GATE_BIN_DIR="$root/build/coro-size-$1/gates/bin" GATE_RESULTS="$out/pad-$1.tsv" \
        bats -f "$3" gates/stress.bats >>"$out/pad-$1.log" 2>&1 || true
}

rm -rf "$out"
mkdir -p "$out"
sweep="$out/sweep.tsv"
printf 'size\tpad\tgate\tbuild\tcolour\tpeak\tafter\n' >"$sweep"
status=0
for pad in $pads; do
    size="$(descriptor_size "$pad")"
    tree="build/coro-size-$pad"
    echo "coro-size-sweep.sh: gb_coro at $size bytes (GB_CORO_PAD=$pad), in $tree"
    cmake -S . -B "$tree" ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGB_CORO_PAD="$pad" -DGB_BUILD_POISONS=ON \
        -DGB_BUILD_TESTS=OFF -DGB_BUILD_BENCH=OFF -DGB_BUILD_TOOLS=OFF -DGB_BUILD_FUZZ=OFF >/dev/null
    cmake --build "$tree" --parallel "$jobs" --target gateprog-clean gateprog-malloc-back \
        gateprog-malloc-back-library >/dev/null
    : >"$out/pad-$pad.tsv"
    cells "$pad" clean '^stress-program$'
    cells "$pad" malloc-back '^stress-(program|library)$'
    # Each wanted cell, judged against gates/expected.tsv ("green" for a
    # pass, "red:<reason>" for a fail for that reason). A cell's detail
    # reads "peak P MiB, then A MiB ..." when green and "... (peak P MiB):
    # A MiB resident, ..." when red.
    awk -F'\t' -v size="$size" -v pad="$pad" -v sweep="$sweep" '
        FNR == NR {
            if ($1 == "gate") for (i = 3; i <= NF; i++) col[i] = $i
            else if ($1 ~ /^stress-/) for (i = 3; i <= NF; i++) want[$1 SUBSEP col[i]] = $i
            next
        }
        {
            colour = $3 == "pass" ? "green" : "red:" $4
            peak = after = "?"
            if (match($5, /peak [0-9.]+ MiB/)) peak = substr($5, RSTART + 5, RLENGTH - 9)
            if ($3 == "pass" && match($5, /then [0-9.]+ MiB/)) after = substr($5, RSTART + 5, RLENGTH - 9)
            if ($3 != "pass" && match($5, /: [0-9.]+ MiB resident/)) after = substr($5, RSTART + 2, RLENGTH - 15)
            printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", size, pad, $1, $2, colour, peak, after >> sweep
            got[$1 SUBSEP $2] = colour
            if (colour != want[$1 SUBSEP $2]) {
                printf "coro-size-sweep.sh: at %s bytes, %s on %s is %s, not %s: %s\n", size, $1, $2, colour, want[$1 SUBSEP $2], $5 > "/dev/stderr"
                bad = 1
            }
        }
        END {
            n = split("stress-program clean stress-program malloc-back stress-library malloc-back", w, " ")
            for (i = 1; i < n; i += 2)
                if (!((w[i] SUBSEP w[i + 1]) in got)) {
                    printf "coro-size-sweep.sh: at %s bytes, %s on %s has no cell\n", size, w[i], w[i + 1] > "/dev/stderr"
                    bad = 1
                }
            exit bad
        }' gates/expected.tsv "$out/pad-$pad.tsv" || {
        status=1
        echo "coro-size-sweep.sh: bats said, at $size bytes:" >&2
        tail -n 20 "$out/pad-$pad.log" >&2
    }
done

echo "coro-size-sweep.sh: the stress gate by the descriptor's size (resident MiB: the peak, then after the final sweep)"
awk -F'\t' 'NR > 1 { printf "  %4s bytes  %-15s %-12s %-20s peak %6s  after %6s\n", $1, $3, $4, $5, $6, $7 }' "$sweep"
if ((status)); then
    echo "coro-size-sweep.sh: a cell is wrong or missing (gates/expected.tsv); $out/pad-*.log" >&2
else
    echo "coro-size-sweep.sh: every cell has its colour of gates/expected.tsv at every size: $sweep"
fi
exit "$status"
