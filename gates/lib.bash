# lib.bash -- running a gate program under the guard, one checkpoint at a time.
#
# A gate program stops itself (SIGSTOP) at each checkpoint; gate_next waits
# for that, reading nothing but ps, and the test reads the resident size
# from outside before gate_continue lets it go on. While it waits, the guard
# kills the program past GUARD_RSS_KIB or GUARD_SECONDS, so a runaway is a
# red cell with a reason, never a hung run or a dead machine. Each test
# records its cell (gate, build, pass/fail, reason, figure) in GATE_RESULTS
# for the kill matrix (ci/gate.sh).
#
# Environment: GATE_BIN_DIR (the gate programs), GATE_BUILD (clean or a
# poison), GATE_RESULTS (the results file; optional).

# GATE_REASON and the other GATE_* globals are read by the .bats files.
# shellcheck disable=SC2034
# shellcheck source=gates/gates.conf
source "$(dirname "${BASH_SOURCE[0]}")/gates.conf"

gate_setup() {
    : "${GATE_BIN_DIR:?GATE_BIN_DIR must name the directory of the gate programs}"
    GATE_BUILD="${GATE_BUILD:-clean}"
    GATE_PID=
    GATE_OUT="${BATS_TEST_TMPDIR}/out"
    GATE_ERR="${BATS_TEST_TMPDIR}/err"
    # The resident size over time, for the charts: "<seconds>\t<KiB>".
    GATE_SERIES=
    if [[ -n "${GATE_SERIES_DIR:-}" ]]; then
        mkdir -p "${GATE_SERIES_DIR}"
        GATE_SERIES="${GATE_SERIES_DIR}/${BATS_TEST_DESCRIPTION}__${GATE_BUILD}.tsv"
        : >"${GATE_SERIES}"
    fi
}

# Seconds since the program started, to the millisecond where bash can.
gate_elapsed() {
    if [[ -n "${EPOCHREALTIME:-}" ]]; then
        awk -v a="${GATE_T0}" -v b="${EPOCHREALTIME}" 'BEGIN { printf "%.3f", b - a }'
    else
        echo "$((SECONDS - GATE_STARTED))"
    fi
}

gate_teardown() {
    if [[ -n "${GATE_PID}" ]] && kill -0 "${GATE_PID}" 2>/dev/null; then
        kill -KILL "${GATE_PID}" 2>/dev/null || true
        wait "${GATE_PID}" 2>/dev/null || true
    fi
}

# The gate program of this build; "library" picks the library build.
gate_bin() {
    local suffix=""
    [[ "${1:-}" == library ]] && suffix="-library"
    echo "${GATE_BIN_DIR}/gateprog-${GATE_BUILD}${suffix}"
}

# Which platforms this machine is: linux or macos, and glibc.
gate_platform_is() {
    case "$1" in
        all) return 0 ;;
        linux) [[ "$(uname -s)" == Linux ]] ;;
        macos) [[ "$(uname -s)" == Darwin ]] ;;
        glibc) getconf GNU_LIBC_VERSION >/dev/null 2>&1 ;;
        *) return 1 ;;
    esac
}

# Starts a gate program in the background (fd 3, bats' own, closed).
gate_start() {
    "$@" >"${GATE_OUT}" 2>"${GATE_ERR}" 3>&- &
    GATE_PID=$!
    GATE_STARTED=${SECONDS}
    GATE_T0="${EPOCHREALTIME:-}"
    GATE_PEAK_KIB=0
}

gate_rss_kib() {
    local v
    v="$(ps -o rss= -p "${GATE_PID}" 2>/dev/null | tr -d ' ')"
    echo "${v:-0}"
}

# Pages given back with MADV_FREE still count in RSS: shown beside it.
gate_lazyfree_kib() {
    local f="/proc/${GATE_PID}/smaps_rollup"
    if [[ -r "$f" ]]; then
        awk '/^LazyFree:/ { print $2; found = 1 } END { if (!found) print 0 }' "$f"
    else
        echo 0
    fi
}

# Peak resident size from outside, where the OS keeps it (Linux VmHWM).
gate_hwm_kib() {
    local f="/proc/${GATE_PID}/status"
    if [[ -r "$f" ]]; then
        awk '/^VmHWM:/ { print $2 }' "$f"
    else
        echo "${GATE_PEAK_KIB}"
    fi
}

# Waits for the next checkpoint. Returns 0 when the program stopped there
# (GATE_CHECKPOINT holds its line), 1 when it exited (GATE_STATUS holds the
# exit status), 2 when the guard killed it (GATE_REASON says why).
gate_next() {
    local stat rss
    while :; do
        stat="$(ps -o stat= -p "${GATE_PID}" 2>/dev/null | tr -d ' ')"
        case "${stat}" in
            T*)
                GATE_CHECKPOINT="$(grep '^checkpoint ' "${GATE_OUT}" | tail -n 1)"
                [[ -n "${GATE_SERIES}" ]] && printf '%s\t%s\n' "$(gate_elapsed)" "$(gate_rss_kib)" >>"${GATE_SERIES}"
                return 0
                ;;
            "" | Z*)
                GATE_STATUS=0
                wait "${GATE_PID}" || GATE_STATUS=$?
                GATE_PID=
                return 1
                ;;
        esac
        rss="$(gate_rss_kib)"
        ((rss > GATE_PEAK_KIB)) && GATE_PEAK_KIB=${rss}
        [[ -n "${GATE_SERIES}" ]] && printf '%s\t%s\n' "$(gate_elapsed)" "${rss}" >>"${GATE_SERIES}"
        if ((rss > GUARD_RSS_KIB)); then
            GATE_REASON="guard: killed at $((rss / 1024)) MiB resident, over the guard's $((GUARD_RSS_KIB / 1024)) MiB"
            gate_teardown
            GATE_PID=
            return 2
        fi
        if ((SECONDS - GATE_STARTED > GUARD_SECONDS)); then
            GATE_REASON="guard: killed after ${GUARD_SECONDS} s, the guard's time cap"
            gate_teardown
            GATE_PID=
            return 2
        fi
        sleep 0.05
    done
}

gate_continue() {
    kill -CONT "${GATE_PID}"
}

# Lets the program run to its end; fails unless it exits 0.
gate_finish() {
    local rc
    gate_continue
    gate_next && rc=0 || rc=$?
    if ((rc == 0)); then
        GATE_REASON="the program stopped at an unexpected checkpoint: ${GATE_CHECKPOINT}"
        return 1
    fi
    ((rc == 2)) && return 1
    if ((GATE_STATUS != 0)); then
        GATE_REASON="the program exited with status ${GATE_STATUS}: $(tail -n 3 "${GATE_ERR}" "${GATE_OUT}" | tr '\n' ' ')"
        return 1
    fi
    return 0
}

# A figure from the last checkpoint line: gate_field key.
gate_field() {
    tr ' ' '\n' <<<"${GATE_CHECKPOINT}" | awk -F= -v k="$1" '$1 == k { print $2 }'
}

# Records this cell: gate_record <gate> <pass|fail> <reason> <figure>.
gate_record() {
    if [[ -n "${GATE_RESULTS:-}" ]]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$1" "${GATE_BUILD}" "$2" "$3" "$4" >>"${GATE_RESULTS}"
    fi
}

# Records a pass, or records a failure and fails the test with the message.
gate_pass() {
    gate_record "$1" pass - "$2"
}

gate_fail() {
    gate_record "$1" fail "$2" "$3"
    echo "# $1 (${GATE_BUILD}): red, $2: $3" >&3
    return 1
}

# The two readings of a checkpoint, judged against a cap. gate_judge
# <gate> <cap KiB> <what>: reads the resident size and LazyFree from
# outside, and held_kib (what the runtime's own counters say it holds)
# from the checkpoint line; sets GATE_RSS, GATE_LAZY and GATE_HELD. Over
# the cap, the cell is red for the reading that explains it:
#   lazy-free       pages given back with MADV_FREE still count (LazyFree
#                   on Linux; on macOS, where no file shows them, the
#                   process's own phys_footprint is under the cap);
#   retained-below  the runtime holds less than the cap, the process far
#                   more: given back by the runtime, kept by the allocator
#                   under it (every counter reads zero, ps does not);
#   rss             the runtime itself holds it.
gate_judge() {
    local gate="$1" cap="$2" what="$3"
    GATE_RSS="$(gate_rss_kib)"
    GATE_LAZY="$(gate_lazyfree_kib)"
    GATE_HELD="$(gate_field held_kib)"
    GATE_HELD="${GATE_HELD:-0}"
    ((GATE_RSS <= cap)) && return 0
    local over
    over="$(mib "${GATE_RSS}") resident, the runtime holds $(mib "${GATE_HELD}"), over $(mib "${cap}")"
    local footprint
    footprint="$(gate_field footprint_self)"
    if ((GATE_LAZY > 0 && GATE_RSS - GATE_LAZY <= cap)); then
        gate_fail "${gate}" lazy-free "${what}: ${over}; $(mib "${GATE_LAZY}") of it is LazyFree (given back with MADV_FREE, still counted)"
    elif gate_platform_is macos && ((${footprint:-0} > 0 && footprint <= cap)); then
        gate_fail "${gate}" lazy-free "${what}: ${over}; the footprint is $(mib "${footprint}"): the rest was given back lazily, still counted"
    elif ((GATE_RSS - GATE_HELD > cap)); then
        gate_fail "${gate}" retained-below "${what}: ${over}: given back by the runtime, kept by the allocator under it"
    else
        gate_fail "${gate}" rss "${what}: ${over}"
    fi
}

# A figure with both readings: "<rss> (runtime <held>)".
gate_readings() {
    echo "$(mib "${GATE_RSS}") (runtime $(mib "${GATE_HELD}"))"
}

# The rounds gate: a scenario that stops after each of its rounds (three
# leaves of a region, a phase of threads, ...). After every round the
# resident size must be under the cap (judged with both readings, above),
# and the last round no higher than the first beyond ROUND_GROWTH_KIB:
# glibc's ratchet only shows from round two on. gate_rounds <gate> <cap
# KiB> <rounds> <program> <scenario>; GB_BLOCKS and the like come from the
# caller's environment (the failsafe runs it on a scenario that never
# leaves).
gate_rounds() {
    local gate="$1" cap="$2" rounds="$3" bin="$4" scenario="$5"
    local round first=0 worst=0 worst_held=0 figures=""
    gate_start "${bin}" "${scenario}"
    for ((round = 1; round <= rounds; round++)); do
        if ! gate_next; then
            gate_fail "${gate}" guard "${GATE_REASON:-exited before round ${round} (status ${GATE_STATUS:-?}): $(tail -n 2 "${GATE_OUT}" | tr '\n' ' ')}"
        fi
        gate_judge "${gate}" "${cap}" "round ${round} of ${rounds}, after leave" || return 1
        figures="${figures} r${round}=$(mib "${GATE_RSS}")"
        ((round == 1)) && first=${GATE_RSS}
        if ((GATE_RSS >= worst)); then
            worst=${GATE_RSS}
            worst_held=${GATE_HELD}
        fi
        gate_continue
    done
    gate_finish || gate_fail "${gate}" exit "${GATE_REASON}"
    if ((rounds > 1 && GATE_RSS > first + ROUND_GROWTH_KIB)); then
        gate_fail "${gate}" growth "grew across rounds:${figures}"
    fi
    GATE_RSS=${worst}
    GATE_HELD=${worst_held}
    gate_pass "${gate}" "$(gate_readings)"
}

# The article's gate: three rounds of a 400 MB region under its 64 MiB cap.
# gate_region_rounds <gate> <GB_BLOCKS> <program> [<scenario>].
gate_region_rounds() {
    GB_BLOCKS="$2" gate_rounds "$1" "${RSS_CAP_KIB}" 3 "$3" "${4:-region-400mb}"
}

mib() {
    awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'
}
