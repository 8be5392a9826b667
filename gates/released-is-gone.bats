#!/usr/bin/env bats
# released-is-gone.bats -- a left region's block is really unmapped.
#
# The library build leaves a region twice (the second round is the one
# glibc would serve from its heap), then a child process touches the left
# block (one larger than the block cache's bound, which it cannot keep):
# it must fault, as jemalloc's destroy test checks. Memory kept by malloc
# would still be readable. No checkpoint: the program says what happened.
bats_require_minimum_version 1.8.0

setup() {
    load kit/gate
    gate_setup
}

teardown() {
    gate_teardown
}

@test "released-is-gone" {
    gate_cmd library
    run "${GATE_CMD[@]}" released-is-gone
    if [[ "${output}" == no-fault* ]]; then
        gate_fail no-fault "${output}"
    fi
    if ((status != 0)); then
        gate_fail crash "status ${status}: ${output}"
    fi
    gate_pass "faulted"
}
