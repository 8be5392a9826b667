#!/usr/bin/env bats
# hold.bats -- the failsafe: the harness must report a failing gate as failing.
#
# The region gate runs here on a scenario that never leaves its 400 MB
# region. If this test passes, the harness cannot see a red gate, and the
# kill matrix proves nothing: ci/gate.sh stops on it.
bats_require_minimum_version 1.8.0

setup() {
    load ../lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "failsafe: a region that is never left is red" {
    gate_region_rounds failsafe map "$(gate_bin)" hold
}
