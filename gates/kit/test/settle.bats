#!/usr/bin/env bats
# settle.bats -- settled readings (gbgate run --settle): memory a runtime
# gives back on a thread of its own, after the call that freed it, is
# judged once the program has settled, and the reading right after is
# reported beside it. settle.c frees its memory from a background thread
# shortly after it is first continued: red right after, green settled; a
# build that never gives back is red in both; a checkpoint that does not
# settle under --settle is red for protocol. Run by hand: bats
# gates/kit/test/settle.bats.
# shellcheck disable=SC2030,SC2031
bats_require_minimum_version 1.8.0

setup_file() {
    local dir kit
    dir="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    kit="$(dirname "${dir}")"
    "${CC:-cc}" -std=c99 -O1 -Wall -Wextra -Werror -pthread -I"${kit}" -o "${BATS_FILE_TMPDIR}/settle" "${dir}/settle.c"
}

load helpers

setup() {
    kit_paths
    SETTLE="${BATS_FILE_TMPDIR}/settle"
}

@test "memory given back on a background thread: red right after, green once settled" {
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" late 64
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at freed: "*"over the cap of 32.0 MiB" ]] || false
    # 2.0, not 2: a value that ends in zeros is no zero.
    run "${KIT_GBGATE}" run --cap 32MiB --settle 2.0 -- "${SETTLE}" late 64
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    # Both readings: the one right after over the cap, the settled one
    # under it, and when it got there: while it settled, sampled by the
    # guard's polls, before the settled stop (the thread frees 50 ms after
    # the continue; the settle is 2 s).
    (($(field freed right_after_rss_kib) > 32 * 1024))
    (($(field freed rss_kib) < 32 * 1024))
    local under after
    under="$(field freed under_cap_after_s)" after="$(field freed settled_after_s)"
    [[ "$under" =~ ^[0-9]+\.[0-9]{3}$ && "$after" =~ ^[0-9]+\.[0-9]{3}$ ]] || false
    awk -v u="$under" -v a="$after" 'BEGIN { exit !(u < a) }'
    [ "$(field freed mib)" = 64 ]
    [[ "${lines[${#lines[@]} - 2]}" == "gate: figure "*" MiB settled, "*" MiB right after, under the cap after ${under} s at freed"* ]] || false
}

@test "without --settle, memory given back while the program runs on is red for unsettled, not blamed below" {
    # Over the cap right after its checkpoint; continued, its background
    # thread gives the memory back 50 ms later while it runs on: the
    # runner reads it again and names that, red all the same.
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" goes-on 64
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (unsettled): at freed: "*"over the cap of 32.0 MiB; but read again while it ran on, it was under the cap "*" s after it was continued ("*" MiB): its runtime gives memory back on a thread of its own"*"--settle SECONDS"* ]] || false
    # The same when its runtime says it holds nothing: not blamed on an
    # allocator below it (retained-below), unsettled.
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" goes-on 64 50 0
    echo "$output"
    [[ "$(verdict)" == "gate: fail (unsettled): at freed: "*"the runtime holds 0.0 MiB"* ]] || false
    # Memory it still holds while it runs on through the window (given
    # back 5 s after the continue, past the 2 s the runner reads on) is
    # not unsettled: rss.
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" goes-on 64 5000
    echo "$output"
    [[ "$(verdict)" == "gate: fail (rss): at freed: "* ]] || false
    # Memory it keeps while it runs on is not unsettled: rss, as before.
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" keeps 64
    [[ "$(verdict)" == "gate: fail (rss): at freed: "* ]] || false
    # Nor is memory given back on the way out: a program that frees what
    # it kept and ends (Lua's lua_close) held it to the end.
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" late 64 0
    echo "$output"
    [[ "$(verdict)" == "gate: fail (rss): at freed: "* ]] || false
    # Nor when it gives the memory back while it runs on and ends inside
    # the window: a reading under the cap before the end is no settling.
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" ends 64
    echo "$output"
    [[ "$(verdict)" == "gate: fail (rss): at freed: "* ]] || false
    # Judged settled, a reading that is still over the cap is not read
    # again: the settle was the program's chance (its memory goes 0.5 s
    # after the continue, past a settle of 0.1 s).
    run "${KIT_GBGATE}" run --cap 32MiB --settle 0.1 -- "${SETTLE}" goes-on 64 500
    echo "$output"
    [[ "$(verdict)" == "gate: fail (rss): at freed (settled "* ]] || false
    # Settled, the same program is green.
    run "${KIT_GBGATE}" run --cap 32MiB --settle 1 -- "${SETTLE}" goes-on 64
    echo "$output"
    [ "$(verdict)" = "gate: pass" ]
}

@test "memory never given back is red right after and settled" {
    run "${KIT_GBGATE}" run --cap 32MiB -- "${SETTLE}" keeps 64
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at freed: "* ]] || false
    run "${KIT_GBGATE}" run --cap 32MiB --settle 0.5 -- "${SETTLE}" keeps 64
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (rss): at freed (settled "*" s; right after, "*" MiB): "*"over the cap of 32.0 MiB" ]] || false
    [ "$(field freed under_cap_after_s)" = never ]
    (($(field freed rss_kib) > 32 * 1024))
    (($(field freed right_after_rss_kib) > 32 * 1024))
}

@test "under --settle, a checkpoint that does not settle is red for protocol" {
    # A checkpoint of the program's own that ignores GBGATE_SETTLE_S: it
    # ends after one stop.
    run "${KIT_GBGATE}" run --cap 32MiB --settle 0.5 -- "${SETTLE}" once 8
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (protocol): it ended after checkpoint freed without its settled stop (with --settle, each checkpoint stops again after GBGATE_SETTLE_S seconds; does the program's checkpoint read it?)" ]
    # The helper with GBGATE_SETTLE_S taken from it: the next stop is the
    # next checkpoint, not the settled one.
    run "${KIT_GBGATE}" run --settle 0.5 -- env -u GBGATE_SETTLE_S bash "${KIT}/snippets/checkpoint.sh"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): checkpoint held did not settle: the next stop was \"checkpoint freed\", not \"settled held\""* ]] || false
    # A settled stop with no checkpoint before it, and one of another
    # checkpoint than the one read right before it.
    # shellcheck disable=SC2016  # $$ is the inner bash's
    run "${KIT_GBGATE}" run --settle 0.5 -- bash -c 'echo "settled held"; kill -STOP $$; true'
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(verdict)" = 'gate: fail (protocol): it stopped at "settled held" with no checkpoint before it to settle' ]
    # shellcheck disable=SC2016  # $$ is the inner bash's
    run "${KIT_GBGATE}" run --settle 0.5 -- bash -c 'echo "checkpoint held"; kill -STOP $$; echo "settled freed"; kill -STOP $$; true'
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == 'gate: fail (protocol): checkpoint held did not settle: the next stop was "settled freed", not "settled held"'* ]] || false
    # And a settled stop in a run without --settle.
    run "${KIT_GBGATE}" run -- env GBGATE_SETTLE_S=0.2 bash "${KIT}/snippets/checkpoint.sh"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): it stopped at \"settled held\", and the run has no --settle"* ]] || false
}

@test "the helper settles too, and the runner's wrapper check leaves it alone" {
    # While the program settles, the runner polls it and every tenth poll
    # looks for a stopped process elsewhere in its group (a wrapper's
    # child): the helper, alive and waiting the whole settle, is not one.
    run "${KIT_GBGATE}" run --cap 8MiB --settle 1.5 --at freed -- bash "${KIT}/snippets/checkpoint.sh"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$(field held right_after_rss_kib)" =~ ^[0-9]+$ ]] || false
    (($(field freed rss_kib) < 8 * 1024))
    [ "$(field freed under_cap_after_s)" = 0.000 ]
    # The figure is the judged checkpoint's, freed's, not held's, which
    # --at leaves out: its reading right after was already under the cap.
    [[ "${lines[${#lines[@]} - 2]}" =~ ^"gate: figure "[0-9.]+" MiB settled, "([0-9.]+)" MiB right after, under the cap after 0.000 s at freed" ]] || false
    awk -v m="${BASH_REMATCH[1]}" 'BEGIN { exit !(m < 8) }'
}

@test "the settled line: the reading right after, then the program's figures, its settled stop's winning" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    GK_SETTLE_AFTER_US=1250000 GK_SETTLE_UNDER_US=""
    [ "$(gk_settle_line "checkpoint freed round=2 held_kib=900" "settled freed held_kib=12 cached_kib=3" 70000 0 32768)" = \
        "checkpoint freed right_after_rss_kib=70000 right_after_lazyfree_kib=0 settled_after_s=1.250 under_cap_after_s=never round=2 held_kib=12 cached_kib=3" ]
    GK_SETTLE_UNDER_US=50000
    [ "$(gk_settle_line "checkpoint freed" "settled freed" 70000 8 "")" = \
        "checkpoint freed right_after_rss_kib=70000 right_after_lazyfree_kib=8 settled_after_s=1.250" ]
    [ "$(gk_settle_line "checkpoint freed" "settled freed" 70000 8 32768)" = \
        "checkpoint freed right_after_rss_kib=70000 right_after_lazyfree_kib=8 settled_after_s=1.250 under_cap_after_s=0.050" ]
}

@test "settling, a reading at the cap is under it, and a reading of 0 (no process) is none" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    # Right after, at the cap to the KiB: under it from the start.
    gk_settle_watch 32768 32768
    [ "${GK_SETTLE_UNDER_US}" = 0 ]
    # Over it right after; a poll that read nothing (0: the program was
    # ending) is not a reading under it; one at it is.
    gk_settle_watch 32768 70000
    gk_settle_sample 0
    [ -z "${GK_SETTLE_UNDER_US}" ]
    gk_settle_sample 32768
    [[ "${GK_SETTLE_UNDER_US}" =~ ^[0-9]+$ ]] || false
    # Never under it while it settled, and the settled reading at it: under
    # it after the whole settle.
    gk_settle_watch 32768 70000
    gk_settle_done 32768
    [ "${GK_SETTLE_UNDER_US}" = "${GK_SETTLE_AFTER_US}" ]
}

@test "--settle takes seconds" {
    run "${KIT_GBGATE}" run --settle soon -- "${SETTLE}" late 8
    [ "$status" -eq 2 ]
    [[ "$output" == *'--settle takes seconds (2, 0.5), not "soon"'* ]] || false
    # The whole value is seconds, not only its start or its end.
    local v
    for v in x5 5x; do
        run "${KIT_GBGATE}" run --settle "$v" -- "${SETTLE}" late 8
        [ "$status" -eq 2 ]
        [[ "$output" == *"--settle takes seconds (2, 0.5), not \"$v\""* ]] || false
    done
    # 0 is no settle: one stop per checkpoint.
    run "${KIT_GBGATE}" run --settle 0 -- "${SETTLE}" keeps 8
    [ "$status" -eq 0 ]
    [[ "$output" != *right_after_rss_kib* ]] || false
    # Settled without a cap: the figure has both readings and no word of
    # a cap it never had.
    run "${KIT_GBGATE}" run --settle 0.1 -- "${SETTLE}" keeps 8
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[${#lines[@]} - 3]}" == "gate: figure "*" MiB settled, "*" MiB right after at freed"* ]] || false
}

@test "the helper refuses a GBGATE_SETTLE_S that is not seconds, before its line, and the run names why" {
    # A settle the helper skipped would be a missing stop; one it cannot
    # read is an error before anything is printed or stopped.
    local v
    for v in x5 5x; do
        run "${KIT_GBGATE}" run -- env GBGATE_SETTLE_S="$v" bash "${KIT}/snippets/checkpoint.sh"
        echo "$output"
        [ "$status" -eq 1 ]
        [ "$(verdict)" = "gate: fail (crash): exited with status 2: gbgate checkpoint: error: GBGATE_SETTLE_S is \"$v\", not a number of seconds; the helper said: GBGATE_SETTLE_S is \"$v\", not a number of seconds" ]
    done
}

@test "the matrix shows right after and settled side by side, and the series both stops" {
    local d="${BATS_TEST_TMPDIR}" out="${BATS_TEST_TMPDIR}/m"
    printf '%s\n' 'build	prog' "late	${SETTLE} late" "keeps	${SETTLE} keeps" "failsafe	${SETTLE} keeps" >"$d/builds.tsv"
    printf '%s\n' 'gate	program	args	options' 'now	prog	64	--cap 32MiB' 'settled	prog	64	--cap 32MiB --settle 2' >"$d/gates.tsv"
    printf '%s\n' 'gate	runs-on	late	keeps' 'now	all	red:rss	red:rss' 'settled	all	green	red:rss' >"$d/expected.tsv"
    run "${KIT_GBGATE}" matrix --expected "$d/expected.tsv" --builds "$d/builds.tsv" --out "${out}" --no-charts
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gate cells: 4 passed, 0 failed"* ]] || false
    grep -q "^| settled | ✓ [0-9.]* MiB settled, [0-9.]* MiB right after, under the cap after [0-9.]* s at freed[^|]* | ✓ red (rss): at freed (settled [0-9.]* s; right after, [0-9.]* MiB): " "${out}/matrix.md"
    grep -q "$(printf '^settled\tlate\tgreen\tpass\t-\t.* MiB settled, .* MiB right after, under the cap after .*\tok$')" "${out}/matrix.tsv"
    grep -q "$(printf '\tfreed$')" "${out}/series/settled__late.tsv"
    grep -q "$(printf '\tfreed settled$')" "${out}/series/settled__late.tsv"
    run ! grep -q "settled" "${out}/series/now__late.tsv"
}
