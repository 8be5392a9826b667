#!/usr/bin/env bats
# judged.bats -- a gate written in bats, for the kit's test matrix: one
# round of 64 MiB, judged against the --cap of its row in gates.tsv.
bats_require_minimum_version 1.8.0

setup() {
    load "${GATE_KIT}/gate"
    gate_setup
}

teardown() {
    gate_teardown
}

@test "judged" {
    gate_cmd prog
    gate_start "${GATE_CMD[@]}" 64 1
    gate_wait || return 1
    gate_judge "$(gate_opt_kib cap)" "after round 1" || return 1
    gate_finish || return 1
    gate_pass "$(gate_readings)"
}
