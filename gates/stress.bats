#!/usr/bin/env bats
# stress.bats -- the article's test as a whole: it finishes, and leaves.
#
# 20,000 coroutines, each made, stepped once and dropped with a pointer
# into a region that is then left, reclaimed 1,024 at a time, under
# GB_STRESS=50: it must finish under the guard, hold no retired region
# after its final sweep, have a peak resident size under
# STRESS_PEAK_CAP_KIB (read from outside where the OS keeps it), and right
# after the final sweep a resident size under SHAPE_RSS_CAP_KIB, judged
# with both readings (the runtime's counters beside ps). Run on the
# program and the library build.
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

# gate_stress <gate> <program>
gate_stress() {
    local gate="$1" peak retired
    GB_STRESS=50 gate_start "$2" stress
    gate_next || gate_fail "${gate}" guard "${GATE_REASON:-exited early (status ${GATE_STATUS:-?})}"
    peak="$(gate_hwm_kib)"
    retired="$(gate_field retired)"
    gate_judge "${gate}" "${SHAPE_RSS_CAP_KIB}" "after the final sweep (peak $(mib "${peak}"))" || return 1
    gate_finish || gate_fail "${gate}" exit "${GATE_REASON}"
    if ((peak > STRESS_PEAK_CAP_KIB)); then
        gate_fail "${gate}" peak "peak $(mib "${peak}"), over $(mib "${STRESS_PEAK_CAP_KIB}")"
    fi
    ((retired == 0)) || gate_fail "${gate}" peak "${retired} regions still retired after the last sweep"
    gate_pass "${gate}" "peak $(mib "${peak}"), then $(gate_readings)"
}

@test "stress-program" {
    gate_stress stress-program "$(gate_bin)"
}

@test "stress-library" {
    gate_stress stress-library "$(gate_bin library)"
}
