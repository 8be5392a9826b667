#!/usr/bin/env bash
# check_gbgate.sh -- the gate kit installed works from outside the tree,
# and a copy of its folder still does.
#
# Installs the build into a scratch prefix under TMPDIR (outside the source
# tree) and checks, each step one line:
#   - the layout gates/kit/README.md gives ("Installed"): gbgate in the
#     bindir, a link to the kit's folder in <datadir>/giveback/kit, the
#     headers, the reader's archive, gbgate.pc and the CMake targets;
#   - gbgate --version prints the project's version, run from the prefix,
#     through an absolute link in another folder found on PATH, and through
#     a relative link to that link;
#   - a program built against the installed gbgate.h, once with pkg-config
#     and once with find_package(giveback), gated with gbgate run through
#     the link: a pass when it gives its memory back, red for rss when it
#     keeps it;
#   - the reader in C built against the installed library (pkg-config and
#     find_package) reads that program's children;
#   - gbgate matrix from the prefix on a small matrix (its failsafe, a
#     gbgate gate, a gate written in bats when bats is installed, and the
#     charts when gnuplot is): every support file is used;
#   - the prefix moved elsewhere still runs (its link is relative);
#   - a copy of the source tree's gates/kit/ runs gates from anywhere and,
#     outside giveback's tree, says it has no version.
# The program and the reader are the kit's own test programs
# (gates/kit/test/prog.c and reader.c), copied away from any header.
#
# Usage: check_gbgate.sh SOURCE_DIR BINARY_DIR CC VERSION BINDIR LIBDIR INCLUDEDIR DATADIR
# (the last four: CMAKE_INSTALL_<dir>, relative). Run by ctest as
# install.gbgate (tests/CMakeLists.txt). Exits 0 when every check passed.
set -euo pipefail

if (($# != 8)); then
    echo "usage: check_gbgate.sh SOURCE_DIR BINARY_DIR CC VERSION BINDIR LIBDIR INCLUDEDIR DATADIR" >&2
    exit 2
fi
src="$1" bin="$2" cc="$3" version="$4" bindir="$5" libdir="$6" includedir="$7" datadir="$8"
for d in "$bindir" "$libdir" "$includedir" "$datadir"; do
    if [[ "$d" == /* ]]; then
        echo "check_gbgate.sh: $d is absolute: the scratch prefix needs relative install folders" >&2
        exit 2
    fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/gbgate-install.XXXXXX")"
work="$(cd -P "$work" && pwd)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
checked=0

fail() {
    echo "check_gbgate.sh: FAIL: $*" >&2
    exit 1
}
ok() {
    checked=$((checked + 1))
    echo "ok: $*"
}

# gated RUNNER PROG WHAT: gbgate run through RUNNER must pass PROG when it
# gives 64 MiB back twice, and call it red for rss when it keeps them,
# under a 32 MiB cap.
gated() {
    local runner="$1" prog="$2" what="$3" out rc
    rc=0
    out="$("$runner" run --cap 32MiB -- "$prog" frees 64 2 2>&1)" || rc=$?
    [[ $rc -eq 0 && "$(tail -n 1 <<<"$out")" == "gate: pass" ]] ||
        fail "$what: a program that gives its memory back did not pass (exit $rc):"$'\n'"$out"
    rc=0
    out="$("$runner" run --cap 32MiB -- "$prog" keeps 64 1 2>&1)" || rc=$?
    [[ $rc -eq 1 && "$(tail -n 1 <<<"$out")" == "gate: fail (rss): at round-1: "*"over the cap of 32.0 MiB" ]] ||
        fail "$what: a program that keeps 64 MiB was not red for rss under a 32 MiB cap (exit $rc):"$'\n'"$out"
    ok "$what: gives back passes, keeps is red for rss"
}

# read_children READER PROG WHAT: the C reader must see both stops of each
# child, the one that frees under 32 MiB and the one that keeps over 128.
read_children() {
    local reader="$1" prog="$2" what="$3" out
    out="$("$reader" "$prog" 64 2>&1)" || fail "$what: the reader failed:"$'\n'"$out"
    local frees keeps
    frees="$(awk '$1 == "frees" && $2 == "round-2" { print $3 }' <<<"$out")"
    keeps="$(awk '$1 == "keeps" && $2 == "round-2" { print $3 }' <<<"$out")"
    [[ "$out" == *"stops frees 2 status 0"* && "$out" == *"stops keeps 2 status 0"* ]] ||
        fail "$what: the reader did not see two stops of each child:"$'\n'"$out"
    if [[ -z "$frees" || -z "$keeps" ]] || ((frees >= 32 * 1024 || keeps <= 128 * 1024)); then
        fail "$what: the reader's figures are not those of the children (frees ${frees:-none} KiB, keeps ${keeps:-none} KiB):"$'\n'"$out"
    fi
    ok "$what: read frees at $frees KiB, keeps at $keeps KiB"
}

# ------------------------------------------------------------------ install
cmake --install "$bin" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    fail "cmake --install failed:"$'\n'"$(cat "$work/install.log")"
kitdir="$prefix/$datadir/giveback/kit"
for f in "$bindir/gbgate" "$includedir/gbgate.h" "$includedir/gbgate_reader.h" \
    "$libdir/libgbgate_reader.a" "$libdir/pkgconfig/gbgate.pc"; do
    [[ -e "$prefix/$f" ]] || fail "the install has no $f"
done
for f in gbgate gbgate.bash gate.bash resolve.awk matrix.awk junit.awk chart.gp hold VERSION README.md; do
    [[ -f "$kitdir/$f" ]] || fail "the install has no $datadir/giveback/kit/$f"
done
for f in "$bindir/gbgate" "$datadir/giveback/kit/gbgate" "$datadir/giveback/kit/hold"; do
    [[ -x "$prefix/$f" ]] || fail "the installed $f is not executable"
done
[[ -L "$prefix/$bindir/gbgate" && "$(readlink "$prefix/$bindir/gbgate")" != /* ]] ||
    fail "$bindir/gbgate is not a relative link to the kit's folder"
grep -q 'giveback::gbgate_reader' "$prefix/$libdir/cmake/giveback/givebackTargets.cmake" ||
    fail "the CMake package exports no giveback::gbgate_reader"
# Every relative link of the installed README resolves inside the
# install: the README is read where it is, by a user with no source tree.
n=0
while IFS= read -r link; do
    n=$((n + 1))
    target="${link%%#*}"
    [[ -z "$target" ]] && continue
    [[ -e "$kitdir/$target" ]] || fail "the installed README links to $link, which is not in the install"
    case "$(cd "$kitdir" && cd "$(dirname "$target")" 2>/dev/null && pwd -P)/" in
        "$(cd "$kitdir" && pwd -P)/"*) ;;
        *) fail "the installed README links to $link, outside the kit's folder" ;;
    esac
done < <(grep -o '](\([^)]*\))' "$kitdir/README.md" | sed 's/^](//; s/)$//' | grep -v '^[a-z]*://' | grep -v '^#')
((n > 0)) || fail "the installed README has no relative link: the link check read nothing"
ok "installed: $bindir/gbgate, $datadir/giveback/kit/, the headers, libgbgate_reader.a, gbgate.pc, the CMake targets; the README's $n links resolve inside it"

# ------------------------------------------------------------------ version
want="gbgate $version"
out="$("$prefix/$bindir/gbgate" --version 2>&1)" || fail "$bindir/gbgate --version failed: $out"
[[ "$out" == "$want" ]] || fail "$bindir/gbgate --version printed \"$out\", not \"$want\""
ok "$bindir/gbgate --version: $out"
# The source tree's kit reads the same version from the project() line.
out="$("$src/gates/kit/gbgate" --version 2>&1)" || fail "the source tree's gates/kit/gbgate --version failed: $out"
[[ "$out" == "$want" ]] || fail "the source tree's gates/kit/gbgate --version printed \"$out\", not \"$want\""
ok "gates/kit/gbgate --version in the source tree: $out"

# Another folder's absolute link to it, found on PATH, and a relative link
# to that link: each followed back to the kit's folder.
mkdir -p "$work/elsewhere/bin" "$work/elsewhere/more"
ln -s "$prefix/$bindir/gbgate" "$work/elsewhere/bin/gbgate"
ln -s ../bin/gbgate "$work/elsewhere/more/gb"
out="$(PATH="$work/elsewhere/bin:$PATH" gbgate --version 2>&1)" || fail "gbgate --version through a link on PATH failed: $out"
[[ "$out" == "$want" ]] || fail "gbgate --version through a link on PATH printed \"$out\", not \"$want\""
out="$("$work/elsewhere/more/gb" --version 2>&1)" || fail "gbgate --version through a relative link to a link failed: $out"
[[ "$out" == "$want" ]] || fail "gbgate --version through a relative link to a link printed \"$out\", not \"$want\""
ok "--version through a link on PATH and through a relative link to it: $out"

# ------------------------------------------------------ clients of the kit
mkdir -p "$work/src"
cp "$src/gates/kit/test/prog.c" "$src/gates/kit/test/reader.c" "$work/src/"

command -v pkg-config >/dev/null 2>&1 || fail "pkg-config is not installed (ci/install-deps.sh base installs it)"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
out="$(pkg-config --modversion gbgate)"
[[ "$out" == "$version" ]] || fail "pkg-config gbgate is version \"$out\", not $version"
read -r -a cflags <<<"$(pkg-config --cflags gbgate)"
read -r -a libs <<<"$(pkg-config --libs gbgate)"
"$cc" -std=c99 -Wall -Wextra -Werror "${cflags[@]}" -o "$work/prog-pc" "$work/src/prog.c" ||
    fail "the checkpoint program did not build with pkg-config gbgate"
"$cc" -std=c99 -Wall -Wextra -Werror "${cflags[@]}" -o "$work/reader-pc" "$work/src/reader.c" "${libs[@]}" ||
    fail "the reader did not build with pkg-config gbgate"
ok "built with pkg-config gbgate ($version): a program with checkpoints and a reader"

if ! cmake -S "$src/tests/install/kit-consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DKIT_SOURCES="$work/src" >"$work/cmake.log" 2>&1 ||
    ! cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1; then
    fail "the find_package client did not build:"$'\n'"$(cat "$work/cmake.log")"
fi
found="$(sed -n 's/^giveback_DIR:PATH=//p' "$work/cmake/CMakeCache.txt")"
[[ "$found" == "$prefix/$libdir/cmake/giveback" ]] ||
    fail "find_package found another giveback package: $found"
ok "built with find_package(giveback): giveback::gbgate and giveback::gbgate_reader"

gated "$work/elsewhere/more/gb" "$work/prog-pc" "gbgate run through a link, the pkg-config program"
gated "$prefix/$bindir/gbgate" "$work/cmake/prog" "gbgate run from the prefix, the find_package program"
read_children "$work/reader-pc" "$work/prog-pc" "the pkg-config reader"
read_children "$work/cmake/reader" "$work/cmake/prog" "the find_package reader"

# ------------------------------------------------------------------ matrix
# A small matrix run from the prefix: the failsafe runs the installed hold,
# the cells go through resolve.awk, matrix.awk and junit.awk, a gate
# written in bats loads the installed gate.bash (GATE_KIT), and the charts
# are drawn with chart.gp.
m="$work/matrix"
mkdir -p "$m"
printf 'build\tprogram\nclean\t%s\n' "$work/prog-pc" >"$m/builds.tsv"
{
    printf 'gate\tprogram\targs\toptions\n'
    printf 'frees\tprogram\tfrees 64 2\t--cap 32MiB\n'
    printf 'keeps\tprogram\tkeeps 64 1\t--cap 32MiB\n'
} >"$m/gates.tsv"
printf 'gate\truns-on\tclean\nfrees\tall\tgreen\nkeeps\tall\tred:rss\n' >"$m/expected.tsv"
have_bats=0
if command -v bats >/dev/null 2>&1; then
    have_bats=1
    printf 'frees-bats\tbats\tfrees.bats\t--cap 32MiB\n' >>"$m/gates.tsv"
    printf 'frees-bats\tall\tgreen\n' >>"$m/expected.tsv"
    cat >"$m/frees.bats" <<'EOF'
setup() { load "${GATE_KIT}/gate"; gate_setup; }
teardown() { gate_teardown; }
@test "frees-bats" {
    gate_cmd program
    gate_start "${GATE_CMD[@]}" frees 64 1
    gate_wait || return 1
    gate_judge "$(gate_opt_kib cap)" "after the free" || return 1
    gate_finish || return 1
    gate_pass "$(gate_readings)"
}
EOF
fi
rc=0
"$prefix/$bindir/gbgate" matrix --expected "$m/expected.tsv" --builds "$m/builds.tsv" --out "$m/out" >"$m/log" 2>&1 || rc=$?
((rc == 0)) || fail "gbgate matrix from the prefix exited $rc:"$'\n'"$(cat "$m/log")"
grep -q "failsafe: the kit calls a program over its cap red" "$m/log" || fail "the matrix ran no failsafe:"$'\n'"$(cat "$m/log")"
cells=$(awk -F'\t' '$2 == "clean"' "$m/out/results.tsv" | wc -l)
((cells == 2 + have_bats)) || fail "the matrix recorded $cells cells, not $((2 + have_bats)):"$'\n'"$(cat "$m/out/results.tsv")"
grep -q '<testsuite' "$m/out/junit.xml" || fail "the matrix wrote no JUnit report"
what="the failsafe, 2 gbgate gates"
if ((have_bats)); then what="$what, a bats gate"; else what="$what (NOT CHECKED: a bats gate, bats is not installed)"; fi
if command -v gnuplot >/dev/null 2>&1; then
    [[ -f "$m/out/charts/frees.png" ]] || fail "gnuplot is installed and the matrix drew no chart:"$'\n'"$(cat "$m/log")"
    what="$what, the charts"
else
    what="$what (NOT CHECKED: the charts, gnuplot is not installed)"
fi
ok "gbgate matrix from the prefix: $what"

# ------------------------------------------------------------ relocated
mv "$prefix" "$work/moved"
out="$("$work/moved/$bindir/gbgate" --version 2>&1)" || fail "the moved prefix's gbgate --version failed: $out"
[[ "$out" == "$want" ]] || fail "the moved prefix's gbgate --version printed \"$out\""
gated "$work/moved/$bindir/gbgate" "$work/prog-pc" "gbgate run from the prefix moved elsewhere"

# ------------------------------------------------------------------ copied
# The kit copied out of the source tree, as its README's first step does.
mkdir -p "$work/copy/gates"
cp -R "$src/gates/kit" "$work/copy/gates/kit"
gated "$work/copy/gates/kit/gbgate" "$work/prog-pc" "gbgate run from a copy of gates/kit/"
ln -s "$work/copy/gates/kit/gbgate" "$work/elsewhere/bin/gbgate-copy"
gated "$work/elsewhere/bin/gbgate-copy" "$work/prog-pc" "gbgate run through a link to the copy"
rc=0
out="$("$work/copy/gates/kit/gbgate" --version 2>&1)" || rc=$?
[[ $rc -eq 1 && "$out" == *"no version"* ]] ||
    fail "a copy outside giveback's tree answered --version with exit $rc: $out"
ok "the copy outside giveback's tree says it has no version"

echo "check_gbgate.sh: $checked checks passed"
