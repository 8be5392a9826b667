#!/usr/bin/env bats
# pinned-kept-then-freed.bats -- a pinned region survives, then leaves.
#
# A 256 MiB region is left while a suspended coroutine holds a pointer
# into it. It must stay resident (retired, not freed: at least --kept of
# gates.tsv) while the coroutine is suspended, read back intact when it
# resumes even though other regions came and went meanwhile, and leave the
# process (under --cap) once the coroutine has finished and a sweep has
# run.
bats_require_minimum_version 1.8.0

setup() {
    load kit/gate
    gate_setup
}

teardown() {
    gate_teardown
}

@test "pinned-kept-then-freed" {
    local kept min cap rc=0
    min="$(gate_opt_kib kept)"
    cap="$(gate_opt_kib cap)"
    gate_cmd program
    gate_start "${GATE_CMD[@]}" pinned-kept-then-freed
    gate_wait || return 1
    kept="$(gate_rss_kib)"
    gate_continue
    gate_next || rc=$?
    if ((rc != 0)); then
        if grep -q '^contents lost' "${GATE_OUT}"; then
            gate_fail contents "$(grep '^contents lost' "${GATE_OUT}")"
        fi
        ((rc == 2)) && gate_fail "${GATE_REASON}" "${GATE_DETAIL}"
        gate_fail crash "$(gk_exit_detail)"
    fi
    if ((kept < min)); then
        gate_fail contents "only $(gate_mib "${kept}") resident while pinned: the region was not kept"
    fi
    gate_judge "${cap}" "after the coroutine ended and a sweep ran" || return 1
    gate_finish || return 1
    grep -q '^contents intact' "${GATE_OUT}" || gate_fail contents "no 'contents intact' line"
    gate_pass "kept $(gate_mib "${kept}"), then $(gate_readings)"
}
