# shellcheck shell=bash
# gate.bash -- the kit for gates written in bats.
#
# Most gates are a row of a gates file that gbgate runs itself: a program,
# a cap, a growth bound. A gate that must judge something else (a ratio of
# two figures, a line the program prints, a fault in a child) is a bats
# test that reads the program through this library: the same reader, guard
# and judge as gbgate run (gbgate.bash), and the same cells in the matrix.
#
# In a .bats file:
#
#     setup() { load "${GATE_KIT:-kit}/gate"; gate_setup; }
#     teardown() { gate_teardown; }
#     @test "my-gate" {            # the name is the gate's, as in the files
#         gate_cmd program         # the build's command for the role "program"
#         gate_start "${GATE_CMD[@]}" my-scenario
#         gate_wait || return 1    # the first checkpoint (red if none)
#         gate_judge "$(gate_opt_kib cap)" "after the leave" || return 1
#         gate_finish || return 1  # the program ends, with status 0
#         gate_pass "$(gate_readings)"
#     }
#
# gbgate matrix runs the test on each build with, in the environment:
# GATE_BUILD (the build), GATE_BUILDS_FILE and GATE_GATES_FILE (the files;
# by default builds.tsv and gates.tsv beside the .bats file), GATE_RESULTS
# (where the cells go; optional), GATE_SERIES_DIR (where the resident size
# over time goes; optional) and GATE_KIT (this folder). Run by hand, a test
# needs GATE_BUILD at least: GATE_BUILD=clean bats my.bats.
#
# The gate's row of the gates file gives its options: --guard-rss,
# --guard-cpu and --guard-s set the guard, --cap is the cap its chart
# draws, and any other --name value is the test's own, read with gate_opt
# and gate_opt_kib.

# GATE_* are this library's interface to the .bats files.
# shellcheck disable=SC2034
# shellcheck source=gates/kit/gbgate.bash
source "$(dirname "${BASH_SOURCE[0]}")/gbgate.bash"

# gate_setup: call from setup(). Reads the gate's row, sets the guard and
# the files of this test.
gate_setup() {
    : "${GATE_BUILD:?GATE_BUILD must name the build to gate (gbgate matrix sets it)}"
    GATE_NAME="${BATS_TEST_DESCRIPTION}"
    GATE_GATES_FILE="${GATE_GATES_FILE:-${BATS_TEST_DIRNAME}/gates.tsv}"
    GATE_BUILDS_FILE="${GATE_BUILDS_FILE:-${BATS_TEST_DIRNAME}/builds.tsv}"
    GATE_OPTIONS=""
    local row
    row="$(gk_table_row "${GATE_GATES_FILE}" "${GATE_NAME}" 2>/dev/null || true)"
    if [[ -n "$row" ]]; then
        GATE_OPTIONS="$(cut -f4 <<<"$row")"
        [[ "$GATE_OPTIONS" == - ]] && GATE_OPTIONS=""
    fi
    GK_GUARD_RSS_KIB=$GK_DEFAULT_GUARD_RSS_KIB
    [[ -z "$(gate_opt guard-rss)" ]] || GK_GUARD_RSS_KIB="$(gate_opt_kib guard-rss)"
    GK_GUARD_CPU_S="$(gate_opt guard-cpu "$GK_DEFAULT_GUARD_CPU_S")"
    GK_GUARD_S="$(gate_opt guard-s "$GK_DEFAULT_GUARD_S")"
    GATE_PID=
    GK_PID=
    GATE_OUT="${BATS_TEST_TMPDIR}/out"
    GATE_ERR="${BATS_TEST_TMPDIR}/err"
    local series=""
    [[ -n "${GATE_SERIES_DIR:-}" ]] && series="${GATE_SERIES_DIR}/${GATE_NAME}__${GATE_BUILD}.tsv"
    gk_series_begin "$series" "$GATE_NAME" "$GATE_BUILD" "$(gate_opt_kib cap 0KiB)"
}

# gate_teardown: call from teardown(). The program must not outlive its test.
gate_teardown() {
    gk_kill
    GATE_PID=
}

# gate_opt NAME [DEFAULT]: the value of --NAME in the gate's options.
gate_opt() {
    local v
    v="$(gk_option "$GATE_OPTIONS" "$1")"
    echo "${v:-${2:-}}"
}

# gate_opt_kib NAME [DEFAULT]: the same, a size, in KiB. A gate whose
# option is missing and has no default, or is not a size, is an error in
# the gates file: the test fails saying so rather than judge against 0.
gate_opt_kib() {
    local v
    v="$(gate_opt "$1" "${2:-}")"
    [[ -n "$v" ]] || {
        echo "gate.bash: the gate ${GATE_NAME} has no --$1 in ${GATE_GATES_FILE}" >&2
        return 1
    }
    gk_size_kib "$v" || {
        echo "gate.bash: --$1 \"$v\" of ${GATE_NAME} is not a size (64MiB, 512KiB, 3GiB)" >&2
        return 1
    }
}

# gate_cmd ROLE: GATE_CMD is the build's command for ROLE (a column of the
# builds file), as words: gate_start "${GATE_CMD[@]}" ARGS...
gate_cmd() {
    gk_build_command "${GATE_BUILDS_FILE}" "${GATE_BUILD}" "$1" || return 1
    GATE_CMD=("${GK_COMMAND[@]}")
}

# The platform names (gbgate platforms): all, linux, macos, glibc.
gate_platform_is() {
    gk_platform_is "$1"
}

gate_mib() {
    gk_mib "$1"
}

# gate_start COMMAND...: starts the program under the guard, with GBGATE=stop.
gate_start() {
    gk_start "$GATE_OUT" "$GATE_ERR" "$@"
    GATE_PID=$GK_PID
}

# gate_next: waits for the next checkpoint. Returns 0 when the program
# stopped there (GATE_CHECKPOINT holds its line), 1 when it exited
# (GATE_STATUS holds its status), 2 when the kit killed it (GATE_REASON
# is guard-rss, guard-cpu, guard-time or protocol, GATE_DETAIL says at
# what).
gate_next() {
    local rc=0
    gk_next || rc=$?
    GATE_CHECKPOINT="$GK_LINE"
    GATE_STATUS="$GK_STATUS"
    GATE_REASON="$GK_REASON"
    GATE_DETAIL="$GK_DETAIL"
    GATE_PID="$GK_PID"
    return "$rc"
}

# gate_wait [WHAT]: waits for the next checkpoint; when there is none (the
# program ended, or the guard killed it), records the cell red (crash,
# guard-rss, guard-cpu or guard-time) and fails.
gate_wait() {
    local rc=0
    gate_next || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 2)); then
        gate_fail "$GATE_REASON" "${1:+$1: }$GATE_DETAIL"
    else
        gate_fail crash "${1:+$1: }it ended before the checkpoint: $(gk_exit_detail)"
    fi
}

gate_continue() {
    gk_continue
}

# gate_finish: lets the program run to its end; red (crash) unless it
# exits 0 without stopping again, or guard-* if the guard kills it.
gate_finish() {
    local rc=0
    gk_continue
    gate_next || rc=$?
    case "$rc" in
        0) gate_fail crash "the program stopped at an unexpected checkpoint: ${GATE_CHECKPOINT}" ;;
        2) gate_fail "$GATE_REASON" "$GATE_DETAIL" ;;
        *)
            ((GATE_STATUS == 0)) && return 0
            gate_fail crash "$(gk_exit_detail)"
            ;;
    esac
}

# Readings of the stopped program, from outside.
gate_rss_kib() { gk_rss_kib; }
gate_lazyfree_kib() { gk_lazyfree_kib; }
gate_hwm_kib() { gk_hwm_kib; }

# gate_field KEY: a figure from the last checkpoint line.
gate_field() {
    gk_field "$GATE_CHECKPOINT" "$1"
}

# gate_judge CAP_KIB WHAT: reads the stopped program's resident size and
# LazyFree from outside and held_kib and footprint_kib from its checkpoint
# line (GATE_RSS, GATE_LAZY, GATE_HELD; empty when the line has no held_kib),
# and judges them against the cap as gbgate run does (gk_judge: rss,
# retained-below or lazy-free); over it, records the cell red and fails.
gate_judge() {
    local cap="$1" what="$2"
    GATE_RSS="$(gk_rss_kib)"
    GATE_LAZY="$(gk_lazyfree_kib)"
    GATE_HELD="$(gk_figure "$GATE_CHECKPOINT" held_kib)"
    gk_judge "$cap" "$GATE_RSS" "$GATE_LAZY" "$GATE_HELD" "$(gk_figure "$GATE_CHECKPOINT" footprint_kib)" "$what" && return 0
    gate_fail "$GK_REASON" "$GK_DETAIL"
}

# gate_readings: the last judged reading, "<rss> (runtime <held>)", or
# "<rss>" when the program does not say what its runtime holds.
gate_readings() {
    if [[ -n "${GATE_HELD:-}" ]]; then
        echo "$(gk_mib "$GATE_RSS") (runtime $(gk_mib "$GATE_HELD"))"
    else
        gk_mib "$GATE_RSS"
    fi
}

# gate_record pass|fail REASON FIGURE: this test's cell, for the matrix.
gate_record() {
    if [[ -n "${GATE_RESULTS:-}" ]]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$GATE_NAME" "$GATE_BUILD" "$1" "$2" "${3//$'\t'/ }" >>"$GATE_RESULTS"
    fi
}

# gate_pass FIGURE: records the cell green.
gate_pass() {
    gate_record pass - "$1"
}

# gate_fail REASON DETAIL: records the cell red for REASON, says so on
# bats' output and fails the test.
gate_fail() {
    gate_record fail "$1" "$2"
    echo "# ${GATE_NAME} (${GATE_BUILD}): red, $1: $2" >&3
    return 1
}
