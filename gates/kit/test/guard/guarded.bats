#!/usr/bin/env bats
# guarded.bats -- a gate written in bats, for the kit's guard matrix: rounds
# of 16 MiB, the first judged against the --cap of its row in gates.tsv,
# under the --guard-rss, --guard-cpu and --guard-s of that row (gate_setup
# reads them).
bats_require_minimum_version 1.8.0

setup() {
    load "${GATE_KIT}/gate"
    gate_setup
}

teardown() {
    gate_teardown
}

@test "guarded" {
    gate_cmd prog
    gate_start "${GATE_CMD[@]}" 16 32
    gate_wait "round 1" || return 1
    gate_judge "$(gate_opt_kib cap)" "after round 1" || return 1
    gate_finish || return 1
    gate_pass "$(gate_readings)"
}
