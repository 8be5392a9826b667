#!/usr/bin/env bats
# small-regions.bats -- thousands of small regions leave the process too.
#
# The shape of a parser or a request handler: 4,096 nested regions of 4 to
# 32 KiB each, a malloc kept from their peak, all left; then 4,096 more in
# sequence, each with a malloc kept from its own peak; three rounds. From
# malloc, such blocks stay whenever anything allocated after them is live
# (glibc's heap shrinks only from its top), and every counter of the
# runtime then reads zero while the process still holds them: the
# article's open item ("blocks under 16 KB are still kept by malloc").
# After every round the resident size must be under SHAPE_RSS_CAP_KIB and
# not grow round over round, on the program and the library build.
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "small-regions-program" {
    gate_rounds small-regions-program "${SHAPE_RSS_CAP_KIB}" 3 "$(gate_bin)" small-regions
}

@test "small-regions-library" {
    gate_rounds small-regions-library "${SHAPE_RSS_CAP_KIB}" 3 "$(gate_bin library)" small-regions
}
