#!/usr/bin/env bats
# threads-leave.bats -- eight threads leave their regions, and the memory goes.
#
# Eight threads each grow a 400 MB region and leave it, all at the same
# time (3.2 GB at the peak, so the guard is THREADS_GUARD_RSS_KIB here),
# then one after another; each keeps a small malloc from its peak, in its
# own malloc arena on glibc. After all have left and been joined, and
# again after the turns, the resident size must be under
# SHAPE_RSS_CAP_KIB, and the turns no higher than the first phase. Run on
# the program and the library build.
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "threads-leave-program" {
    GUARD_RSS_KIB="${THREADS_GUARD_RSS_KIB}" \
        gate_rounds threads-leave-program "${SHAPE_RSS_CAP_KIB}" 2 "$(gate_bin)" threads-leave
}

@test "threads-leave-library" {
    GUARD_RSS_KIB="${THREADS_GUARD_RSS_KIB}" \
        gate_rounds threads-leave-library "${SHAPE_RSS_CAP_KIB}" 2 "$(gate_bin library)" threads-leave
}
