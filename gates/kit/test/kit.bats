#!/usr/bin/env bats
# kit.bats -- the kit's own tests: every verdict it can give, given.
#
# A gate that cannot go red proves nothing, so each ending of a gated
# program is produced on purpose by the test program (prog.c) and the
# kit's report of it checked: a pass, a cap exceeded (rss), a climb
# (growth, judged CPython's way), a runtime that holds nothing while the
# process holds it all (retained-below) or holds part of it (retained-below
# or rss, by the excess beyond it, the pages given back lazily taken out
# first: the judge on given figures and on a run), pages given back lazily
# (lazy-free, Linux; not read when judged as a platform without it), a
# crash, a program
# with no checkpoint, a checkpoint line not read while stopped there and a
# stop with no line (protocol), a wrapper that does not exec, no process
# left behind, the PSS and USS beside the resident size, the guard's kills
# for size, for CPU (a busy loop, in the program or a child of it; the
# budget per checkpoint interval) and for time (a hang), the same verdicts
# with the machine loaded by busy loops the test starts; then the
# matrix, right and wrong, with cells that differ by platform (the first
# colour that applies), reasons matched whole, the guard of a gate written
# in bats (the guard/ matrix), the failsafe (red over its cap for any
# reason the judge gives, and nothing else), the charts, and the C reader.
# Run by ci/gate.sh (make gate, make test's gate stage); by hand: bats
# gates/kit/test/kit.bats.
bats_require_minimum_version 1.8.0

setup_file() {
    local dir kit
    dir="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    kit="$(dirname "${dir}")"
    "${CC:-cc}" -std=c99 -O1 -Wall -Wextra -Werror -I"${kit}" -o "${BATS_FILE_TMPDIR}/prog" "${dir}/prog.c"
    "${CC:-cc}" -std=c99 -O1 -Wall -Wextra -Werror -I"${kit}" -o "${BATS_FILE_TMPDIR}/reader" \
        "${dir}/reader.c" "${kit}/gbgate_reader.c"
}

setup() {
    TEST_DIR="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    KIT="$(dirname "${TEST_DIR}")"
    GBGATE="${KIT}/gbgate"
    PROG="${BATS_FILE_TMPDIR}/prog"
    export KIT_TEST_BIN="${BATS_FILE_TMPDIR}"
}

load helpers

@test "the checkpoint does nothing outside the kit, prints under GBGATE=print" {
    run "${PROG}" frees 8 2
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    GBGATE=print run "${PROG}" frees 8 2
    [ "$status" -eq 0 ]
    # On macOS the kit adds the footprint, which only the process can read.
    [[ "${lines[0]}" == "checkpoint round-1 round=1"* ]]
    [[ "${lines[1]}" == "checkpoint round-2 round=2"* ]]
    [ "${#lines[@]}" -eq 2 ]
}

@test "a program that gives its memory back passes" {
    run "${GBGATE}" run --cap 32MiB --growth 4MiB -- "${PROG}" frees 64 3
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    # One line per checkpoint, with the readings from outside.
    # On Linux, PSS and USS beside them; everywhere, the CPU used.
    if [[ -r /proc/self/smaps_rollup ]]; then
        [ "$(grep -c '^checkpoint round-[123] rss_kib=[0-9]* lazyfree_kib=[0-9]* hwm_kib=[0-9]* pss_kib=[0-9]* uss_kib=[0-9]* cpu_ms=[0-9]* round=' <<<"$output")" -eq 3 ]
    else
        [ "$(grep -c '^checkpoint round-[123] rss_kib=[0-9]* lazyfree_kib=[0-9]* hwm_kib=[0-9]* cpu_ms=[0-9]* round=' <<<"$output")" -eq 3 ]
    fi
}

@test "a program over its cap is red for rss" {
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" keeps 64 1
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at round-1: "*"over the cap of 32.0 MiB" ]]
}

@test "rounds that all grow are red for growth; one that grows is not" {
    run "${GBGATE}" run --growth 4MiB -- "${PROG}" keeps 8 3
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (growth): every round after the first grew by more than 4.0 MiB: round-1="* ]]
    # CPython's rule: red only if every round after the first grew.
    run "${GBGATE}" run --growth 4MiB -- "${PROG}" bump 8 3
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    # By more than the bound: rounds that each grew by the bound exactly
    # did not (the judge on given figures, in KiB).
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    local rc=0
    gk_growth 4096 round-1=10000 round-2=14096 round-3=18192
    gk_growth 4096 round-1=10000 round-2=14097 round-3=18194 || rc=$?
    [ "${rc}" -eq 1 ]
    [ "${GK_REASON}" = growth ]
}

@test "the clock tick is what getconf says when it is a whole number above 0, else 100" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    local bin="${BATS_TEST_TMPDIR}/bin" said want
    mkdir -p "${bin}"
    for said in 250:250 1000:1000 0:100 -5:100 abc:100 12x:100 2+1:100 :100; do
        printf '#!/bin/sh\necho "%s"\n' "${said%%:*}" >"${bin}/getconf"
        chmod +x "${bin}/getconf"
        PATH="${bin}:${PATH}" gk_clk_tck_read
        want="${said#*:}"
        [ "${GK_CLK_TCK}" = "${want}" ] || { echo "getconf said \"${said%%:*}\": ${GK_CLK_TCK}, not ${want}"; false; }
    done
    # A getconf that fails.
    printf '#!/bin/sh\nexit 1\n' >"${bin}/getconf"
    PATH="${bin}:${PATH}" gk_clk_tck_read
    [ "${GK_CLK_TCK}" = 100 ]
}

@test "a red reading's note says what LazyFree took out, or that the footprint judged it, or nothing" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    [ "$(gk_judge_lazy_note 4096 8192 2048)" = "; 4.0 MiB LazyFree taken out, 2.0 MiB left" ]
    [ "$(gk_judge_lazy_note 0 3072 3072)" = "; judged by the footprint, 3.0 MiB" ]
    # A footprint that is not what was kept, none, or 0: nothing to say.
    [ -z "$(gk_judge_lazy_note 0 3072 1024)" ]
    [ -z "$(gk_judge_lazy_note 0 "" 1024)" ]
    [ -z "$(gk_judge_lazy_note 0 0 0)" ]
}

@test "where the OS keeps no peak, the peak is the highest resident size the kit read, not the last" {
    # Linux keeps one (VmHWM); read as on another platform, the kit's own
    # readings make it, at checkpoints and at the polls between them.
    GBGATE_PLATFORMS="all macos" run "${GBGATE}" run -- "${PROG}" peak 64
    echo "$output"
    [ "$status" -eq 0 ]
    local low hwm
    low="$(grep '^checkpoint low ' <<<"$output")"
    hwm="$(sed -n 's/.* hwm_kib=\([0-9]*\).*/\1/p' <<<"$low")"
    [ -n "${hwm}" ]
    ((hwm >= 64 * 1024)) || { echo "peak ${hwm} KiB at low, below the 64 MiB held at high"; false; }
}

@test "a size is read in KiB from every unit, rounded up, and refused without one" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    local pair
    for pair in 2048B:2 1B:1 1.5KiB:2 3K:3 3k:3 64MiB:65536 2M:2048 1GiB:1048576 1.5G:1572864 \
        1TiB:1073741824 2T:2147483648 0.5MiB:512; do
        [ "$(gk_size_kib "${pair%%:*}")" = "${pair#*:}" ] ||
            { echo "${pair%%:*}: $(gk_size_kib "${pair%%:*}"), not ${pair#*:}"; false; }
    done
    for bad in 64 64MB 1PiB MiB "" " 1MiB" "1 MiB" -1MiB; do
        run gk_size_kib "$bad"
        [ "$status" -ne 0 ] || { echo "\"$bad\" was taken: $output"; false; }
    done
}

@test "a build's command is its row's cell, else the first star row's with its build named, its words expanded" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    local dir="${BATS_TEST_TMPDIR}/b" t=$'\t'
    mkdir -p "${dir}"
    {
        echo "# the builds"
        echo "build${t}gate${t}bench"
        echo "ref${t}./ref.sh \$GB_T_WORD${t}-"
        echo "*${t}LD_PRELOAD=./{build}.so ../all {build}${t}bench-{build}"
        echo "*${t}./second${t}second"
    } >"${dir}/builds.tsv"
    export GB_T_WORD=word
    gk_build_command "${dir}/builds.tsv" ref gate
    [ "${GK_COMMAND[*]}" = "${dir}/./ref.sh word" ]
    gk_build_command "${dir}/builds.tsv" asan gate
    [ "${GK_COMMAND[*]}" = "LD_PRELOAD=${dir}/./asan.so ${dir}/../all asan" ]
    gk_build_command "${dir}/builds.tsv" tsan bench
    [ "${GK_COMMAND[*]}" = "bench-tsan" ]
    run gk_build_command "${dir}/builds.tsv" ref bench
    [ "$status" -eq 1 ]
    [[ "$output" == *'the build "ref" has no "bench" program (-)'* ]] || false
    run gk_build_command "${dir}/builds.tsv" ref size
    [ "$status" -eq 1 ]
    [[ "$output" == *'has no column "size"'* ]] || false
    # The first column names the builds, no program.
    run gk_build_command "${dir}/builds.tsv" ref build
    [ "$status" -eq 1 ]
    [[ "$output" == *'has no column "build"'* ]] || false
    # Without a "*" row, a build of no row is named.
    grep -v '^\*' "${dir}/builds.tsv" >"${dir}/only.tsv"
    run gk_build_command "${dir}/only.tsv" asan gate
    [ "$status" -eq 1 ]
    [[ "$output" == *'has no row for the build "asan" and no "*" row'* ]] || false
    unset GB_T_WORD
    run gk_build_command "${dir}/builds.tsv" ref gate
    [ "$status" -eq 1 ]
    [[ "$output" == *"\$GB_T_WORD is not set"* ]] || false
}

@test "the helper's settle is GBGATE_SETTLE_S in seconds, nothing when unset or zero, an error otherwise" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    local pair
    for pair in 10:10 1.0:1.0 0.25:0.25 0: 0.000: 00: :; do
        [ "$(GBGATE_SETTLE_S="${pair%%:*}" gk_helper_settle_s)" = "${pair#*:}" ] ||
            { echo "\"${pair%%:*}\": \"$(GBGATE_SETTLE_S="${pair%%:*}" gk_helper_settle_s)\", not \"${pair#*:}\""; false; }
    done
    for bad in x 1. .5 1s -1 "1 "; do
        GBGATE_SETTLE_S="$bad" run gk_helper_settle_s
        [ "$status" -eq 1 ] || { echo "\"$bad\" was taken: $output"; false; }
        [[ "$output" == *"GBGATE_SETTLE_S is \"$bad\", not a number of seconds"* ]] || false
    done
}

@test "the kit's hold program holds what it is asked, doubled up to it and no further" {
    run "${KIT}/hold" 1
    [ "$status" -eq 0 ]
    [ "$output" = "checkpoint held bytes=1048576" ]
    run "${KIT}/hold" 3
    [ "$output" = "checkpoint held bytes=4194304" ]
}

@test "the judge's reasons at their bounds: at the cap green, lazy-free and footprint at the cap, retained-below past it" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    # judged CAP RSS LAZY HELD FOOTPRINT: the reason, or green.
    judged() {
        GK_REASON=green
        gk_judge "$@" "" || true
        echo "${GK_REASON}"
    }
    [ "$(judged 1000 1000 0 "" "")" = green ]
    [ "$(judged 1000 1001 0 "" "")" = rss ]
    # What is left once LazyFree is taken out, at the cap and past it.
    [ "$(judged 1000 1500 500 "" "")" = lazy-free ]
    [ "$(judged 1000 1500 499 "" "")" = rss ]
    # The footprint at the cap and past it.
    [ "$(judged 1000 1500 0 "" 1000)" = lazy-free ]
    [ "$(judged 1000 1500 0 "" 1001)" = rss ]
    # Resident beyond what the runtime holds: at the cap, and past it.
    [ "$(judged 1000 2500 0 1500 "")" = rss ]
    [ "$(judged 1000 2500 0 1499 "")" = retained-below ]
    # The footprint, where it is below what is resident, is what is kept.
    [ "$(judged 1000 3000 0 1500 2500)" = rss ]
    [ "$(judged 1000 3000 0 1500 2501)" = retained-below ]
}

@test "an ending is a signal's from 129 to 159, an exit's status otherwise" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    GK_ERR=/dev/null GK_OUT=/dev/null
    local pair
    for pair in 0:"exited with status 0" 128:"exited with status 128" 129:"died of SIGHUP (status 129)" \
        137:"died of SIGKILL (status 137)" 160:"exited with status 160" 255:"exited with status 255"; do
        [ "$(GK_STATUS="${pair%%:*}" gk_exit_detail)" = "${pair#*:}" ] ||
            { echo "${pair%%:*}: $(GK_STATUS="${pair%%:*}" gk_exit_detail)"; false; }
    done
}

@test "with --at, the figure is the worst of the checkpoints named, not of every one" {
    run "${GBGATE}" run --at low -- "${PROG}" peak 64
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$(grep "^gate: figure " <<<"$output")" == "gate: figure "*" MiB at low"* ]] || false
    # Settled too: the reading right after is the named checkpoint's, not
    # that of a larger one after it (bump keeps 64 MiB from round 2 on).
    run "${GBGATE}" run --settle 0.1 --at round-1 -- "${PROG}" bump 64 2
    echo "$output"
    [ "$status" -eq 0 ]
    local right
    right="$(sed -n 's/^gate: figure .* settled, \([0-9.]*\) MiB right after at round-1.*/\1/p' <<<"$output")"
    [ -n "${right}" ]
    awk -v r="${right}" 'BEGIN { exit !(r < 32) }'
}

@test "a settle watched under a cap notes a reading at or under it at once; without a cap there is nothing to watch" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    GK_T0_S=$SECONDS GK_T0_US=""
    [ -z "$(gk_settle_watch "" 5000 2>&1)" ]
    gk_settle_watch "" 5000
    [ -z "${GK_SETTLE_UNDER_US}" ]
    gk_settle_watch 4999 5000
    [ -z "${GK_SETTLE_UNDER_US}" ]
    gk_settle_watch 5000 5000
    [ "${GK_SETTLE_UNDER_US}" = 0 ]
}

@test "a runtime that holds nothing while the process holds it is red for retained-below" {
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" retained 64
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (retained-below): at left: "*"the runtime holds 0.0 MiB, over the cap of 32.0 MiB: "*" MiB beyond what the runtime holds is resident under it" ]]
}

@test "a runtime that holds part of it is judged by the excess beyond what it holds: retained-below or rss" {
    # The rule (gk_judge): over the cap, red for retained-below when the
    # process holds more than the cap beyond the runtime's held_kib, for rss
    # when it does not. Both runs hold 40 MiB, over the 32 MiB cap, and say
    # their runtime holds a part of it under the cap, so that neither "over
    # the cap", nor "held_kib given", nor "held_kib not 0" tells them apart.
    # 4 MiB held: some 37 MiB beyond it, more than the cap.
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" retained 40 4
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (retained-below): at left: "*"the runtime holds 4.0 MiB, over the cap of 32.0 MiB: "*" MiB beyond what the runtime holds is resident under it" ]] || false
    # 24 MiB held: some 17 MiB beyond it, within the cap: the program holds
    # what is over it.
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" retained 40 24
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at left: "*"the runtime holds 24.0 MiB, over the cap of 32.0 MiB" ]] || false
}

# judge CAP RSS LAZY HELD FOOTPRINT (MiB, "" for none): gk_judge on the
# figures given, in a shell of its own; prints "<reason>: <detail>", or
# "pass".
judge() {
    local kib=()
    local v
    for v in "$@"; do kib+=("${v:+$((v * 1024))}"); done
    bash -c 'source "$1/gbgate.bash"; shift
        if gk_judge "$@" "at left"; then echo pass; else echo "$GK_REASON: $GK_DETAIL"; fi' \
        judge "${KIT}" "${kib[@]}"
}

@test "the judge takes the pages given back lazily out before it weighs what the runtime holds" {
    # 478 MiB resident, 139 MiB of it LazyFree, the runtime holding 345
    # MiB: 339 MiB are left, less than the runtime holds, so the program
    # holds what is over the cap (rss). Weighing 478 against 345 would call
    # 133 MiB retained below the runtime.
    run judge 64 478 139 345 ""
    [ "$output" = "rss: at left: 478.0 MiB resident, the runtime holds 345.0 MiB, over the cap of 64.0 MiB; 139.0 MiB LazyFree taken out, 339.0 MiB left" ]
    # The same with the runtime holding 100 MiB: 239 MiB beyond it, over
    # the cap: retained below, counted without the lazy pages.
    run judge 64 478 139 100 ""
    [ "$output" = "retained-below: at left: 478.0 MiB resident, the runtime holds 100.0 MiB, over the cap of 64.0 MiB; 139.0 MiB LazyFree taken out, 339.0 MiB left: 239.0 MiB beyond what the runtime holds is resident under it" ]
    # Lazy pages that take it under the cap: lazy-free, whatever is held.
    run judge 64 478 420 0 ""
    [[ "$output" == "lazy-free: "*"420.0 MiB of it is LazyFree"* ]] || false
    # macOS: the footprint (what is left without the lazy pages) is judged
    # the same way.
    run judge 64 478 0 345 339
    [ "$output" = "rss: at left: 478.0 MiB resident, the runtime holds 345.0 MiB, over the cap of 64.0 MiB; judged by the footprint, 339.0 MiB" ]
    run judge 64 478 0 100 339
    [[ "$output" == "retained-below: "*"239.0 MiB beyond what the runtime holds"* ]] || false
    run judge 64 478 0 345 40
    [[ "$output" == "lazy-free: "*"the footprint is 40.0 MiB"* ]] || false
    # A footprint over the resident size (compressed pages count in it) is
    # not a reading of what is resident: judged by the resident size.
    run judge 64 478 0 100 600
    [[ "$output" == "retained-below: "*"378.0 MiB beyond what the runtime holds"* ]] || false
    # No held_kib: rss; within the cap: a pass.
    run judge 64 478 139 "" ""
    [[ "$output" == "rss: "* ]] || false
    run judge 64 64 0 0 ""
    [ "$output" = pass ]
}

@test "a runtime holding most of a reading that is partly LazyFree is red for rss, not retained-below (Linux)" {
    [[ "$(uname -s)" == Linux ]] || skip "LazyFree is Linux's"
    # 96 MiB resident, 40 MiB of it given back with MADV_FREE, the runtime
    # holding 48: 56 MiB left, 8 beyond what it holds, within the 32 MiB cap.
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" retained 96 48 40
    echo "$output"
    [[ "$output" != *"no MADV_FREE"* ]] || skip "no MADV_FREE here"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at left: "*"the runtime holds 48.0 MiB, over the cap of 32.0 MiB; "*" MiB LazyFree taken out, "*" MiB left" ]] || false
    # Holding 8 of it: some 48 MiB beyond, over the cap: retained-below.
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" retained 96 8 40
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (retained-below): at left: "*"the runtime holds 8.0 MiB"*"MiB LazyFree taken out"* ]] || false
}

@test "pages given back lazily are red for lazy-free (Linux)" {
    [[ "$(uname -s)" == Linux ]] || skip "LazyFree is Linux's"
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" lazy 64
    # A kernel without MADV_FREE (older than 4.5) makes the program fail.
    [[ "$output" != *"no MADV_FREE"* ]] || skip "no MADV_FREE here"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (lazy-free): "*"LazyFree"* ]]
}

@test "judged as another platform (GBGATE_PLATFORMS), LazyFree is not read where that platform has none" {
    [[ "$(uname -s)" == Linux ]] || skip "LazyFree is Linux's"
    GBGATE_PLATFORMS="all macos" run "${GBGATE}" run --cap 32MiB -- "${PROG}" lazy 64
    [[ "$output" != *"no MADV_FREE"* ]] || skip "no MADV_FREE here"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"lazyfree_kib=0 "* ]]
    [[ "$(verdict)" == "gate: fail (rss): "* ]]
}

@test "the runner reads PSS and USS beside RSS (Linux): a child sharing the pages halves the PSS" {
    [[ "$(uname -s)" == Linux ]] || skip "smaps_rollup is Linux's"
    [[ -r /proc/self/smaps_rollup ]] || skip "no smaps_rollup here (Linux older than 4.14)"
    local rss pss uss
    # forked takes 64 MiB and forks a child that maps every page of it too.
    run "${GBGATE}" run --cap 1GiB -- "${PROG}" forked 64
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "checkpoint shared rss_kib="*" lazyfree_kib="*" hwm_kib="*" pss_kib="*" uss_kib="* ]] || false
    rss="$(sed -n 's/.* rss_kib=\([0-9]*\).*/\1/p' <<<"${lines[0]}")"
    pss="$(sed -n 's/.* pss_kib=\([0-9]*\).*/\1/p' <<<"${lines[0]}")"
    uss="$(sed -n 's/.* uss_kib=\([0-9]*\).*/\1/p' <<<"${lines[0]}")"
    # All 64 MiB resident, counted whole in RSS; half of them in PSS (it
    # shares them with one child); none in USS.
    ((rss >= 64 * 1024))
    ((pss <= rss - 24 * 1024 && pss >= 28 * 1024))
    ((uss < 8 * 1024 && uss <= pss))
    # The figure of the cell carries them too.
    [[ "$output" == *"gate: figure "*" at shared; PSS "*" MiB, USS "*" MiB"* ]] || false
    # Without a child to share them, the 64 MiB are the program's alone:
    # PSS and USS hold them all, and neither is above RSS.
    run "${GBGATE}" run --cap 1GiB -- "${PROG}" keeps 64 1
    echo "$output"
    rss="$(sed -n 's/.* rss_kib=\([0-9]*\).*/\1/p' <<<"${lines[0]}")"
    pss="$(sed -n 's/.* pss_kib=\([0-9]*\).*/\1/p' <<<"${lines[0]}")"
    uss="$(sed -n 's/.* uss_kib=\([0-9]*\).*/\1/p' <<<"${lines[0]}")"
    ((uss >= 64 * 1024 && uss <= pss && pss <= rss))
}

@test "a crash is red for crash, with the signal" {
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" crash
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (crash): died of SIGABRT"* ]]
    run "${GBGATE}" run -- "${PROG}" fails
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (crash): exited with status 3"* ]]
    # 128 is a status, not a signal: the signals' are 129 and up.
    run "${GBGATE}" run -- sh -c 'exit 128'
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (crash): exited with status 128" ]
}

@test "a program that never reaches a checkpoint is red for crash" {
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" none
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (crash): it exited without reaching a checkpoint"* ]]
    # A checkpoint --at names and the program never reaches is one too.
    run "${GBGATE}" run --at round-1,round-9 -- "${PROG}" frees 8 2
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (crash): it never reached the checkpoint(s) round-9" ]
}

@test "--at judges only the checkpoints it names" {
    # bump keeps its 64 MiB in round 2 only: over the cap there, under it
    # at round 1.
    run "${GBGATE}" run --cap 32MiB --at round-1 -- "${PROG}" bump 64 2
    [ "$status" -eq 0 ]
    run "${GBGATE}" run --cap 32MiB --at round-2 -- "${PROG}" bump 64 2
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at round-2: "* ]]
}

@test "a line printed and not read while stopped there is red for protocol, never a pass" {
    # lost prints round-1 and round-2, then stops once (round-1's stop came
    # late and merged with round-2's), then stops at round-3: pairing the
    # n-th stop with the n-th line would read round-3 as round-2 and pass
    # --at round-1,round-2,round-3 having read round-1 alone.
    run "${GBGATE}" run --cap 32MiB --at round-1,round-2,round-3 -- "${PROG}" lost 8
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (protocol): at stop 1 it had printed 2 checkpoint lines: checkpoint round-2 printed and not read while stopped there (a stop lost or late: a SIGSTOP sent to the process, not the thread?; or a line of its own output that begins with \"checkpoint\" or \"settled\", which the protocol reserves)" ]
    [[ "$output" != *"checkpoint round-"*" rss_kib="* ]] || false
    # unread prints round-2 after its last stop and exits 0: checked at
    # the end of the run.
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" unread 8
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (protocol): it ended with checkpoint round-2 printed and never read while stopped there (2 checkpoint lines, 1 stops read; a line of its own output that begins with \"checkpoint\" or \"settled\" is the protocol's, which reserves them)" ]
    # --at means read there: a line alone does not reach a checkpoint.
    run "${GBGATE}" run --at round-1,round-2 -- "${PROG}" unread 8
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): "* ]] || false
}

@test "a stop with no new checkpoint line is red for protocol, not a checkpoint with no name" {
    run "${GBGATE}" run --cap 32MiB -- "${PROG}" mute 8
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (protocol): stop 2 came with no new checkpoint line (it stopped without printing one, its stdout was not flushed, or the line went into a pipe that the program reads, as system() and popen() do: the helper, gbgate checkpoint, writes to GBGATE_OUT then)" ]
    # round-1 was read; nothing was read under an empty name.
    [ "$(grep -c '^checkpoint ' <<<"$output")" -eq 1 ]
    [[ "${lines[0]}" == "checkpoint round-1 rss_kib="* ]] || false
}

@test "a program behind a wrapper that does not exec is refused, and nothing of the run is left" {
    # sh -c 'prog; true' cannot exec prog: the checkpoint stops prog, a
    # child of the shell the kit started. The kit must say so at once (not
    # wait for its guard) and leave no process behind, the stopped one least
    # of all. The guard's limit is far above the verdict's few polls.
    local tag="kit-wrapper-$$-${BATS_TEST_NUMBER}"
    run "${GBGATE}" run --cap 32MiB --guard-s 20 -- sh -c "\"${PROG}\" frees 8 2 ${tag}; true"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): the checkpoint stopped pid "*" (prog), not the program the kit started, pid "*" (sh): a wrapper started it without exec; start the program itself, or end the wrapper with exec (sh -c 'exec prog')" ]] || false
    run ps -A -o pid= -o stat= -o args=
    [[ "$output" != *"${tag}"* ]] || false
    # With exec, the same program passes.
    run "${GBGATE}" run --cap 32MiB -- sh -c "exec \"${PROG}\" frees 8 2 ${tag}"
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
}

@test "the kit kills what the program started when it ends, whichever way it ends" {
    # A program that leaves a child behind (a hang started by the wrapper
    # before it execs the program) loses it with the run, on a pass and on
    # a red verdict alike.
    local tag="kit-tree-$$-${BATS_TEST_NUMBER}"
    run "${GBGATE}" run --cap 32MiB -- sh -c "\"${PROG}\" hang 1 1 ${tag} & exec \"${PROG}\" frees 8 1 ${tag}"
    echo "$output"
    [ "$status" -eq 0 ]
    run ps -A -o pid= -o stat= -o args=
    [[ "$output" != *"${tag}"* ]] || false
    run "${GBGATE}" run --cap 32MiB -- sh -c "\"${PROG}\" hang 1 1 ${tag} & exec \"${PROG}\" keeps 64 1 ${tag}"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): "* ]] || false
    run ps -A -o pid= -o stat= -o args=
    [[ "$output" != *"${tag}"* ]] || false
}

@test "the guard kills a runaway for its size: red for guard-rss" {
    run "${GBGATE}" run --cap 32MiB --guard-rss 256MiB -- "${PROG}" balloon 16
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-rss): killed at "*"over the guard's 256.0 MiB" ]]
}

@test "the guard kills a program that hangs: red for guard-time" {
    # It uses no CPU: only the clock can end it.
    run "${GBGATE}" run --guard-s 1 --guard-cpu 1 -- "${PROG}" hang
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-time): killed after 1 s, the guard's bound on the clock for a run (a hang: it used almost no CPU): 0.0"*" s of CPU since its start, at "*" resident" ]] || false
}

@test "a program busy on the CPU past the clock's guard is not called a hang" {
    # The CPU budget is far off; the clock ends it, and the verdict says
    # it worked through those seconds.
    run "${GBGATE}" run --guard-cpu 120 --guard-s 2 -- "${PROG}" spin
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-time): killed after 2 s, the guard's bound on the clock for a run (busy on the CPU, under the CPU guard, for longer than the run may last): "* ]] || false
}

@test "without bash 5's EPOCHREALTIME, the run's clock counts whole seconds" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    # As under bash before 5 (macOS's 3.2): no EPOCHREALTIME, so the run's
    # start in microseconds was left empty (gk_start), and the seconds are
    # bash's SECONDS.
    unset EPOCHREALTIME
    GK_T0_S=$((SECONDS - 2)) GK_T0_US=""
    gk_tick
    echo "${GK_ELAPSED_US}"
    ((GK_ELAPSED_US >= 2000000 && GK_ELAPSED_US % 1000000 == 0))
}

@test "the guard kills a runaway for its CPU, the work of a child counted: red for guard-cpu" {
    # The clock's bound is far off: only the CPU budget can end them soon.
    run "${GBGATE}" run --guard-cpu 1 --guard-s 120 -- "${PROG}" spin
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-cpu): killed after "*" s of CPU since its start, over the guard's 1 s (a runaway), "*" s into the run, at "*" resident" ]] || false
    # The program waits, using no CPU, while a child it forked spins: the
    # budget is the whole group's.
    local tag="kit-spin-$$-${BATS_TEST_NUMBER}"
    run "${GBGATE}" run --guard-cpu 1 --guard-s 30 -- "${PROG}" spin-child 0 0 "${tag}"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-cpu): killed after "*" s of CPU since its start"* ]] || false
    run ps -A -o pid= -o stat= -o args=
    [[ "$output" != *"${tag}"* ]] || false
    # macOS's way, ps, read on Linux too.
    GK_CPU_PS=1 run "${GBGATE}" run --guard-cpu 1 --guard-s 30 -- "${PROG}" spin-child
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-cpu): killed after "*" s of CPU since its start"* ]] || false
}

# fake_ps DIR TIME: a ps in DIR that says every process has used TIME of
# CPU, and notes each time it is asked in DIR/asked; every other question
# goes to the real one.
fake_ps() {
    local real
    real="$(command -v ps)"
    mkdir -p "$1"
    cat >"$1/ps" <<EOF
#!/bin/sh
if [ "\$*" = "-A -o pgid= -o time=" ]; then
    echo asked >>"$1/asked"
    "${real}" -A -o pgid= | awk '{ print \$1, "$2" }'
    exit 0
fi
exec "${real}" "\$@"
EOF
    chmod +x "$1/ps"
}

@test "the CPU read with ps is the program's group's alone, its days, hours, minutes and seconds each counted" {
    # Every process has used 2-11:02:03 of CPU (days-hours:minutes:seconds,
    # as procps and BSD print a long time).
    local bin="${BATS_TEST_TMPDIR}/bin"
    fake_ps "${bin}" 2-11:02:03
    # The program is its group's one process: 2 days and 39723 s at its
    # first checkpoint, and nothing more by its second. The guard's budget
    # is above both.
    GK_CPU_PS=1 PATH="${bin}:${PATH}" run "${GBGATE}" run --guard-cpu 1000000 -- "${PROG}" frees 8 2
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field round-1 cpu_ms)" = $(((2 * 86400 + 11 * 3600 + 2 * 60 + 3) * 1000)) ]
    [ "$(field round-2 cpu_ms)" = 0 ]
}

@test "the guard reads the CPU with ps once a second of the clock, not at every poll" {
    # ps reads every process: the guard's poll, every 50 ms, reads none
    # (where /proc is, it reads the program's own file). A hang of one
    # second is read once, when the clock's bound is passed.
    local bin="${BATS_TEST_TMPDIR}/bin"
    fake_ps "${bin}" 00:00:00
    GK_CPU_PS=1 PATH="${bin}:${PATH}" run "${GBGATE}" run --guard-s 1 -- "${PROG}" hang
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-time): killed after 1 s,"* ]] || false
    cat "${bin}/asked"
    (($(wc -l <"${bin}/asked") <= 2))
}

@test "the figure is the highest judged reading, the first of equal ones, a reading of 0 among them" {
    # A ps that reads the same resident size at every checkpoint; every
    # other question goes to the real one.
    local bin="${BATS_TEST_TMPDIR}/bin" real kib
    real="$(command -v ps)"
    mkdir -p "${bin}"
    for kib in 1024 0; do
        printf '#!/bin/sh\ncase "$*" in "-o rss= -p "*) echo %s; exit 0 ;; esac\nexec "%s" "$@"\n' "${kib}" "${real}" >"${bin}/ps"
        chmod +x "${bin}/ps"
        PATH="${bin}:${PATH}" run "${GBGATE}" run -- "${PROG}" frees 8 2
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "${lines[${#lines[@]} - 3]}" == "gate: figure $((kib / 1024)).0 MiB at round-1"* ]] || false
    done
}

@test "the guard kills for CPU over its budget, not at it" {
    # The program's group has used exactly the budget, 2 s, when the
    # clock's bound of 1 s ends it: a hang, not a runaway.
    local bin="${BATS_TEST_TMPDIR}/bin"
    fake_ps "${bin}" 00:00:02
    GK_CPU_PS=1 PATH="${bin}:${PATH}" run "${GBGATE}" run --guard-cpu 2 --guard-s 1 -- "${PROG}" hang
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-time): killed after 1 s, the guard's bound on the clock for a run (busy on the CPU, under the CPU guard, for longer than the run may last): 2.000 s of CPU since its start"* ]] || false
}

@test "the guard's CPU budget is per checkpoint interval, not for the whole run" {
    # Three rounds of 0.6 s of CPU each: 1.8 s in all, under the 1 s budget
    # in every interval.
    run "${GBGATE}" run --guard-cpu 1 --guard-s 120 -- "${PROG}" work 600 3
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    # Each checkpoint line says the CPU its interval used.
    [ "$(grep -c '^checkpoint round-[123] .* cpu_ms=[0-9]* round=' <<<"$output")" -eq 3 ]
    local ms
    ms="$(sed -n 's/^checkpoint round-2 .* cpu_ms=\([0-9]*\) .*/\1/p' <<<"$output")"
    ((ms >= 500 && ms < 1000))
    # Rounds of 2.5 s are over it, and the message names the interval.
    run "${GBGATE}" run --guard-cpu 1 --guard-s 120 -- "${PROG}" work 2500 2
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-cpu): killed after "*" s of CPU since its start, over the guard's 1 s"* ]] || false
}

# load_start: busy loops, two per core, outside the program's group, so
# that the machine is as loaded as a shared CI runner at its worst; their
# pids in LOAD_PIDS for load_stop (and teardown, should the test fail).
load_start() {
    local i n
    n="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
    LOAD_PIDS=""
    for ((i = 0; i < 2 * n; i++)); do
        sh -c 'while :; do :; done' 3>&- &
        LOAD_PIDS="$LOAD_PIDS $!"
    done
}

load_stop() {
    local p
    for p in ${LOAD_PIDS:-}; do kill "$p" 2>/dev/null || true; done
    for p in ${LOAD_PIDS:-}; do wait "$p" 2>/dev/null || true; done
    LOAD_PIDS=""
}

teardown() {
    load_stop
}

@test "under load, a gate's verdict is the one it has without the load; a runaway and a hang are still killed" {
    # Two rounds of 1 s of CPU each, under a 3 s budget of CPU: a pass,
    # loaded or not. A guard on the clock at 3 s would have ended it
    # wherever the load stretched a round past 3 s (the run's figures are
    # printed below for the record; no test asserts on the clock).
    local t0 quiet loaded
    t0=$SECONDS
    run "${GBGATE}" run --guard-cpu 3 -- "${PROG}" work 1000 2
    echo "$output"
    echo "# without the load of the test: $((SECONDS - t0)) s on the clock"
    quiet="$(verdict)"
    [ "$quiet" = "gate: pass" ]
    load_start
    t0=$SECONDS
    run "${GBGATE}" run --guard-cpu 3 -- "${PROG}" work 1000 2
    echo "$output"
    echo "# with the load of the test (pids$LOAD_PIDS): $((SECONDS - t0)) s on the clock"
    loaded="$(verdict)"
    [ "$loaded" = "$quiet" ]
    # A runaway is still killed for its CPU, a hang for its time.
    run "${GBGATE}" run --guard-cpu 1 --guard-s 120 -- "${PROG}" spin
    echo "$output"
    [[ "$(verdict)" == "gate: fail (guard-cpu): "* ]] || false
    run "${GBGATE}" run --guard-cpu 1 --guard-s 2 -- "${PROG}" hang
    echo "$output"
    [[ "$(verdict)" == "gate: fail (guard-time): "* ]] || false
    load_stop
}

@test "an empty or malformed --at or --env, a guard of 0 and a missing value are usage errors, exit 2" {
    local bad
    for bad in "--at ''" "--at a,,b" "--at 'a b'" "--guard-s 0" "--guard-cpu 0" "--guard-rss 0MiB" "--log ''" \
        "--guard-s x5" "--guard-s 5x" "--guard-cpu ' 5'" "--env FOO" "--env =x" "--env 1A=b"; do
        eval "run \"\${GBGATE}\" run $bad -- \"\${PROG}\" frees"
        echo "$bad: $output"
        [ "$status" -eq 2 ]
        [[ "$output" == "gbgate: error: --"* ]] || false
    done
    run "${GBGATE}" run --at
    [ "$status" -eq 2 ]
    [[ "$output" == *"--at takes checkpoint names, NAME[,NAME...], not an empty value"* ]] || false
    run "${GBGATE}" run --guard-s 0 -- "${PROG}" frees
    [[ "$output" == *"a guard of 0 would end the program the moment it starts"* ]] || false
    run "${GBGATE}" run --env FOO -- "${PROG}" frees
    [[ "$output" == *'--env takes NAME=VALUE, not "FOO"'* ]] || false
    # A leading zero is still a number above 0, in base 10 (09 is no
    # octal number; 0120 would be 80 in bash's arithmetic).
    run "${GBGATE}" run --guard-s 09 --guard-cpu 060 -- "${PROG}" frees
    [ "$status" -eq 0 ]
    run "${GBGATE}" run --guard-s 0001 --guard-cpu 120 -- "${PROG}" hang
    [[ "$(verdict)" == "gate: fail (guard-time): killed after 1 s,"* ]] || false
}

@test "a run without a cap says it judged none; --help names every option of run" {
    run "${GBGATE}" run -- "${PROG}" keeps 64 1
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gate: judged no cap: without --cap (or --growth) a run passes on the protocol and the guards alone, whatever it holds"* ]] || false
    run "${GBGATE}" run --cap 512MiB -- "${PROG}" keeps 64 1
    [[ "$output" != *"judged no cap"* ]] || false
    run "${GBGATE}" run --growth 512MiB -- "${PROG}" keeps 64 1
    echo "$output"
    [[ "$output" == *"gate: judged no cap, only the growth (--growth)"* ]] || false
    # A program that made no checkpoint has no figure.
    run "${GBGATE}" run -- "${PROG}" none
    echo "$output"
    grep -qx "gate: figure no checkpoint" <<<"$output"
    run "${GBGATE}" --help
    local opt
    for opt in --cap --growth --settle --guard-rss --guard-cpu --guard-s --at --env --name --build --series --log; do
        [[ "$output" == *"[$opt "* ]] || { echo "--help leaves out $opt"; false; }
    done
}

@test "sizes need a unit; a bad option is a usage error" {
    run "${GBGATE}" run --cap 64 -- "${PROG}" frees
    [ "$status" -eq 2 ]
    [[ "$output" == *"--cap takes a size such as 64MiB"* ]]
    run "${GBGATE}" run --bogus 1 -- "${PROG}" frees
    [ "$status" -eq 2 ]
    run "${GBGATE}" run --cap 1.5GiB --guard-rss 3GiB --growth 512KiB --env GB_T_ANY=a=b -- "${PROG}" frees 8 1
    [ "$status" -eq 0 ]
}

@test "the matrix: every cell as expected passes, and writes its reports" {
    local out="${BATS_TEST_TMPDIR}/m"
    run "${GBGATE}" matrix --expected "${TEST_DIR}/matrix/expected.tsv" --builds "${TEST_DIR}/matrix/builds.tsv" \
        --out "${out}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gbgate: failsafe: the kit calls a program over its cap red"* ]]
    # On the builds file's own failsafe build.
    [[ "$output" == *"gbgate: failsafe: the failsafe gate on failsafe is red for rss"* ]]
    [[ "$output" == *"gate cells: 6 passed, 0 failed"* ]]
    for f in matrix.md matrix.tsv junit.xml results.tsv; do [ -s "${out}/${f}" ]; done
    grep -q "$(printf '^rounds\tkeeps\tred:rss\tfail\trss\t.*\tok$')" "${out}/matrix.tsv"
    grep -q "$(printf '^judged\tfrees\tgreen\tpass\t-\t.*\tok$')" "${out}/matrix.tsv"
    grep -q '<testsuites name="gbgate matrix" tests="6" failures="0">' "${out}/junit.xml"
    # One suite a build, of its three cases, every one of them there.
    [ "$(grep -c '<testcase ' "${out}/junit.xml")" -eq 6 ]
    grep -q '<testcase classname="frees" name="rounds"><system-out>[0-9.]* MiB at round-1' "${out}/junit.xml"
    grep -q '<testcase classname="keeps" name="rounds"><system-out>red (rss): at round-1: ' "${out}/junit.xml"
    [ "$(grep '<testsuite ' "${out}/junit.xml")" = "$(printf '  %s\n' \
        '<testsuite name="frees" tests="3" failures="0" skipped="0">' \
        '<testsuite name="keeps" tests="3" failures="0" skipped="0">')" ]
    # Each build's cells as they run, once each, the gate written in bats
    # among them; then the table, a column for every build.
    [ "$(awk '/^gbgate: build / { b = $3 } /^  [a-z]/ { printf "%s%s:%s ", b, $1, $2 }' <<<"$output")" = \
        "frees:rounds:pass frees:climb:pass frees:judged:pass keeps:rounds:fail keeps:climb:fail keeps:judged:fail " ]
    [[ "$output" == *$'\n'"gate                     | frees                        | keeps"* ]] || false
    [ "$(sed -n 1,2p "${out}/matrix.md")" = "$(printf '| gate | frees | keeps |\n|---|---|---|')" ]
    # The bats gate's program says nothing of what its runtime holds: its
    # figure is the reading alone.
    grep -q "$(printf '^judged\tfrees\tpass\t-\t[0-9.]* MiB$')" "${out}/results.tsv"
    # A cell of the table is cut at 28 columns, and only a longer one.
    grep -Eq '^judged +\| ✓ [0-9.]+ MiB +\| ✓ red \(rss\): after round …$' <<<"$output"
    # Every cell ran and none was skipped: neither is mentioned.
    [[ "$output" != *"cells not run"* && "$output" != *"cells skipped"* ]] || false
    # The series carry every checkpoint, for the charts.
    grep -q "$(printf '\tround-3$')" "${out}/series/rounds__frees.tsv"
    if command -v gnuplot >/dev/null 2>&1; then
        [ -s "${out}/charts/rounds.png" ]
        [ -s "${out}/charts/rounds.svg" ]
        [[ "$output" == *$'\n'"gbgate: charts of 3 gate(s) in ${out}/charts"$'\n'* ]] || false
    fi
}

@test "the matrix needs bats only for gates written in bats, and gnuplot only for its charts" {
    local out="${BATS_TEST_TMPDIR}/m" d="${BATS_TEST_TMPDIR}" path
    path="$(path_without bats gnuplot)"
    # Without the gate written in bats: it runs, and says it draws no charts.
    grep -v '^judged' "${TEST_DIR}/matrix/gates.tsv" >"$d/gates.tsv"
    grep -v '^judged' "${TEST_DIR}/matrix/expected.tsv" >"$d/expected.tsv"
    PATH="${path}" run "${GBGATE}" matrix --expected "$d/expected.tsv" --builds "${TEST_DIR}/matrix/builds.tsv" \
        --gate rounds --build frees --out "${out}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\n'"gbgate: gnuplot not found: no charts"$'\n'* ]] || false
    [ ! -e "${out}/charts" ]
    [ ! -e "${out}/logs/bats__frees.log" ]
    # With it, the matrix cannot run.
    cp "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "$d/"
    PATH="${path}" run "${GBGATE}" matrix --expected "${TEST_DIR}/matrix/expected.tsv" --gates "$d/gates.tsv" \
        --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}"
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$output" = "$(printf 'gbgate: the matrix cannot run:\n  bats is not installed, and %s has gates written in bats' "$d/gates.tsv")" ]
}

@test "the charts: a gate's first build in the order of --builds against the others; a build with no series is left out, quietly" {
    command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed"
    local series="${BATS_TEST_TMPDIR}/series" dest="${BATS_TEST_TMPDIR}/charts" b
    mkdir -p "${series}"
    # Two builds of one gate, as the runner writes them; "gone" has none.
    for b in frees keeps; do
        printf '# gate=rounds build=%s cap_kib=32768\n0.000\t1024\tround-1\n0.100\t2048\t-\n' "$b" \
            >"${series}/rounds__${b}.tsv"
    done
    # keeps first: not the order the folder lists them in.
    run "${GBGATE}" charts --series "${series}" --out "${dest}" --builds "gone keeps frees"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "gbgate: charts of 1 gate(s) in ${dest}" ]
    [ -s "${dest}/rounds.png" ]
    grep -q ">keeps against frees<" "${dest}/rounds.svg"
    # Without --builds, the order of the folder.
    run "${GBGATE}" charts --series "${series}" --out "${dest}"
    [ "$output" = "gbgate: charts of 1 gate(s) in ${dest}" ]
    grep -q ">frees against keeps<" "${dest}/rounds.svg"
    # A gate that read nothing has its header line alone: no chart.
    printf '# gate=idle build=frees cap_kib=32768\n' >"${series}/idle__frees.tsv"
    run "${GBGATE}" charts --series "${series}" --out "${dest}"
    [ "$output" = "gbgate: charts of 1 gate(s) in ${dest}" ]
    [ ! -e "${dest}/idle.png" ]
}

@test "the matrix: two gates written in one bats file run once each, and one in another file runs too" {
    local out="${BATS_TEST_TMPDIR}/m" d="${BATS_TEST_TMPDIR}"
    # judged.bats and a second test of the same reading in the same file;
    # a third in a file of its own.
    { cat "${TEST_DIR}/matrix/judged.bats"; sed -n '/^@test "judged"/,$p' "${TEST_DIR}/matrix/judged.bats" | sed 's/^@test "judged"/@test "judged-again"/'; } \
        >"$d/judged.bats"
    sed 's/^@test "judged"/@test "judged-elsewhere"/' "${TEST_DIR}/matrix/judged.bats" >"$d/elsewhere.bats"
    {
        printf 'gate\tprogram\targs\toptions\n'
        printf 'judged\tbats\tjudged.bats\t--cap 32MiB\n'
        printf 'judged-elsewhere\tbats\telsewhere.bats\t--cap 32MiB\n'
        printf 'judged-again\tbats\tjudged.bats\t--cap 32MiB\n'
    } >"$d/gates.tsv"
    printf 'gate\truns-on\tfrees\njudged\tall\tgreen\njudged-elsewhere\tall\tgreen\njudged-again\tall\tgreen\n' \
        >"$d/expected.tsv"
    run "${GBGATE}" matrix --expected "$d/expected.tsv" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(awk '/^gbgate: build / { b = $3 } /^  [a-z]/ { printf "%s%s:%s ", b, $1, $2 }' <<<"$output")" = \
        "frees:judged:pass frees:judged-elsewhere:pass frees:judged-again:pass " ]
    [ "$(wc -l <"${out}/results.tsv")" -eq 3 ]
}

@test "a gate written in bats is red for crash when its program ends before its checkpoint or exits non-zero after it" {
    local d="${BATS_TEST_TMPDIR}/gate" t=$'\t'
    mkdir -p "$d"
    # shellcheck disable=SC2016 # the gate's own words, expanded when it runs
    {
        echo 'setup() { load "${GATE_KIT}/gate"; gate_setup; }'
        echo 'teardown() { gate_teardown; }'
        echo '@test "ends-early" { gate_cmd none; gate_start "${GATE_CMD[@]}"; gate_wait "at its start" || return 1; gate_pass ok; }'
        echo '@test "fails-late" { gate_cmd fails; gate_start "${GATE_CMD[@]}"; gate_wait || return 1; gate_finish || return 1; gate_pass ok; }'
        echo '@test "ends-well" { gate_cmd frees; gate_start "${GATE_CMD[@]}" 1 1; gate_wait || return 1; gate_finish || return 1; gate_pass ok; }'
    } >"$d/gate.bats"
    printf 'gate\tprogram\targs\toptions\nends-early\tbats\tgate.bats\t\nfails-late\tbats\tgate.bats\t\nends-well\tbats\tgate.bats\t\n' \
        >"$d/gates.tsv"
    printf 'build\tnone\tfails\tfrees\nb\t%s none\t%s fails\t%s frees\n' "${PROG}" "${PROG}" "${PROG}" >"$d/builds.tsv"
    GATE_BUILD=b GATE_KIT="${KIT}" GATE_RESULTS="$d/results.tsv" run env -u GATE_SERIES_DIR bats "$d/gate.bats"
    echo "$output"
    cat "$d/results.tsv"
    grep -q "^ends-early${t}b${t}fail${t}crash${t}at its start: it ended before the checkpoint" "$d/results.tsv"
    grep -q "^fails-late${t}b${t}fail${t}crash${t}" "$d/results.tsv"
    grep -q "^ends-well${t}b${t}pass${t}" "$d/results.tsv"
}

@test "a gate written in bats, run by hand without a series folder or a results file, writes neither, and passes" {
    # Outside the matrix (GATE_BUILD alone), beside its gates and builds
    # files; the name is this run's own, so no file of another can stand
    # for the one it must not write.
    local d="${BATS_TEST_TMPDIR}/gate" name="by-hand-$$-${BATS_TEST_NUMBER}" stray
    mkdir -p "$d"
    sed "s/^@test \"judged\"/@test \"${name}\"/" "${TEST_DIR}/matrix/judged.bats" >"$d/gate.bats"
    printf 'gate\tprogram\targs\toptions\n%s\tbats\tgate.bats\t--cap 32MiB\n' "${name}" >"$d/gates.tsv"
    cp "${TEST_DIR}/matrix/builds.tsv" "$d/"
    GATE_BUILD=frees GATE_KIT="${KIT}" run env -u GATE_SERIES_DIR -u GATE_RESULTS bats "$d/gate.bats"
    echo "$output"
    [ "$status" -eq 0 ]
    stray="/${name}__frees.tsv"
    [ ! -e "${stray}" ] || { rm -f "${stray}"; false; }
    [ "$(ls "$d")" = "$(printf 'builds.tsv\ngate.bats\ngates.tsv')" ]
}

@test "the matrix: a cell of the wrong colour fails it, and says which" {
    local out="${BATS_TEST_TMPDIR}/m" exp="${BATS_TEST_TMPDIR}/expected.tsv"
    # Claim that the build that keeps its memory is green on rounds (awk,
    # not sed: BSD sed has no \t).
    awk -F'\t' -v OFS='\t' '$1 == "rounds" { $4 = "green" } 1' "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    cp "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --no-charts
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"gate cells: 5 passed, 1 failed"* ]]
    grep -q "$(printf '^rounds\tkeeps\tgreen\tfail\trss\t.*\twrong$')" "${out}/matrix.tsv"
    grep -q '<testsuites name="gbgate matrix" tests="6" failures="1">' "${out}/junit.xml"
    grep -q '<testcase classname="keeps" name="rounds"><failure message="expected green, got fail (rss)">at round-1: ' \
        "${out}/junit.xml"
    # --no-charts draws none.
    [ ! -e "${out}/charts" ]
    [[ "$output" != *"charts"* ]] || false
    # And the right colour for the wrong reason is wrong too; a cell
    # expected red that passes survived.
    awk -F'\t' -v OFS='\t' '$1 == "rounds" { $3 = "red:rss"; $4 = "red:growth" } 1' "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --no-charts
    [ "$status" -eq 1 ]
    grep -q "$(printf '^rounds\tkeeps\tred:growth\tfail\trss\t.*\twrong$')" "${out}/matrix.tsv"
    grep -q "$(printf '^rounds\tfrees\tred:rss\tpass\t-\t.*\twrong$')" "${out}/matrix.tsv"
    grep -q '^| rounds | ✗ survived: [0-9.]* MiB at round-1[^|]* | ✗ red for rss, not growth: at round-1: ' "${out}/matrix.md"
}

@test "the matrix: a cell of several colours is judged by the one for this platform" {
    local out="${BATS_TEST_TMPDIR}/m" exp="${BATS_TEST_TMPDIR}/expected.tsv"
    cp "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    # rounds on keeps: red for growth by default (wrong: it is red for rss),
    # red for rss on a platform named "other". On frees, the first build:
    # green but on a platform that is none of these.
    awk -F'\t' -v OFS='\t' '$1 == "rounds" { $3 = "red:crash@nowhere,green"; $4 = "red:growth,red:rss@other" } 1' \
        "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    GBGATE_PLATFORMS="all other" run "${GBGATE}" matrix --expected "${exp}" \
        --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gbgate: platforms: all other"* ]]
    # The expected file as it applies here: every cell one colour, its
    # comments gone.
    [ "$(cat "${out}/expected-here.tsv")" = \
        "$(printf 'gate\truns-on\tfrees\tkeeps\nrounds\tall\tgreen\tred:rss\nclimb\tall\tgreen\tred:growth\njudged\tall\tgreen\tred:rss')" ]
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --no-charts
    [ "$status" -eq 1 ]
    grep -q "$(printf '^rounds\tkeeps\tred:growth\tfail\trss\t.*\twrong$')" "${out}/matrix.tsv"
    # Two colours for no platform cannot be judged at all.
    awk -F'\t' -v OFS='\t' '$1 == "rounds" { $4 = "red:growth,red:rss" } 1' \
        "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --no-charts
    [ "$status" -ne 0 ]
    [[ "$output" == *"gate rounds, cell 2 (red:growth,red:rss): more than one colour without a platform"* ]]
}

@test "junit.awk: a testsuite per build in the order first seen, a case per cell, failures and skips counted and escaped" {
    # The matrix of two builds: on ref a green cell, a green one that went
    # red and a red one that stayed green; on poison a red one red for its
    # reason, a skipped one and one of another platform.
    local tsv="${BATS_TEST_TMPDIR}/matrix.tsv"
    {
        printf 'gate\tbuild\texpected\tstatus\treason\tfigure\tverdict\n'
        printf 'rounds\tref\tgreen\tpass\t-\t12 MiB\tok\n'
        printf 'rounds\tpoison\tred:rss\tfail\trss\t40 MiB\tok\n'
        printf 'growth\tref\tgreen\tfail\trss\t3 MiB <x>\twrong\n'
        printf 'growth\tpoison\tskip:no "bats"\t\t\t\tskip\n'
        printf 'article\tref\tred:rss\tpass\t-\t1 & 2\twrong\n'
        printf 'extra\tpoison\tgreen\t\t\t\tn/a\n'
    } >"${tsv}"
    run awk -f "${KIT}/junit.awk" "${tsv}"
    echo "$output"
    [ "$status" -eq 0 ]
    local want
    want="$(
        cat <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="gbgate matrix" tests="6" failures="2">
  <testsuite name="ref" tests="3" failures="2" skipped="0">
    <testcase classname="ref" name="rounds"><system-out>12 MiB</system-out></testcase>
    <testcase classname="ref" name="growth"><failure message="expected green, got fail (rss)">3 MiB &lt;x&gt;</failure></testcase>
    <testcase classname="ref" name="article"><failure message="expected red:rss, got pass">1 &amp; 2</failure></testcase>
  </testsuite>
  <testsuite name="poison" tests="3" failures="0" skipped="2">
    <testcase classname="poison" name="rounds"><system-out>red (rss): 40 MiB</system-out></testcase>
    <testcase classname="poison" name="growth"><skipped message="skip:no &quot;bats&quot;"/></testcase>
    <testcase classname="poison" name="extra"><skipped message="not run: another platform's, or not selected"/></testcase>
  </testsuite>
</testsuites>
XML
    )"
    [ "$output" = "$want" ]
}

@test "matrix.awk judges each cell by its colour and reason, says what did not run and why, and scores" {
    local exp="${BATS_TEST_TMPDIR}/expected-here.tsv" res="${BATS_TEST_TMPDIR}/results.tsv"
    local md="${BATS_TEST_TMPDIR}/matrix.md" tsv="${BATS_TEST_TMPDIR}/matrix.tsv"
    {
        printf '# the expected colours, and a blank line\n\n'
        printf 'gate\truns-on\tb1\tb2\n'
        printf 'g1\tall\tgreen\tred:rss\n'
        printf 'g2\tlinux\tred:growth\tskip:no tool on this box\n'
        printf 'g3\tmacos\tgreen\tgreen\n'
        printf 'g4\tall\tred:rss\tred:rss\n'
        printf 'g5\tall\tgreen\tgreen\n'
    } >"${exp}"
    {
        printf 'g1\tb1\tpass\t-\t1 MiB\n'
        printf 'g1\tb2\tfail\trss\t9 MiB\n'
        printf 'g2\tb1\tfail\trss\t5 MiB\n'
        printf 'g4\tb1\tpass\t-\t2 MiB\n'
        printf 'g5\tb1\tfail\tgrowth\t7 MiB\n'
        printf 'g5\tb2\tpass\t-\t3 MiB\n'
    } >"${res}"
    run awk -v platforms="all linux" -v md="${md}" -v tsv="${tsv}" -f "${KIT}/matrix.awk" "${exp}" "${res}"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "${lines[0]}" = "$(printf '%-24s | %-28s | %-28s' gate b1 b2)" ]
    # A cell of 28 characters or fewer is shown whole, a longer one cut.
    [[ "${lines[1]}" == "g1"*" | ✓ 1 MiB "*" | ✓ red (rss): 9 MiB "* ]]
    [[ "${lines[1]}" != *"…"* ]]
    [[ "${lines[2]}" == "g2"*" | ✗ red for rss, not growth"*"…"* ]]
    # 28 characters exactly are shown whole.
    [[ "${lines[2]}" == *" | skipped: no tool on this box" ]]
    [ "$(printf '%s\n' "${lines[@]:6}")" = "$(printf '%s\n' \
        "red cells red for their reason: 1 / 4; green cells green: 2 / 3" \
        "cells not run on these platforms: 2 (g3: macos only)" \
        "cells skipped: 1, each with its reason:" \
        "  g2 on b2: no tool on this box" \
        "gate cells: 3 passed, 4 failed")" ]
    local t=$'\t'
    [ "$(cat "${tsv}")" = "gate${t}build${t}expected${t}status${t}reason${t}figure${t}verdict
g1${t}b1${t}green${t}pass${t}-${t}1 MiB${t}ok
g1${t}b2${t}red:rss${t}fail${t}rss${t}9 MiB${t}ok
g2${t}b1${t}red:growth${t}fail${t}rss${t}5 MiB${t}wrong
g2${t}b2${t}skip:no tool on this box${t}${t}${t}${t}skip
g3${t}b1${t}green${t}${t}${t}${t}n/a
g3${t}b2${t}green${t}${t}${t}${t}n/a
g4${t}b1${t}red:rss${t}pass${t}-${t}2 MiB${t}wrong
g4${t}b2${t}red:rss${t}${t}${t}${t}wrong
g5${t}b1${t}green${t}fail${t}growth${t}7 MiB${t}wrong
g5${t}b2${t}green${t}pass${t}-${t}3 MiB${t}ok" ]
    [ "$(cat "${md}")" = "| gate | b1 | b2 |
|---|---|---|
| g1 | ✓ 1 MiB | ✓ red (rss): 9 MiB |
| g2 | ✗ red for rss, not growth: 5 MiB | skipped: no tool on this box |
| g3 | n/a (macos only) | n/a (macos only) |
| g4 | ✗ survived: 2 MiB | ✗ no result |
| g5 | ✗ red (growth): 7 MiB | ✓ 3 MiB |

red cells red for their reason: 1 / 4; green cells green: 2 / 3" ]

    # One gate chosen, where every cell runs: the rest are not run, and
    # nothing is said of platforms or skips that did not happen.
    run awk -v platforms="all linux macos" -v only_gates="g1" -v md="${md}" -v tsv="${tsv}" \
        -f "${KIT}/matrix.awk" <(grep -v '^g2' "${exp}") "${res}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "${lines[@]:5}")" = "$(printf '%s\n' \
        "red cells red for their reason: 1 / 1; green cells green: 1 / 1" \
        "gate cells: 2 passed, 0 failed")" ]
    grep -q "^g5${t}b1${t}green${t}fail${t}growth${t}7 MiB${t}n/a\$" "${tsv}"
    grep -q '^| g5 | not run | not run |$' "${md}"

    # A reason with "skip" inside is a reason: only a cell that starts
    # with skip is skipped.
    printf 'gate\truns-on\tb1\nh\tall\tred:unskipped\n' >"${exp}"
    printf 'h\tb1\tfail\tunskipped\t1 MiB\n' >"${res}"
    run awk -v platforms="all" -v md="${md}" -v tsv="${tsv}" -f "${KIT}/matrix.awk" "${exp}" "${res}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "${lines[@]:2}")" = "$(printf '%s\n' \
        "red cells red for their reason: 1 / 1; green cells green: 0 / 0" \
        "gate cells: 1 passed, 0 failed")" ]
}

@test "resolve.awk resolves the builds' cells alone: the gate and its runs-on are kept as they are" {
    # A runs-on is one platform's name, never a list of colours: even one
    # written as a list is not read as one, and an empty one stays empty.
    run awk -v platforms="all linux" -f "${KIT}/resolve.awk" <<<"$(printf 'gate\truns-on\tb1\tb2\ng\tlinux,macos\tred:rss@linux,green\tgreen\nh\t\tred:rss\t\n')"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'gate\truns-on\tb1\tb2\ng\tlinux,macos\tred:rss\tgreen\nh\t\tred:rss\tgreen')" ]
}

@test "the matrix: where two colours apply here, the first is the cell's" {
    local out="${BATS_TEST_TMPDIR}/m" exp="${BATS_TEST_TMPDIR}/expected.tsv" os
    # This machine's own platform (linux or macos), which applies here as
    # "all" does.
    os="$("${GBGATE}" platforms | awk '{ for (i = 1; i <= NF; i++) if ($i != "all") { print $i; exit } }')"
    [ -n "$os" ] || skip "this machine is no platform but all (GBGATE_PLATFORMS)"
    # rounds on keeps is red for rss. Its platform's colour first: rss.
    awk -F'\t' -v OFS='\t' -v c="red:rss@${os},red:growth@all" '$1 == "rounds" { $4 = c } 1' \
        "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" \
        --gates "${TEST_DIR}/matrix/gates.tsv" --gate rounds --build keeps --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "$(printf '^rounds\tall\tgreen\tred:rss$')" "${out}/expected-here.tsv"
    grep -q "$(printf '^rounds\tkeeps\tred:rss\tfail\trss\t.*\tok$')" "${out}/matrix.tsv"
    # The same two the other way round: growth is the cell's, all is not
    # outranked by a named platform, and the cell is wrong.
    awk -F'\t' -v OFS='\t' -v c="red:growth@all,red:rss@${os}" '$1 == "rounds" { $4 = c } 1' \
        "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" \
        --gates "${TEST_DIR}/matrix/gates.tsv" --gate rounds --build keeps --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 1 ]
    grep -q "$(printf '^rounds\tall\tgreen\tred:growth$')" "${out}/expected-here.tsv"
    grep -q "$(printf '^rounds\tkeeps\tred:growth\tfail\trss\t.*\twrong$')" "${out}/matrix.tsv"
}

@test "the matrix: the guard's kills are red for guard-rss and guard-cpu, a bats gate's guard too" {
    local out="${BATS_TEST_TMPDIR}/m"
    # Both gates set --guard-rss 128MiB and --guard-cpu 2. The balloon
    # passes the size before any checkpoint, the spinner the CPU; the bats
    # gate must be killed there as gbgate run's is, not left to the default
    # 3 GiB and 120 s of CPU (the balloon stops at 512 MiB and sleeps: its
    # guard's --guard-s would end it, red for guard-time).
    run "${GBGATE}" matrix --expected "${TEST_DIR}/guard/expected.tsv" --builds "${TEST_DIR}/guard/builds.tsv" \
        --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gate cells: 6 passed, 0 failed"* ]] || false
    grep -q "$(printf "^guarded\tballoon\tred:guard-rss\tfail\tguard-rss\tround 1: killed at .* over the guard's 128.0 MiB\tok$")" \
        "${out}/matrix.tsv"
    grep -q "$(printf "^kept\tballoon\tred:guard-rss\tfail\tguard-rss\tkilled at .* over the guard's 128.0 MiB\tok$")" \
        "${out}/matrix.tsv"
    grep -q "$(printf '^guarded\tkeeps\tred:rss\tfail\trss\t.*\tok$')" "${out}/matrix.tsv"
    grep -q "$(printf "^guarded\tspins\tred:guard-cpu\tfail\tguard-cpu\tround 1: killed after .* s of CPU since its start, over the guard's 2 s .*\tok$")" \
        "${out}/matrix.tsv"
    grep -q "$(printf "^kept\tspins\tred:guard-cpu\tfail\tguard-cpu\tkilled after .* s of CPU since its start, over the guard's 2 s .*\tok$")" \
        "${out}/matrix.tsv"
}

@test "the matrix: a reason is matched whole: guard-rss is not rss, nor rss guard-rss" {
    local out="${BATS_TEST_TMPDIR}/m" exp="${BATS_TEST_TMPDIR}/expected.tsv"
    # kept is red for rss on keeps and killed by its guard on balloon;
    # expect each cell's reason for the other.
    awk -F'\t' -v OFS='\t' '$1 == "kept" { $3 = "red:guard-rss"; $4 = "red:rss" } 1' \
        "${TEST_DIR}/guard/expected.tsv" >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/guard/builds.tsv" \
        --gates "${TEST_DIR}/guard/gates.tsv" --gate kept --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"gate cells: 1 passed, 2 failed"* ]] || false
    grep -q "$(printf '^kept\tballoon\tred:rss\tfail\tguard-rss\t.*\twrong$')" "${out}/matrix.tsv"
    grep -q "$(printf '^kept\tkeeps\tred:guard-rss\tfail\trss\t.*\twrong$')" "${out}/matrix.tsv"
    grep -q "✗ red for guard-rss, not rss: killed at" "${out}/matrix.md"
}

@test "the matrix: a skipped cell and a gate of another platform are not run, and the skip's reason is printed whole" {
    local out="${BATS_TEST_TMPDIR}/m" d="${BATS_TEST_TMPDIR}"
    grep -E '^(rounds|climb)' "${TEST_DIR}/matrix/gates.tsv" | { printf 'gate\tprogram\targs\toptions\n'; cat; } >"$d/gates.tsv"
    # The build keeps has no program; the skip's reason has a "#", which
    # begins a comment only at the start of a line. climb runs only on a
    # platform named "other".
    awk -F'\t' -v OFS='\t' '$1 == "keeps" { $2 = "-" } 1' "${TEST_DIR}/matrix/builds.tsv" >"$d/builds.tsv"
    # A blank line before the header is no row.
    printf '\ngate\truns-on\tfrees\tkeeps\nrounds\tall\tgreen\tskip:no program (#12)\nclimb\tother\tgreen\tskip:no program\n' \
        >"$d/expected.tsv"
    run "${GBGATE}" matrix --expected "$d/expected.tsv" --builds "$d/builds.tsv" --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\n'"gbgate: build frees: rounds"$'\n'* ]] || false
    [[ "$output" == *$'\n'"cells not run on these platforms: 2 (climb: other only)"$'\n'* ]] || false
    [[ "$output" == *$'\n'"cells skipped: 1, each with its reason:"$'\n'"  rounds on keeps: no program (#12)"$'\n'* ]] || false
    [[ "$output" == *"gate cells: 1 passed, 0 failed"* ]] || false
    grep -q "$(printf '^rounds\tkeeps\tskip:no program (#12)\t\t\t\tskip$')" "${out}/matrix.tsv"
    grep -q '<testcase classname="keeps" name="rounds"><skipped message="skip:no program (#12)"/></testcase>' "${out}/junit.xml"
    [ ! -e "${out}/logs/rounds__keeps.log" ]
    [ ! -e "${out}/logs/climb__frees.log" ]
}

@test "the matrix: a gate its runner refuses is red for setup, the runner's words in its cell and kept in its log" {
    local out="${BATS_TEST_TMPDIR}/m" d="${BATS_TEST_TMPDIR}"
    # A cap with no unit: the runner stops at its options, before any log.
    printf 'gate\tprogram\targs\toptions\nunitless\tprog\t8 1\t--cap 64\nfine\tprog\t8 1\t--cap 32MiB\n' >"$d/gates.tsv"
    printf 'gate\truns-on\tfrees\nunitless\tall\tred:setup\nfine\tall\tgreen\n' >"$d/expected.tsv"
    run "${GBGATE}" matrix --expected "$d/expected.tsv" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    local said='gbgate: error: --cap takes a size such as 64MiB, 512KiB or 3GiB, not "64"'
    [[ "$output" == *$'\n'"  unitless                 fail setup          the runner gave no verdict: ${said} "$'\n'* ]] || false
    [[ "$output" == *"gate cells: 2 passed, 0 failed"* ]] || false
    [ "$(cat "${out}/logs/unitless__frees.log.err")" = "${said}" ]
    # A runner with nothing on its stderr leaves no such file.
    [ -s "${out}/logs/fine__frees.log" ]
    [ ! -e "${out}/logs/fine__frees.log.err" ]
}

@test "the matrix: a failsafe that passes stops everything" {
    local out="${BATS_TEST_TMPDIR}/m"
    cp "${TEST_DIR}/matrix/expected.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    # On the build that frees, the failsafe gate passes: the kit must stop.
    cp "${TEST_DIR}/matrix/gates.tsv" "${BATS_TEST_TMPDIR}/gates.tsv"
    run "${GBGATE}" matrix --expected "${BATS_TEST_TMPDIR}/expected.tsv" --builds "${TEST_DIR}/matrix/builds.tsv" \
        --out "${out}" --failsafe-build frees --no-charts
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAILSAFE BROKEN: the gates file's failsafe gate, on the build frees, was not red over its cap (it must be red for one of: rss retained-below lazy-free):"* ]] || false
    [ ! -s "${out}/matrix.tsv" ]
}

@test "the matrix: with no --failsafe-build and no failsafe row in the builds file, the failsafe gate runs on the first build" {
    local out="${BATS_TEST_TMPDIR}/m" bld="${BATS_TEST_TMPDIR}/builds.tsv" exp="${BATS_TEST_TMPDIR}/expected.tsv"
    cp "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    awk -F'\t' '$1 != "failsafe"' "${TEST_DIR}/matrix/builds.tsv" >"${bld}"
    # keeps first: the build that never gives back, red over the cap.
    awk -F'\t' -v OFS='\t' '!/^#/ { print $1, $2, $4, $3 }' "${TEST_DIR}/matrix/expected.tsv" >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${bld}" --gate rounds --build keeps --out "${out}" \
        --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gbgate: failsafe: the failsafe gate on keeps is red for rss"* ]] || false
    [[ "$output" == *"gate cells: 1 passed, 0 failed"* ]] || false
}

@test "the matrix: a failsafe red over its cap for another reason than rss runs the matrix; one red for a crash stops it" {
    local out="${BATS_TEST_TMPDIR}/m" bld="${BATS_TEST_TMPDIR}/builds.tsv"
    cp "${TEST_DIR}/matrix/expected.tsv" "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    # The failsafe gate runs "prog 64 1" under a 32 MiB cap. A failsafe
    # build whose program says its runtime holds 1 MiB of its 64 is red for
    # retained-below: over its cap, which is what the failsafe must see.
    awk -F'\t' -v OFS='\t' '$1 == "failsafe" { $2 = "${KIT_TEST_BIN}/prog retained" } 1' \
        "${TEST_DIR}/matrix/builds.tsv" >"${bld}"
    run "${GBGATE}" matrix --expected "${BATS_TEST_TMPDIR}/expected.tsv" --builds "${bld}" \
        --gate rounds --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gbgate: failsafe: the failsafe gate on failsafe is red for retained-below"* ]] || false
    [[ "$output" == *"gate cells: 2 passed, 0 failed"* ]] || false
    # A failsafe that crashes is red, but not over its cap: it proves
    # nothing about the judge, and the matrix stops.
    awk -F'\t' -v OFS='\t' '$1 == "failsafe" { $2 = "${KIT_TEST_BIN}/prog crash" } 1' \
        "${TEST_DIR}/matrix/builds.tsv" >"${bld}"
    run "${GBGATE}" matrix --expected "${BATS_TEST_TMPDIR}/expected.tsv" --builds "${bld}" \
        --gate rounds --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAILSAFE BROKEN: the gates file's failsafe gate, on the build failsafe, was not red over its cap (red for crash; it must be red for one of: rss retained-below lazy-free)"* ]] || false
    [ ! -s "${out}/matrix.tsv" ]
}

@test "the matrix refuses files that do not match" {
    local out="${BATS_TEST_TMPDIR}/m" exp="${BATS_TEST_TMPDIR}/expected.tsv"
    cp "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    # A gate with no definition, and a build the builds file lacks.
    printf 'gate\truns-on\tfrees\tsome-build\nrounds\tall\tgreen\tgreen\nnowhere\tall\tgreen\tgreen\n' >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}"
    [ "$status" -eq 2 ]
    [[ "$output" == *'the gate "nowhere"'*"has no row in"* ]]
    [[ "$output" == *'no row for the build "some-build"'* ]]
    [[ "$output" == *'the gate "climb" of'*"has no row in"* ]]
    # A # inside a row is no comment: its gate is still looked for.
    printf 'hashed\tbats\tjudged.bats\t--name a#b\n' >>"${BATS_TEST_TMPDIR}/gates.tsv"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}" \
        --gates "${BATS_TEST_TMPDIR}/gates.tsv"
    [ "$status" -eq 2 ]
    [[ "$output" == *'the gate "hashed" of'*"has no row in"* ]] || false
}

@test "the matrix refuses a run without both files, and gate and build names that are not plain words, exit 2" {
    local out="${BATS_TEST_TMPDIR}/m" exp="${BATS_TEST_TMPDIR}/expected.tsv"
    # Either file alone is not enough: the other is not looked for by default.
    run "${GBGATE}" matrix --expected "${TEST_DIR}/matrix/expected.tsv" --out "${out}"
    [ "$status" -eq 2 ]
    [ "$output" = "gbgate: error: matrix: --expected FILE and --builds FILE are required" ]
    run "${GBGATE}" matrix --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}"
    [ "$status" -eq 2 ]
    [ "$output" = "gbgate: error: matrix: --expected FILE and --builds FILE are required" ]
    # A name is a file name and a bats filter: a slash, a colon or a "#"
    # in it is refused as a name, whatever else is wrong with the row, and
    # only the name's whole, from its first character, is a plain word. A
    # "#" begins a comment only at the start of a line.
    cp "${TEST_DIR}/matrix/gates.tsv" "${TEST_DIR}/matrix/judged.bats" "${BATS_TEST_TMPDIR}/"
    printf 'gate\truns-on\tfrees\tx:keeps\tx#keeps\nsub/rounds\tall\tgreen\tgreen\tgreen\nsub#climb\tall\tgreen\tgreen\tgreen\n' \
        >"${exp}"
    run "${GBGATE}" matrix --expected "${exp}" --builds "${TEST_DIR}/matrix/builds.tsv" --out "${out}"
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *'the gate name "sub/rounds" is not letters, digits and - _ . (without __)'* ]] || false
    [[ "$output" == *'the gate name "sub#climb" is not letters, digits and - _ . (without __)'* ]] || false
    [[ "$output" == *'the build name "x:keeps" is not letters, digits and - _ . (without __)'* ]] || false
    [[ "$output" == *'the build name "x#keeps" is not letters, digits and - _ . (without __)'* ]] || false
}

@test "the C reader's child that cannot exec its program says so and ends, printing nothing more" {
    run --separate-stderr "${BATS_FILE_TMPDIR}/reader" --run-printing "${BATS_TEST_TMPDIR}/no-such-program"
    # shellcheck disable=SC2154 # run --separate-stderr sets stderr.
    echo "$output$stderr"
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'protocol exact\nprinted:')" ]
    [ "$stderr" = "gbgate: cannot run ${BATS_TEST_TMPDIR}/no-such-program: No such file or directory" ]
}

@test "the C reader reads a child of more stops than it keeps readings for, and writes nothing past its record" {
    # 70 checkpoints; the record keeps the readings of 64, and the 65th
    # has none.
    run "${BATS_FILE_TMPDIR}/reader" --run "${PROG}" frees 1 70
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "protocol exact" ]
}

@test "the C reader's child holds no descriptor of the reader's: only its output of the pipe, no stops file" {
    [[ -d /proc/self/fd ]] || skip "no /proc/self/fd to list a process's descriptors"
    local child="${BATS_TEST_TMPDIR}/fds"
    # Each descriptor of the child that is the pipe its output goes to,
    # or a stops file, is printed (bats' own descriptors are neither).
    # shellcheck disable=SC2016 # expands in the child
    printf '#!/usr/bin/env bash\nout="$(readlink /proc/$$/fd/1)"\nfor f in /proc/$$/fd/*; do\n  t="$(readlink "$f")" || continue\n  [[ "$t" == "$out" || "$t" == *gbgate-stops-* ]] && echo "fd ${f##*/}"\ndone\nexit 0\n' >"${child}"
    chmod +x "${child}"
    run "${BATS_FILE_TMPDIR}/reader" --run-printing "${child}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'protocol exact\nprinted:\nfd 1')" ]
}

@test "the C reader reads its children from outside at every checkpoint" {
    run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 64
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[2]}" = "stops frees 2 status 0" ]
    [ "${lines[3]}" = "protocol exact" ]
    [ "${lines[6]}" = "stops keeps 2 status 0" ]
    [ "${lines[7]}" = "protocol exact" ]
    # The child that gave 64 MiB back reads under 32 MiB; the one that kept
    # two rounds of it, over 128.
    (($(cut -d' ' -f3 <<<"${lines[1]}") < 32 * 1024))
    (($(cut -d' ' -f3 <<<"${lines[5]}") > 128 * 1024))
}

@test "the C reader says how much of a reading is LazyFree (Linux)" {
    [[ "$(uname -s)" == Linux ]] || skip "LazyFree is Linux's"
    # 32 MiB given back with MADV_FREE stay resident until the kernel wants
    # them: the reading holds them, and says they are lazily free.
    run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 32 lazy
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "stops lazy 1 status 0" ]
    [[ "${lines[0]}" =~ ^lazy\ left\ ([0-9]+)\ lazyfree\ ([0-9]+)$ ]]
    local rss="${BASH_REMATCH[1]}" lazy="${BASH_REMATCH[2]}"
    # The kernel may take some back at once when memory is short; most stay.
    ((lazy >= 16 * 1024 && lazy <= rss))
}

@test "the C reader reads a child whose checkpoints the helper makes" {
    # A bash child that checkpoints with gbgate checkpoint: the helper
    # needs GBGATE_PID (and the stops file) from the reader, and each
    # reading is filed under its name.
    local child="${BATS_TEST_TMPDIR}/child"
    # shellcheck disable=SC2016 # $r expands in the child, not here.
    printf '#!/usr/bin/env bash\nset -e\nfor r in 1 2; do "%s" checkpoint "round-$r" round=$r; done\n' "${GBGATE}" >"${child}"
    chmod +x "${child}"
    run "${BATS_FILE_TMPDIR}/reader" "${child}" 8 helper
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^helper\ round-1\ [1-9][0-9]*$ ]]
    [[ "${lines[1]}" =~ ^helper\ round-2\ [1-9][0-9]*$ ]]
    [ "${lines[2]}" = "stops helper 2 status 0" ]
    [ "${lines[3]}" = "protocol exact" ]
}

@test "the C reader reads a child that prints more than a pipe holds before its checkpoint" {
    # 300 KB in one line before round-1: the reader must keep emptying the
    # pipe while the child runs (a full pipe would block it before its
    # stop) and keep all of it as its buffer grows.
    local child="${BATS_TEST_TMPDIR}/loud"
    printf '#!/usr/bin/env bash\nset -e\nhead -c 300000 /dev/zero | tr "\\0" x\necho\n"%s" checkpoint round-1\necho more\n"%s" checkpoint round-2\n' \
        "${GBGATE}" "${GBGATE}" >"${child}"
    chmod +x "${child}"
    run "${BATS_FILE_TMPDIR}/reader" "${child}" 8 loud
    echo "$output" | cut -c1-200
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^loud\ round-1\ [1-9][0-9]*$ ]]
    [[ "${lines[1]}" =~ ^loud\ round-2\ [1-9][0-9]*$ ]]
    [ "${lines[2]}" = "stops loud 2 status 0" ]
    [ "${lines[3]}" = "protocol exact" ]
}

@test "the C reader, interrupted by signals while it waits for the child's last output, loses none of it" {
    # The child's checkpoint line is its first; then it leaves a process
    # behind that prints later, holding the pipe open: the reader's last
    # read blocks until then, under a signal every millisecond.
    local child="${BATS_TEST_TMPDIR}/late"
    printf '#!/usr/bin/env bash\nset -e\n"%s" checkpoint round-1\n(sleep 0.3; echo printed-late) &\n' \
        "${GBGATE}" >"${child}"
    chmod +x "${child}"
    run "${BATS_FILE_TMPDIR}/reader" --run-interrupted "${child}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "protocol exact" ]
    [ "${lines[1]}" = "ticks some" ]
    [ "${lines[2]}" = "printed:" ]
    [ "${lines[4]}" = "printed-late" ]
}

@test "the settle's sleep, interrupted by signals, still sleeps its whole time" {
    # gbgate_sleep under a signal every millisecond: each interrupted
    # nanosleep goes on with what is left. Only a lower bound on the time
    # slept is asked, which a busy machine cannot break.
    run "${BATS_FILE_TMPDIR}/reader" --sleep 0.3
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "slept whole, interrupted some" ]
}

@test "the C reader's stops file holds the stops it has read, each written before it continues the child, and goes with the run" {
    # A child that reads the file (GBGATE_STOPS_FILE) before its first
    # checkpoint and after each: the helper takes a count above the one it
    # read as the proof of its stop. The file is made in TMPDIR.
    local child="${BATS_TEST_TMPDIR}/counts" tmp="${BATS_TEST_TMPDIR}/tmp"
    mkdir "${tmp}"
    # shellcheck disable=SC2016 # $GBGATE_STOPS_FILE expands in the child, not here.
    printf '#!/usr/bin/env bash\nset -e\necho "before $(cat "$GBGATE_STOPS_FILE")"\n"%s" checkpoint round-1\necho "after-1 $(cat "$GBGATE_STOPS_FILE")"\n"%s" checkpoint round-2\necho "after-2 $(cat "$GBGATE_STOPS_FILE")"\necho "file $GBGATE_STOPS_FILE"\n' \
        "${GBGATE}" "${GBGATE}" >"${child}"
    chmod +x "${child}"
    TMPDIR="${tmp}" run "${BATS_FILE_TMPDIR}/reader" --run-printing "${child}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "protocol exact" ]
    [ "${lines[1]}" = "printed:" ]
    [ "${lines[2]}" = "before 0" ]
    [ "${lines[4]}" = "after-1 1" ]
    [ "${lines[6]}" = "after-2 2" ]
    [[ "${lines[7]}" == "file ${tmp}/gbgate-stops-"* ]]
    [ -z "$(ls -A "${tmp}")" ]
    # Without a TMPDIR to use (none, empty, or longer than a path the
    # reader keeps), the file is made in /tmp.
    local long
    long="${tmp}/$(printf 'd%.0s' {1..5000})"
    for t in unset "" "${long}"; do
        if [[ "$t" == unset ]]; then
            run env -u TMPDIR "${BATS_FILE_TMPDIR}/reader" --run-printing "${child}"
        else
            TMPDIR="$t" run "${BATS_FILE_TMPDIR}/reader" --run-printing "${child}"
        fi
        [ "$status" -eq 0 ]
        [ "${lines[6]}" = "after-2 2" ]
        [[ "${lines[7]}" == "file /tmp/gbgate-stops-"* ]]
    done
    # The longest TMPDIR it keeps: 4,064 bytes, which leave room for the
    # file's name in its 4,096.
    local edge="${tmp}"
    while ((${#edge} + 201 <= 4064)); do
        edge="${edge}/$(printf 'e%.0s' {1..200})"
    done
    edge="${edge}/$(printf 'f%.0s' $(seq 1 $((4064 - ${#edge} - 1))))"
    mkdir -p "${edge}"
    [ "${#edge}" -eq 4064 ]
    TMPDIR="${edge}" run "${BATS_FILE_TMPDIR}/reader" --run-printing "${child}"
    [ "$status" -eq 0 ]
    [[ "${lines[7]}" == "file ${edge}/gbgate-stops-"* ]]
}

@test "the C reader's forked child does not print again what the reader had not flushed" {
    # Through a pipe the reader's stdout is fully buffered: a line it
    # printed before the fork is still in its buffer, which the forked
    # child inherits and would print again, into the reader's pipe.
    run "${BATS_FILE_TMPDIR}/reader" --fork
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^printed before the fork$' <<<"$output")" -eq 1 ]
    [[ "$output" == *"stops forked 2 status 0"* ]]
    [[ "$output" == *"protocol exact"* ]]
}

@test "the C reader's children do not settle because the reader is gated with --settle" {
    # The reader itself under gbgate run --settle has GBGATE_SETTLE_S; its
    # child must not inherit it, or each checkpoint would stop twice.
    GBGATE_SETTLE_S=0.2 run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 8 frees
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[2]}" = "stops frees 2 status 0" ]
    [ "${lines[3]}" = "protocol exact" ]
    # The same through the runner: the reader's own frees program keeps
    # to the protocol, and the reader exits 0.
    run "${GBGATE}" run --settle 0.2 --log "${BATS_TEST_TMPDIR}/log" -- "${BATS_FILE_TMPDIR}/reader" "${PROG}" 8 frees
    grep -qx "stops frees 2 status 0" "${BATS_TEST_TMPDIR}/log"
    grep -qx "protocol exact" "${BATS_TEST_TMPDIR}/log"
}

@test "the C reader pairs a settled line with its own stop, and reads it under its name" {
    # A child asked to settle (extra_env) stops twice at each checkpoint:
    # after its checkpoint line and after its settled line.
    run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 8 settle
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^settle\ round-1\ [1-9][0-9]*$ ]]
    [ "${lines[1]}" = "settle round-1 at stop 0" ]
    [[ "${lines[2]}" =~ ^settle\ round-1-settled\ [1-9][0-9]*\ at\ stop\ 1$ ]]
    [[ "${lines[3]}" =~ ^settle\ round-2\ [1-9][0-9]*$ ]]
    [ "${lines[4]}" = "settle round-2 at stop 2" ]
    [[ "${lines[5]}" =~ ^settle\ round-2-settled\ [1-9][0-9]*\ at\ stop\ 3$ ]]
    [ "${lines[6]}" = "stops settle 4 status 0" ]
    [ "${lines[7]}" = "protocol exact" ]
}

@test "the C reader names a lost stop, a line never read and a stop with no line, and files no reading under a wrong name" {
    # lost: round-1 and round-2 printed before the first stop; after the
    # second the counts agree again, but no reading past the break can be
    # named, so neither name has one.
    run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 8 lost
    echo "$output"
    [ "$status" -eq 1 ]
    [ "${lines[0]}" = "lost round-1 -1" ]
    [ "${lines[1]}" = "lost round-2 -1" ]
    [ "${lines[2]}" = "stops lost 3 status 0" ]
    [ "${lines[3]}" = "protocol at stop 1 it had printed 2 checkpoint lines: a stop lost or late (a SIGSTOP sent to the process, not the thread?)" ]
    # unread: round-1 read where it stopped; round-2 printed, never read.
    run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 8 unread
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "${lines[0]}" =~ ^unread\ round-1\ [1-9][0-9]*$ ]]
    [ "${lines[1]}" = "unread round-2 -1" ]
    [ "${lines[3]}" = "protocol 2 checkpoint lines printed, 1 read while stopped there: a line printed and never read" ]
    # mute: round-1 read; then a stop with no line; round-2's reading
    # would be the mute stop's, so it has none.
    run "${BATS_FILE_TMPDIR}/reader" "${PROG}" 8 mute
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "${lines[0]}" =~ ^mute\ round-1\ [1-9][0-9]*$ ]]
    [ "${lines[1]}" = "mute round-2 -1" ]
    [ "${lines[3]}" = "protocol stop 2 came with no new checkpoint line (1 printed; stdout not flushed?)" ]
}
