#!/usr/bin/env bash
# run.sh -- what the kit finds in language runtimes: runs the gate of Go,
# CPython, Node.js, Lua, the JVM, PHP, Perl and Tcl, each in a clean
# configuration and a poisoned one, as a matrix per runtime with gbgate
# matrix.
#
# Each runtime has a folder of its own (go/, python/, node/, lua/, jvm/,
# php/, perl/, tcl/): its
# program, rounds.<ext>, and the kit's three files, expected.tsv (the
# colours), gates.tsv (how the gate runs, the cap and why) and builds.tsv
# (the two configurations: the same program under other settings). The
# programs call the kit's checkpoint helper, gbgate checkpoint, which run.sh
# puts on their PATH. Only the Go program is compiled (go build, into
# bin/); the others run as they are.
#
# A runtime that is not installed here (ci/install-deps.sh runtimes installs
# them) is not run and is reported as n/a with that reason, never as a
# pass; so is a matrix whose gate does not run on this machine (runs-on in
# its expected.tsv).
#
# Usage: gates/kit/runtimes/run.sh [--out DIR] [RUNTIME...]
#   --out DIR   where the Go program (bin/), the matrices (one folder each,
#               as gbgate matrix writes them) and summary.md go; default
#               gbgate-runtimes in the current folder
#   RUNTIME     go, python, node, lua, jvm, php, perl or tcl; default all
# The interpreters are the first python3, node, lua5.4 (else lua), java,
# php, perl and tclsh on PATH, and go for the build; PYTHON, NODE, LUA,
# JAVA, PHP, PERL, TCLSH and GO name others. Lua's
# clean configuration preloads jemalloc: JEMALLOC_SO, else the one
# pkg-config or ldconfig knows.
# Exits 0 when every cell that ran has its expected colour and reason, 1
# when a cell does not or the Go program does not build, 2 on a usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kit="$(dirname "$here")"
gbgate="$kit/gbgate"
all=(go python node lua jvm php perl tcl)

die() {
    echo "run.sh: $*" >&2
    exit 2
}

out="gbgate-runtimes"
runtimes=()
while (($#)); do
    case "$1" in
        --out) out="${2:?--out takes a folder}"; shift 2 ;;
        -h | --help) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        go | python | node | lua | jvm | php | perl | tcl) runtimes+=("$1"); shift ;;
        *) die "unknown argument \"$1\" (runtimes: ${all[*]})" ;;
    esac
done
((${#runtimes[@]})) || runtimes=("${all[@]}")

mkdir -p "$out/bin"
out="$(cd "$out" && pwd)"
export RUNTIMES_BIN="$out/bin"
platforms="$("$gbgate" platforms)"
# The programs run "gbgate checkpoint": this kit's, whatever else is on PATH.
export PATH="$kit:$PATH"

# jemalloc_so: the path of jemalloc's shared library, for Lua's clean
# configuration: JEMALLOC_SO, else pkg-config's libdir (libjemalloc-dev),
# else ldconfig's cache; nothing when none is found.
jemalloc_so() {
    local d ldconfig
    if [[ -n "${JEMALLOC_SO:-}" ]]; then
        echo "$JEMALLOC_SO"
        return 0
    fi
    d="$(pkg-config --variable=libdir jemalloc 2>/dev/null || true)"
    if [[ -n "$d" && -f "$d/libjemalloc.so.2" ]]; then
        echo "$d/libjemalloc.so.2"
        return 0
    fi
    ldconfig="$(command -v ldconfig || echo /sbin/ldconfig)"
    "$ldconfig" -p 2>/dev/null | awk '$1 == "libjemalloc.so.2" && /x86-64|aarch64|64bit/ { print $NF; exit }'
}

# find_runtime RUNTIME: sets and exports what the runtime's builds file
# expands (GO, PYTHON, NODE, LUA, JEMALLOC_SO) and sets version to what it
# is; fails, with version saying why, when it is not installed here. Not
# called in a command substitution: its variables must outlive it.
find_runtime() {
    local v want
    version=""
    case "$1" in
        go)
            GO="${GO:-go}"
            command -v "$GO" >/dev/null 2>&1 || { version="no Go toolchain ($GO) on PATH"; return 1; }
            v="$("$GO" version)"
            ;;
        python)
            want="${PYTHON:-python3}"
            PYTHON="$(command -v "$want" 2>/dev/null)" || { version="no $want on PATH"; return 1; }
            v="$("$PYTHON" -c 'import platform, sys; print("CPython", platform.python_version(), sys.executable)')"
            ;;
        node)
            want="${NODE:-node}"
            NODE="$(command -v "$want" 2>/dev/null)" || { version="no $want on PATH"; return 1; }
            v="Node.js $("$NODE" --version) ($NODE, V8 $("$NODE" -p process.versions.v8))"
            ;;
        lua)
            want="${LUA:-lua5.4}"
            LUA="$(command -v "$want" 2>/dev/null || command -v lua 2>/dev/null)" ||
                { version="no $want or lua on PATH"; return 1; }
            JEMALLOC_SO="$(jemalloc_so)"
            [[ -n "$JEMALLOC_SO" && -f "$JEMALLOC_SO" ]] ||
                { version="no libjemalloc.so.2 for the clean configuration (set JEMALLOC_SO)"; return 1; }
            v="$("$LUA" -v 2>&1 | awk '{ print $1, $2; exit }') ($LUA), jemalloc $JEMALLOC_SO"
            ;;
        jvm)
            want="${JAVA:-java}"
            JAVA="$(command -v "$want" 2>/dev/null)" || { version="no $want on PATH"; return 1; }
            # The program runs from its source (java Rounds.java), which
            # needs the compiler a JDK has and a JRE has not.
            "$JAVA" --list-modules 2>/dev/null | grep -q '^jdk.compiler@' ||
                { version="$JAVA has no jdk.compiler module (a JRE, not a JDK: default-jdk-headless)"; return 1; }
            v="$("$JAVA" -version 2>&1 | head -n 1) ($JAVA)"
            ;;
        php)
            want="${PHP:-php}"
            PHP="$(command -v "$want" 2>/dev/null)" || { version="no $want on PATH"; return 1; }
            v="PHP $("$PHP" -r 'echo PHP_VERSION;') ($PHP)"
            ;;
        perl)
            want="${PERL:-perl}"
            PERL="$(command -v "$want" 2>/dev/null)" || { version="no $want on PATH"; return 1; }
            JEMALLOC_SO="$(jemalloc_so)"
            v="Perl $("$PERL" -e 'printf "%vd", $^V') ($PERL)${JEMALLOC_SO:+, jemalloc $JEMALLOC_SO}"
            ;;
        tcl)
            want="${TCLSH:-tclsh}"
            TCLSH="$(command -v "$want" 2>/dev/null)" || { version="no $want on PATH"; return 1; }
            JEMALLOC_SO="$(jemalloc_so)"
            v="Tcl $(echo 'puts [info patchlevel]' | "$TCLSH") ($TCLSH)${JEMALLOC_SO:+, jemalloc $JEMALLOC_SO}"
            ;;
    esac
    export GO PYTHON NODE LUA JEMALLOC_SO JAVA PHP PERL TCLSH
    version="$v"
}

# runs_here EXPECTED: true when a gate row of EXPECTED runs on this
# machine; prints the platforms its rows name.
runs_here() {
    local runs p r
    runs="$(awk -F'\t' '!/^#/ && NF && $1 != "gate" { print $2 }' "$1" | sort -u | tr '\n' ' ')"
    echo "${runs% }"
    for r in $runs; do
        for p in $platforms; do [[ "$p" == "$r" ]] && return 0; done
    done
    return 1
}

# build RUNTIME: compiles what the runtime needs compiled (Go only).
build() {
    [[ "$1" == go ]] || return 0
    if ! (cd "$here/go" && "$GO" build -o "$RUNTIMES_BIN/go-rounds" rounds.go) 2>"$out/go.build.log"; then
        cat "$out/go.build.log" >&2
        echo "run.sh: go: rounds.go does not build" >&2
        return 1
    fi
    rm -f "$out/go.build.log"
}

status=0
skipped=()
summary="$out/summary.md"
{
    echo "# What the kit finds in language runtimes"
    echo
    echo "Platforms: $platforms. Each matrix: gates/kit/runtimes/<runtime>/ (why each cell is that colour: gates/kit/runtimes/README.md)."
} >"$summary"
for rt in "${runtimes[@]}"; do
    echo
    echo "=== $rt"
    rm -rf "${out:?}/$rt"
    mkdir -p "$out/$rt"
    if ! runs="$(runs_here "$here/$rt/expected.tsv")"; then
        echo "run.sh: $rt: n/a here: its gate runs on $runs only, and this machine is: $platforms (not run, not a pass)"
        printf '\n## %s\n\nn/a: the gate runs on %s only; this machine is %s. Not run, and not counted as a pass.\n' \
            "$rt" "$runs" "$platforms" >>"$summary"
        skipped+=("$rt")
        continue
    fi
    if ! find_runtime "$rt"; then
        echo "run.sh: $rt: n/a here: $version (ci/install-deps.sh runtimes installs it; not run, not a pass)"
        printf '\n## %s\n\nn/a: %s (ci/install-deps.sh runtimes installs it). Not run, and not counted as a pass.\n' \
            "$rt" "$version" >>"$summary"
        skipped+=("$rt")
        continue
    fi
    echo "run.sh: $rt: $version"
    if ! build "$rt"; then
        status=1
        printf '\n## %s: FAILED\n\n%s. The program does not build (see the log of make gate).\n' "$rt" "$version" >>"$summary"
        continue
    fi
    rc=0
    "$gbgate" matrix --expected "$here/$rt/expected.tsv" --builds "$here/$rt/builds.tsv" \
        --out "$out/$rt" || rc=$?
    if ((rc != 0)); then
        status=1
        echo "run.sh: $rt: the matrix has a wrong cell or could not run (gbgate matrix exited $rc)" >&2
    fi
    printf '\n## %s%s\n\n%s.\n\n' "$rt" "$( ((rc == 0)) || echo ": FAILED")" "$version" >>"$summary"
    if [[ -f "$out/$rt/matrix.md" ]]; then
        cat "$out/$rt/matrix.md" >>"$summary"
    else
        echo "No matrix: gbgate matrix exited $rc before writing one." >>"$summary"
    fi
done
echo
echo "run.sh: wrote $summary"
((${#skipped[@]} == 0)) || echo "run.sh: n/a here, not run and not passed: ${skipped[*]}"
if ((status != 0)); then
    echo "run.sh: FAILED: a runtime's matrix has a wrong cell or did not run" >&2
fi
exit "$status"
