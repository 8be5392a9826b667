#!/usr/bin/env bats
# region-400mb.bats -- a 400 MB region, left three times, leaves the process.
#
# The article's gate: grow a region to 400 MB with blocks of similar sizes,
# keep a small allocation from its peak, leave it, and read the resident
# size from outside with ps. After every leave it must be under
# RSS_CAP_KIB, and the third round no higher than the first (beyond
# ROUND_GROWTH_KIB): glibc's ratchet only shows from round two on. Run on
# the program and the library build with their default block source, and
# with the heap source in the program build on glibc (the threshold fix's
# gate).
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "region-400mb-program" {
    gate_region_rounds region-400mb-program auto "$(gate_bin)"
}

@test "region-400mb-heap" {
    gate_platform_is glibc || skip "the heap source is glibc's"
    gate_region_rounds region-400mb-heap heap "$(gate_bin)"
}

@test "region-400mb-library" {
    gate_region_rounds region-400mb-library auto "$(gate_bin library)"
}
