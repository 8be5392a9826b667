#!/usr/bin/env bats
# pin-walk.bats -- pin-check work grows linearly with retirements.
#
# With idle suspended coroutines around, N then 2N regions are retired,
# each pinned by a coroutine of its own. The runtime counts the stack words
# its pin checks read and the summary probes they make; for 2N that work
# must be about twice the work for N (at most --ratio in gates.tsv: linear
# is 2, the quadratic walk makes it 4 or more), not four times, as the
# article's quadratic re-walk made it. A counter, not a clock: the
# machines are noisy.
bats_require_minimum_version 1.8.0

setup() {
    load kit/gate
    gate_setup
}

teardown() {
    gate_teardown
}

@test "pin-walk" {
    local n w1 w2 ratio max
    max="$(gate_opt ratio)"
    gate_cmd program
    gate_start "${GATE_CMD[@]}" pin-walk
    gate_wait || return 1
    n="$(gate_field n)"
    w1="$(gate_field work_n)"
    w2="$(gate_field work_2n)"
    gate_finish || return 1
    # The measure means something only if every region was pinned.
    if [[ "$(gate_field retired_n)" != "${n}" || "$(gate_field retired_2n)" != "$((2 * n))" ]]; then
        gate_fail pins "regions not retired while pinned: $(gate_field retired_n) of ${n}, $(gate_field retired_2n) of $((2 * n))"
    fi
    ratio="$(awk -v a="${w1}" -v b="${w2}" 'BEGIN { printf "%.2f", b / a }')"
    if awk -v r="${ratio}" -v m="${max}" 'BEGIN { exit !(r > m) }'; then
        gate_fail work "work ratio ${ratio} over the bound ${max} (${w1} for N, ${w2} for 2N)"
    fi
    gate_pass "ratio ${ratio} (${w1} / ${w2})"
}
