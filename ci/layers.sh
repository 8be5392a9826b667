#!/usr/bin/env bash
# layers.sh -- holds runtime/src to its layers (runtime/src/layers.txt).
#
# Two rules, each a line of that file's opening comment: a file includes
# only headers of its own layer or below, or those a line "up" names for
# it; gb__self() appears only in files named on the line "self". Every file under runtime/src must be in the
# table (but fix/*.c, fix/fix.h and internal.h, which it names as
# unchecked), so a new file is placed before it lands. Prints each breach
# as FILE:LINE and what it breaks, then one summary line; exits 1 on any.
# Usage: ci/layers.sh [SRC_DIR]   (default runtime/src)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${1:-$root/runtime/src}"
cd "$src"

files=$(find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' \) | sed 's|^\./||' | sort)

# shellcheck disable=SC2086
awk -v files="$files" '
    # The table: the layer of every file, by its height (0 lowest).
    FNR == NR {
        if ($0 ~ /^#/ || NF == 0) next
        if ($1 == "self") {
            for (i = 2; i <= NF; i++) self[$i] = 1
            next
        }
        if ($1 == "up") {
            for (i = 3; i <= NF; i++) up[$2, $i] = 1
            next
        }
        for (i = 2; i <= NF; i++) entry[$i] = height
        name[height] = $1
        height++
        next
    }
    END {
        n = split(files, list, "\n")
        bad = 0
        for (k = 1; k <= n; k++) {
            f = list[k]
            if (f == "" || f == "internal.h" || f == "fix/fix.h" || f ~ /^fix\/.*\.c$/) continue
            h = layer_of(f)
            if (h < 0) {
                printf "%s: in no layer of layers.txt: place it there\n", f
                bad++
                continue
            }
            line = 0
            while ((getline text < f) > 0) {
                line++
                if (match(text, /^#include "[^"]+"/)) {
                    inc = substr(text, 11, RLENGTH - 11)
                    target = resolve(f, inc)
                    t = layer_of(target)
                    if (t > h && !((f, target) in up)) {
                        printf "%s:%d: includes %s, of layer %s, above its own (%s)\n", f, line, target, name[t], name[h]
                        bad++
                    }
                }
                if (text ~ /gb__self\(\)/ && !(f in self) && text !~ /^ *\*/ && text !~ /^\/\*/) {
                    printf "%s:%d: calls gb__self() in layer %s; only entry points look the thread up\n", f, line, name[h]
                    bad++
                }
            }
            close(f)
            checked++
        }
        printf "layers: %d files in %d layers, %d breach%s\n", checked, height, bad, bad == 1 ? "" : "es"
        exit bad > 0
    }
    # The path an include names, from the including file: relative to its
    # folder, else to runtime/src ("../x.h" from fix/ included).
    function resolve(from, inc,    dir, p) {
        dir = from
        if (sub(/\/[^\/]*$/, "", dir) == 0) dir = ""
        p = (dir == "" ? inc : dir "/" inc)
        while (p ~ /[^\/]+\/\.\.\//) sub(/[^\/]+\/\.\.\//, "", p)
        if ((p in entry) || folder_of(p) >= 0) return p
        return inc
    }
    function folder_of(p,    d) {
        d = p
        while (sub(/\/[^\/]*$/, "", d)) if ((d "/") in entry) return entry[d "/"]
        return -1
    }
    function layer_of(p,    r) {
        if (p in entry) return entry[p]
        r = folder_of(p)
        return r
    }
' layers.txt
