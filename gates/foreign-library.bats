#!/usr/bin/env bats
# foreign-library.bats -- a third-party C library working inside regions.
#
# zlib (from the system's packages) takes its memory through its zalloc
# hook from a region per stream, the way a runtime hands a C library its
# arena: 24 MiB of text made in the region, deflated into it, inflated
# again and compared, about 33 MiB of region in all; a malloc kept from
# the peak; left; three rounds. After every round the resident size must
# be under SHAPE_RSS_CAP_KIB and not grow, on the program and the library
# build. A gate program built without zlib says so and is red.
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "foreign-library-program" {
    gate_rounds foreign-library-program "${SHAPE_RSS_CAP_KIB}" 3 "$(gate_bin)" foreign-library
}

@test "foreign-library-library" {
    gate_rounds foreign-library-library "${SHAPE_RSS_CAP_KIB}" 3 "$(gate_bin library)" foreign-library
}
