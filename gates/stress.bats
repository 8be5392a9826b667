#!/usr/bin/env bats
# stress.bats -- the article's test shape finishes under the guard.
#
# 20,000 coroutines, each made, stepped once and dropped with a pointer
# into a region that is then left, reclaimed 1,024 at a time, under
# GB_STRESS=50: it must finish under the guard with a peak resident size
# under STRESS_PEAK_CAP_KIB (read from outside where the OS keeps it).
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "stress" {
    local peak retired
    GB_STRESS=50 gate_start "$(gate_bin)" stress
    gate_next || gate_fail stress guard "${GATE_REASON:-exited early (status ${GATE_STATUS:-?})}"
    peak="$(gate_hwm_kib)"
    retired="$(gate_field retired)"
    gate_finish || gate_fail stress exit "${GATE_REASON}"
    if ((peak > STRESS_PEAK_CAP_KIB)); then
        gate_fail stress peak "peak $(mib "${peak}"), over $(mib "${STRESS_PEAK_CAP_KIB}")"
    fi
    ((retired == 0)) || gate_fail stress peak "${retired} regions still retired after the last sweep"
    gate_pass stress "peak $(mib "${peak}")"
}
