#!/usr/bin/env bats
# options.bats -- ci/options.sh, which makes the README's list of options
# from the runtime's table of them (gb__options, runtime/src/init.c): it
# reads the table as the compiler does (OPTIONS_TABLE, the program that
# prints the compiled table), the README's list passes --check, and a list
# or a header that says otherwise fails it, naming the option. On copies
# written here. ctest runs it as options.script; by hand:
# OPTIONS_TABLE=build/debug/tests/options_table bats tests/options.bats.
#
# The backquotes in single quotes below are the README's markdown, not
# commands.
# shellcheck disable=SC2016
bats_require_minimum_version 1.8.0

setup() {
    ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
    T="$BATS_TEST_TMPDIR"
}

@test "options.sh --tsv reads the table as the compiler does" {
    [[ -n "${OPTIONS_TABLE:-}" ]] || skip "OPTIONS_TABLE names no program that prints the compiled table"
    run -0 "$OPTIONS_TABLE"
    compiled="$output"
    run -0 "$ROOT/ci/options.sh" --tsv
    [[ "$output" == "$compiled" ]] || { diff <(echo "$compiled") <(echo "$output"); false; }
    # Every option, not none: as many rows as the table has.
    [[ "$(wc -l <<<"$output")" -ge 10 ]]
}

@test "options.sh --check: the README's list and the header's words are the table's" {
    run -0 "$ROOT/ci/options.sh" --check
    [[ "$output" == *"are the table's"* ]]
}

@test "options.sh --check fails on a README without an option's line, naming it" {
    grep -v '^| `GB_STRESS`' "$ROOT/README.md" >"$T/README.md"
    GB_OPTIONS_README="$T/README.md" run -1 "$ROOT/ci/options.sh" --check
    [[ "$output" == *'the table: | `GB_STRESS` | `stress`'* ]]
}

@test "options.sh --check fails on a README whose line says another default, naming both" {
    sed 's/^| `GB_SMALL` | `small` | \(.*\) | `slab` |/| `GB_SMALL` | `small` | \1 | `malloc` |/' \
        "$ROOT/README.md" >"$T/README.md"
    run -1 cmp -s "$ROOT/README.md" "$T/README.md"
    GB_OPTIONS_README="$T/README.md" run -1 "$ROOT/ci/options.sh" --check
    [[ "$output" == *'the table: | `GB_SMALL` | `small` |'*'| `slab` |'* ]]
    [[ "$output" == *'README.md: | `GB_SMALL` | `small` |'*'| `malloc` |'* ]]
}

@test "options.sh --check fails on a header that gives a variable other words, naming it" {
    sed 's/GB_HUGE (on|off|auto)/GB_HUGE (on|off)/' "$ROOT/runtime/include/giveback.h" >"$T/giveback.h"
    GB_OPTIONS_HEADER="$T/giveback.h" run -1 "$ROOT/ci/options.sh" --check
    [[ "$output" == *'does not say "GB_HUGE (on|off|auto)", the words of option huge'* ]]
}

@test "options.sh rewrites a stale list from the table, and --print changes nothing" {
    awk '/^<!-- options:begin -->$/ { print; skip = 1; next } /^<!-- options:end -->$/ { skip = 0 } !skip' \
        "$ROOT/README.md" >"$T/README.md"
    cp "$T/README.md" "$T/stale.md"
    GB_OPTIONS_README="$T/README.md" run -0 "$ROOT/ci/options.sh" --print
    cmp -s "$T/README.md" "$T/stale.md"
    GB_OPTIONS_README="$T/README.md" run -1 "$ROOT/ci/options.sh" --check
    GB_OPTIONS_README="$T/README.md" run -0 "$ROOT/ci/options.sh"
    cmp -s "$T/README.md" "$ROOT/README.md"
}

@test "options.sh fails on a table it cannot read" {
    printf 'int x;\n' >"$T/init.c"
    GB_OPTIONS_SRC="$T/init.c" run -2 "$ROOT/ci/options.sh" --tsv
    [[ "$output" == *"could not read the table of options"* ]]
}
