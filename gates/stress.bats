#!/usr/bin/env bats
# stress.bats -- the article's test as a whole: it finishes, and leaves.
#
# 20,000 coroutines, each made, stepped once and dropped with a pointer
# into a region of 40 KiB that is then left, reclaimed 1,024 at a time,
# under GB_STRESS=50, with a malloc kept from the first 1,024's peak (on
# glibc it lands above their blocks and, were those malloc's, keeps them
# by glibc's own rules: scenarios/scenarios.c, gbs_stress): it must finish
# under the guard, hold no retired region after its final sweep, have a
# peak resident size under --peak of gates.tsv (read from outside where
# the OS keeps it), and right after the final sweep a resident size under
# --cap, judged with both readings (the runtime's counters beside ps). Run
# on the program and the library build; ci/coro-size-sweep.sh runs it again
# with the coroutine descriptor at several sizes.
bats_require_minimum_version 1.8.0

setup() {
    load kit/gate
    gate_setup
}

teardown() {
    gate_teardown
}

# gate_stress ROLE: the stress gate on the build's program for ROLE.
gate_stress() {
    local peak retired peak_cap
    peak_cap="$(gate_opt_kib peak)"
    gate_cmd "$1"
    GB_STRESS=50 gate_start "${GATE_CMD[@]}" stress
    gate_wait || return 1
    peak="$(gate_hwm_kib)"
    retired="$(gate_field retired)"
    gate_judge "$(gate_opt_kib cap)" "after the final sweep (peak $(gate_mib "${peak}"))" || return 1
    gate_finish || return 1
    if ((peak > peak_cap)); then
        gate_fail peak "peak $(gate_mib "${peak}"), over $(gate_mib "${peak_cap}")"
    fi
    ((retired == 0)) || gate_fail peak "${retired} regions still retired after the last sweep"
    gate_pass "peak $(gate_mib "${peak}"), then $(gate_readings)"
}

@test "stress-program" {
    gate_stress program
}

@test "stress-library" {
    gate_stress library
}
