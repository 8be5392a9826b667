#!/usr/bin/env bash
# layers.sh -- holds runtime/src to its layers (runtime/src/layers.txt).
#
# Three rules, each a line of that file's opening comment: a file includes
# only headers of its own layer or below, and calls only functions and
# uses only data defined in its own layer or below, but for the includes
# and calls layers.txt names on an "up" line with its reason
# ("up FILE -> FILE: why", the second a header or a .c file); gb__self()
# appears only in files named on the line "self". The calls are read from
# the objects:
# every .c file is compiled (with GB_CHECK=2, so that the checked build's
# calls count too) and nm says which symbols each defines and which it
# takes from others. Every file under runtime/src must be in the table
# (but fix/*.c, fix/fix.h and internal.h, which it names as unchecked: a
# call into a fix file is a seam, which the seam headers declare), so a
# new file is placed before it lands; an "up" line that names no call
# left is a breach too, so the list stays true. Prints each breach as
# FILE:LINE or FILE and what it breaks, then one summary line; exits 1 on
# any.
# Usage: ci/layers.sh [SRC_DIR]   (default runtime/src; CC and NM as usual)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${1:-$root/runtime/src}"
cd "$src"

files=$(find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' \) | sed 's|^\./||' | sort)

# The symbols: "FILE DEFINING-FILE SYMBOL" for every symbol a .c file takes
# from another .c file of the runtime. A file that does not compile here
# is one of another OS (os/macos.c off macOS) and is left out, said once.
objs="$(mktemp -d)"
trap 'rm -rf "$objs"' EXIT
cc="${CC:-cc}"
nm="${NM:-nm}"
skipped=""
while IFS= read -r f; do
    o="$objs/$(printf '%s' "$f" | tr '/' '@').o"
    if ! "$cc" -std=c11 -c -o "$o" -DGB_BUILDING -D_DEFAULT_SOURCE -DGB_CHECK=2 -DGB_PROGRAM_BUILD=1 \
        -I../include -I. "$f" 2>"$objs/err"; then
        skipped="$skipped $f"
        continue
    fi
    "$nm" -P "$o" | awk -v f="$f" '$2 == "U" { print "U", f, $1; next }
                                    $2 ~ /^[TDBRCVWG]$/ { print "D", f, $1 }'
done < <(printf '%s\n' "$files" | grep '\.c$') > "$objs/symbols"
if [[ -n "$skipped" ]]; then
    echo "layers: not compiled here (another OS's):$skipped" >&2
fi

# shellcheck disable=SC2086
awk -v files="$files" -v symbols="$objs/symbols" '
    # The table: the layer of every file, by its height (0 lowest).
    FNR == NR {
        if ($0 ~ /^#/ || NF == 0) next
        if ($1 == "self") {
            for (i = 2; i <= NF; i++) self[$i] = 1
            next
        }
        if ($1 == "up") {
            # up FILE -> FILE: why
            to = $4
            sub(/:$/, "", to)
            up[$2 " " to] = FNR
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
                    if (t > h && ((f " " target) in up)) {
                        used_up[f " " target] = 1
                    } else if (t > h) {
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
        # Who defines each symbol; then each use of a symbol of another file.
        while ((getline row < symbols) > 0) {
            split(row, w, " ")
            if (w[1] == "D") def[w[3]] = w[2]
            else use[++nuse] = w[2] " " w[3]
        }
        close(symbols)
        for (k = 1; k <= nuse; k++) {
            split(use[k], w, " ")
            f = w[1]
            if (!(w[2] in def)) continue
            to = def[w[2]]
            if (to == f || f == "internal.h" || f ~ /^fix\// || to ~ /^fix\//) continue
            h = layer_of(f)
            t = layer_of(to)
            if (h < 0 || t <= h) continue
            pair = f " " to
            if (pair in up) {
                used_up[pair] = 1
                named++
                continue
            }
            if (!(pair in told)) {
                printf "%s: calls %s of %s, of layer %s, above its own (%s): call down, or name it on an \"up\" line of layers.txt with its reason\n", f, w[2], to, name[t], name[h]
                told[pair] = 1
                bad++
            }
        }
        for (pair in up)
            if (!(pair in used_up)) {
                split(pair, w, " ")
                printf "layers.txt:%d: up %s -> %s: no such include or call is left: remove the line\n", up[pair], w[1], w[2]
                bad++
            }
        nup = 0
        for (pair in used_up) nup++
        printf "layers: %d files in %d layers, %d includes or calls up (each named), %d breach%s\n", checked, height, nup, bad, bad == 1 ? "" : "es"
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
