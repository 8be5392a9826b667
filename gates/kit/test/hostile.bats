#!/usr/bin/env bats
# hostile.bats -- what a program prints is data: a corpus of hostile
# lines, each printed by a program that then stops itself as a checkpoint
# does, each given a verdict by the runner, none with a side effect.
#
# The runner checks every line of the protocol against its grammar (the
# kit's README.md, "The protocol") before it uses anything of it: a line
# that breaks it is red for protocol, naming the line and the field; a
# figure the runner reads (held_kib, footprint_kib) is an unsigned decimal
# number, a fraction rounded. The lines come from a file, byte for byte, so
# NUL, tabs and bytes of no encoding reach the runner as a program would
# print them. Each command a line would run, were it evaluated, creates a
# file: none may exist after the run. Run by ci/gate.sh with the kit's other
# tests; by hand: bats gates/kit/test/hostile.bats.
# The lines hold $(...), backticks and ${IFS} on purpose, in single quotes:
# they must reach the runner unexpanded.
# shellcheck disable=SC2016
bats_require_minimum_version 1.8.0

load helpers

setup_file() {
    local dir kit
    dir="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    kit="$(dirname "${dir}")"
    "${CC:-cc}" -std=c99 -O1 -Wall -Wextra -Werror -I"${kit}" -o "${BATS_FILE_TMPDIR}/reader" \
        "${dir}/reader.c" "${kit}/gbgate_reader.c"
}

setup() {
    kit_paths
    EMIT="${BATS_TEST_TMPDIR}/emit"
    # The subject: prints the bytes of its argument, a file, then stops
    # itself under the runner, as a checkpoint does, and exits.
    printf '#!/usr/bin/env bash\ncat "$1"\n[[ "${GBGATE:-}" == stop ]] && kill -STOP $$\nexit 0\n' >"${EMIT}"
    chmod +x "${EMIT}"
    PWNED="${BATS_TEST_TMPDIR}/pwned"
}

# judge BYTES [RUN OPTIONS...]: the runner's verdict on a program that
# prints BYTES (printf's escapes: \t, \000, \377; @PWNED@ the file a
# command would create) and stops; under a cap of 1 MiB, which every
# program here is over, so that the figures are used.
judge() {
    local bytes="${1//@PWNED@/${PWNED}}"
    shift
    # shellcheck disable=SC2059 # the escapes are the point
    printf "${bytes}" >"${BATS_TEST_TMPDIR}/line"
    run "${KIT_GBGATE}" run --cap 1MiB "$@" -- "${EMIT}" "${BATS_TEST_TMPDIR}/line"
    echo "$output"
    [ ! -e "${PWNED}" ] || {
        echo "the line ran a command: ${PWNED} exists"
        false
    }
}

# protocol_red WHAT: the run was red for protocol, the reason naming WHAT.
protocol_red() {
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): line 1 of its output, the 1st line of the protocol: "*"$1"* ]] || false
}

@test "a command substitution in a figure is not run: red for protocol" {
    judge 'checkpoint x held_kib=rss[$(touch${IFS}@PWNED@)]\n'
    protocol_red 'held_kib="rss[$(touch${IFS}'
}

@test "a command substitution, backticks and a subscript in other figures are data, carried as they are" {
    # The program's own figures are its business: kept, printed, never run.
    judge 'checkpoint x note=$(touch${IFS}@PWNED@) tick=`touch${IFS}@PWNED@` arr=a[$(touch${IFS}@PWNED@)]\n'
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at x: "* ]] || false
    [[ "$output" == *' note=$(touch${IFS}'*' tick=`touch${IFS}'* ]] || false
}

@test "backticks and a subscript in held_kib are red for protocol" {
    judge 'checkpoint x held_kib=`touch${IFS}@PWNED@`\n'
    protocol_red 'held_kib="`touch${IFS}'
    judge 'checkpoint x held_kib=a[$(touch${IFS}@PWNED@)]\n'
    protocol_red 'held_kib="a[$(touch${IFS}'
    judge 'checkpoint x footprint_kib=$((1<<62))\n'
    protocol_red 'footprint_kib="$((1<<62))" is not an unsigned decimal number'
}

@test "NaN, inf, negatives, hexadecimal, exponents and 30 digits are not figures" {
    local v
    for v in NaN nan inf -inf -999999 0x10 1e9 +5 '' 123456789012345678901234567890 1.2.3 .5 5.; do
        judge "checkpoint x held_kib=${v}\n"
        protocol_red "held_kib=\"${v}\" is not an unsigned decimal number of at most 15 digits"
    done
}

@test "a fraction is a figure, rounded to the nearest KiB" {
    # What x / 1024 prints in Python or JavaScript: 4000.5 is 4001 KiB, and
    # judged as such (here held beyond the resident size: the reason is rss).
    judge 'checkpoint x held_kib=4000.5\n'
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at x: "*", the runtime holds 3.9 MiB, over the cap of 1.0 MiB" ]] || false
    # A small held figure with a fraction: retained-below, by the rounded figure.
    judge 'checkpoint x held_kib=0.49\n'
    [[ "$(verdict)" == "gate: fail (retained-below): at x: "*", the runtime holds 0.0 MiB, "* ]] || false
    judge 'checkpoint x held_kib=000000000000512\n'
    [[ "$(verdict)" == "gate: fail (retained-below): at x: "*", the runtime holds 0.5 MiB, "* ]] || false
}

@test "a line of the protocol is one space between fields, a name, and KEY=VALUE pairs" {
    judge 'checkpoint  x\n'
    protocol_red 'has two spaces together: fields are separated by one space'
    judge 'checkpoint x \n'
    protocol_red 'has a space at its end: fields are separated by one space'
    judge 'checkpoint x extra words\n'
    protocol_red 'the field "extra" is not KEY=VALUE'
    judge 'checkpoint\tx\n'
    protocol_red 'byte 11 is not printable ASCII'
    judge 'checkpoint x\ta=1\n'
    protocol_red 'byte 13 is not printable ASCII'
    judge 'checkpoint\n'
    protocol_red '"checkpoint" names no checkpoint'
    judge 'checkpoint a/b\n'
    protocol_red 'the name "a/b" is not 1 to 64 letters, digits'
    judge 'checkpoint x 9a=1\n'
    protocol_red 'the key "9a" is not a letter'
    judge 'checkpoint x =1\n'
    protocol_red 'the key "" is not a letter'
    judge 'checkpoint x a=1 a=2\n'
    protocol_red 'the key "a" is given twice'
    judge "checkpoint $(printf 'n%.0s' {1..65})\n"
    protocol_red 'is not 1 to 64 letters'
}

@test "NUL, bytes of no encoding and UTF-8 are not the protocol's printable ASCII" {
    judge 'checkpoint x\000y\n'
    protocol_red 'byte 13 is not printable ASCII'
    judge 'checkpoint x note=\377\376\n'
    protocol_red 'byte 19 is not printable ASCII'
    judge 'checkpoint caf\303\251\n'
    protocol_red 'byte 15 is not printable ASCII'
    judge 'checkpoint x held_kib=12\000345\n'
    protocol_red 'byte 25 is not printable ASCII'
}

@test "a line of 64 KiB is too long, and a value of more than 256 bytes" {
    judge "checkpoint x note=$(head -c 65536 /dev/zero | tr '\0' a)\n"
    protocol_red 'it is 65554 bytes long, more than the 4096 a line may be'
    judge "checkpoint x note=$(head -c 257 /dev/zero | tr '\0' a)\n"
    protocol_red 'the value of note is 257 bytes long, more than 256'
}

@test "the reserved words begin a line of the protocol, followed by a blank or alone; other lines are the program's" {
    # Its own output may hold anything that is not a line of the protocol.
    judge 'checkpointing $(touch${IFS}@PWNED@)\nsettledness \000\377\ncheckpoint x\n'
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at x: "* ]] || false
    # A line of its own output that begins with the reserved word is the
    # protocol's, and printed with no stop of its own it is named as such.
    judge 'checkpoint of my own data\ncheckpoint x\n'
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): at stop 1 it had printed 2 checkpoint lines: "*"or a line of its own output that begins with \"checkpoint\" or \"settled\", which the protocol reserves"* ]] || false
}

@test "a settled line keeps the grammar too" {
    # The runner exports GBGATE_SETTLE_S; the subject prints its checkpoint,
    # stops, then prints a settled line that breaks the grammar and stops.
    printf '#!/usr/bin/env bash\nprintf "checkpoint x\\n"; kill -STOP $$\nprintf "settled x held_kib=NaN\\n"; kill -STOP $$\n' >"${EMIT}"
    judge '' --settle 0.1
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): line 2 of its output, the 2nd line of the protocol: held_kib=\"NaN\" is not an unsigned decimal number"* ]] || false
}

@test "a gate written in bats reads the figures as the runner does" {
    # gate.bash's gate_judge: the held figure rounded, a bad one never used.
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    GK_OUT="${BATS_TEST_TMPDIR}/out"
    printf 'checkpoint x held_kib=1024.5 footprint_kib=7\n' >"${GK_OUT}"
    line="$(gk_line_at 1)"
    [ "$(gk_figure "$line" held_kib)" = 1025 ]
    [ "$(gk_figure "$line" footprint_kib)" = 7 ]
    [ -z "$(gk_figure "$line" missing_kib)" ]
    # shellcheck disable=SC2016 # the line as a program would print it
    printf 'checkpoint x held_kib=rss[$(touch${IFS}%s)]\n' "${PWNED}" >"${GK_OUT}"
    run gk_line_at 1
    [ "$status" -eq 1 ]
    [[ "$output" == *'held_kib="rss[$(touch${IFS}'* ]] || false
    [ ! -e "${PWNED}" ]
}

@test "the C reader keeps the same grammar as the shell's" {
    # Each line judged by both: the shell's gk_line_at and the C reader's
    # gbgate_line_check must keep or break it alike.
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    GK_OUT="${BATS_TEST_TMPDIR}/out"
    local corpus="${BATS_TEST_TMPDIR}/corpus" i=0 shell c line
    printf '%b\n' 'checkpoint x' 'checkpoint x held_kib=4000.5 footprint_kib=12' 'settled x-1.y_z a=b=c' \
        'checkpoint x held_kib=NaN' 'checkpoint x held_kib=-1' 'checkpoint x held_kib=1e9' \
        'checkpoint x held_kib=1234567890123456' 'checkpoint x held_kib=5.' 'checkpoint  x' 'checkpoint x ' \
        'checkpoint\tx' 'checkpoint x a=1 a=2' 'checkpoint x 9a=1' 'checkpoint x =1' 'checkpoint x y' \
        'checkpoint' 'settled' 'checkpoint a/b' 'checkpoint x\0001' 'checkpoint x n=\377' \
        "checkpoint $(printf 'n%.0s' {1..65})" "checkpoint x n=$(head -c 257 /dev/zero | tr '\0' a)" \
        "checkpoint x n=$(head -c 5000 /dev/zero | tr '\0' a)" >"${corpus}"
    while IFS= read -r line; do
        i=$((i + 1))
        printf '%s\n' "$line" >"${GK_OUT}"
        shell=ok
        gk_line_at 1 >/dev/null || shell="break"
        c="$(printf '%s\n' "$line" | "${BATS_FILE_TMPDIR}/reader" --check)"
        echo "line $i: shell $shell, C ${c}"
        [ "${c%% *}" = "$shell" ]
    done < <(LC_ALL=C tr '\000' '\001' <"${corpus}")
    [ "$i" -eq 23 ]
}

@test "the C reader names what breaks a line, as the shell's does" {
    # Line, then the words both readers' reasons must hold: the rule the
    # line breaks, not only that it breaks one.
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    GK_OUT="${BATS_TEST_TMPDIR}/out"
    local line want c shell n=0
    while IFS='|' read -r line want; do
        n=$((n + 1))
        line="$(printf '%b' "$line")"
        printf '%s\n' "$line" >"${GK_OUT}"
        shell="$(gk_line_at 1 || true)"
        c="$(printf '%s\n' "$line" | "${BATS_FILE_TMPDIR}/reader" --check)"
        echo "$line: shell: $shell; C: $c"
        if [[ "$want" == ok ]]; then
            [[ "$c" == ok && "$shell" == "$line" ]] || false
        else
            [[ "$c" == "break "*"$want"* && "$shell" == *"$want"* ]] || false
        fi
    done <<'LINES'
checkpoint x  a=1|two spaces together
checkpoint x a=1 |a space at its end
checkpoint x\ta=1|not printable ASCII
checkpoint|names no checkpoint
settled|names no checkpoint
checkpoint x.y/z|is not 1 to 64 letters
checkpoint x a|is not KEY=VALUE
checkpoint x k.x=1|is not a letter or "_" followed by letters, digits and "_"
checkpoint x 1k=1|is not a letter or "_" followed by letters, digits and "_"
checkpoint x a=1 b=2 a=3|is given twice
checkpoint x a=1 ab=2 b=3|ok
checkpoint x held_kib=12a|not an unsigned decimal number
checkpoint x footprint_kib=1234567890123456|not an unsigned decimal number
LINES
    [ "$n" -eq 13 ]
}

@test "the C reader, gating a program, names a line that breaks the grammar, NUL included" {
    # The program prints its line and stops itself, as a checkpoint does;
    # the reader pairs the stop with the line and checks it.
    printf 'checkpoint x held_kib=1\n' >"${BATS_TEST_TMPDIR}/line"
    run "${BATS_FILE_TMPDIR}/reader" --run "${EMIT}" "${BATS_TEST_TMPDIR}/line"
    echo "$output"
    [ "$output" = "protocol exact" ]
    printf 'checkpoint x held_kib=NaN\n' >"${BATS_TEST_TMPDIR}/line"
    run "${BATS_FILE_TMPDIR}/reader" --run "${EMIT}" "${BATS_TEST_TMPDIR}/line"
    echo "$output"
    [[ "$output" == "protocol the line of stop 1 breaks the protocol's grammar: held_kib at byte 14 is not an unsigned decimal number"* ]] || false
    # A NUL in the line is a byte the grammar refuses, not the line's end.
    printf 'checkpoint x\000y\n' >"${BATS_TEST_TMPDIR}/line"
    run "${BATS_FILE_TMPDIR}/reader" --run "${EMIT}" "${BATS_TEST_TMPDIR}/line"
    echo "$output"
    [[ "$output" == "protocol the line of stop 1 breaks the protocol's grammar: byte 13 is not printable ASCII"* ]] || false
}
