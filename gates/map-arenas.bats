#!/usr/bin/env bats
# map-arenas.bats -- a region of 8,000 compacted maps, left, leaves.
#
# Each map is compacted into an arena of its own; the arena must go when
# the region holding the map's struct is left (the article: 991 MB held on
# macOS before the fix, 42 MB after).
bats_require_minimum_version 1.8.0

setup() {
    load lib
    gate_setup
}

teardown() {
    gate_teardown
}

@test "map-arenas" {
    local built
    gate_start "$(gate_bin)" map-arenas
    gate_next || gate_fail map-arenas guard "${GATE_REASON:-exited early}"
    built="$(gate_rss_kib)"
    gate_continue
    gate_next || gate_fail map-arenas guard "${GATE_REASON:-exited early}"
    gate_judge map-arenas "${RSS_CAP_KIB}" "after leave (built: $(mib "${built}"))" || return 1
    gate_finish || gate_fail map-arenas exit "${GATE_REASON}"
    gate_pass map-arenas "$(gate_readings) (built: $(mib "${built}"))"
}
