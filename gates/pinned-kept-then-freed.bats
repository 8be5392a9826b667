#!/usr/bin/env bats
# pinned-kept-then-freed.bats -- a pinned region survives, then leaves.
#
# A 256 MiB region is left while a suspended coroutine holds a pointer
# into it. It must stay resident (retired, not freed) while the coroutine
# is suspended, read back intact when it resumes even though other regions
# came and went meanwhile, and leave the process once the coroutine has
# finished and a sweep has run.
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "pinned-kept-then-freed" {
    local kept
    gate_start "$(gate_bin)" pinned-kept-then-freed
    gate_next || gate_fail pinned-kept-then-freed guard "${GATE_REASON:-exited early}"
    kept="$(gate_rss_kib)"
    gate_continue
    if ! gate_next; then
        if grep -q '^contents lost' "${GATE_OUT}"; then
            gate_fail pinned-kept-then-freed contents "$(grep '^contents lost' "${GATE_OUT}")"
        fi
        gate_fail pinned-kept-then-freed exit "${GATE_REASON:-exited with status ${GATE_STATUS:-?}}"
    fi
    if ((kept < PINNED_MIN_KIB)); then
        gate_fail pinned-kept-then-freed contents "only $(mib "${kept}") resident while pinned: the region was not kept"
    fi
    gate_judge pinned-kept-then-freed "${RSS_CAP_KIB}" "after the coroutine ended and a sweep ran" || return 1
    gate_finish || gate_fail pinned-kept-then-freed exit "${GATE_REASON}"
    grep -q '^contents intact' "${GATE_OUT}" || gate_fail pinned-kept-then-freed contents "no 'contents intact' line"
    gate_pass pinned-kept-then-freed "kept $(mib "${kept}"), then $(gate_readings)"
}
