#!/usr/bin/env bats
# article-400mb.bats -- the article's gate, as it is written.
#
# The gate that must catch malloc-back: a gate program grows a 400 MB
# region and leaves it, stops, and a bats test reads its resident size
# from outside with `ps -o rss= -p PID`, which must be under 64 MiB, the
# article's figure. This is that test, word for word, on the builds the
# gate is meant for: the program build and the library build, each with
# its default block source, and on glibc the program build with blocks
# from malloc, where the dynamic threshold's fault shows from the second
# round on.
#
# Each test mirrors a row of gates.tsv that gbgate run judges (--same-as
# in its own row): the role, the scenario and the environment are read
# from that row, and so is its cap, which is stricter than the article's
# (the row's comment says why: a library build that keeps its blocks in
# malloc stays under 64 MiB). After each leave (the scenario's round-N
# checkpoints: a region grown to 400 MB, a small allocation kept from its
# peak, left) the reading of ps is judged against both, the article's cap
# (--article) first; the cell's figure is the highest reading and the
# leave it was read after. A reading ps cannot give is red, never 0.
bats_require_minimum_version 1.8.0

setup() {
    load kit/gate
    gate_setup
}

teardown() {
    gate_teardown
}

# article_gate: the test of the row that --same-as names.
article_gate() {
    local same article strict row role args options word next="" env_args=() words
    same="$(gate_opt same-as)"
    [[ -n "$same" ]] || {
        echo "article-400mb.bats: ${GATE_NAME} has no --same-as in ${GATE_GATES_FILE}" >&2
        return 1
    }
    row="$(gk_table_row "${GATE_GATES_FILE}" "$same")"
    [[ -n "$row" ]] || {
        echo "article-400mb.bats: ${GATE_GATES_FILE} has no row \"$same\" (the --same-as of ${GATE_NAME})" >&2
        return 1
    }
    IFS=$'\t' read -r _ role args options <<<"$row"
    [[ "$args" == region-400mb ]] || {
        echo "article-400mb.bats: $same runs \"$args\", not the 400 MB region (region-400mb)" >&2
        return 1
    }
    article="$(gate_opt_kib article)" || return 1
    strict="$(gk_option "$options" cap)"
    strict="$(gk_size_kib "$strict")" || {
        echo "article-400mb.bats: $same has no --cap that is a size in ${GATE_GATES_FILE}" >&2
        return 1
    }
    # Every --env of the row, in its order.
    read -r -a words <<<"$options"
    for word in ${words[@]+"${words[@]}"}; do
        if [[ "$next" == --env ]]; then
            env_args+=("$word")
        fi
        next="$word"
    done

    gate_cmd "$role"
    gate_start ${env_args[@]+"${env_args[@]}"} "${GATE_CMD[@]}" "$args"
    local round rss lazy held footprint worst=-1 worst_at="" worst_held=""
    for round in 1 2 3; do
        gate_wait "leave $round" || return 1
        if [[ "$(gk_checkpoint_name "${GATE_CHECKPOINT}")" != "round-$round" ]]; then
            gate_fail crash "the program stopped at \"${GATE_CHECKPOINT}\", not after leave $round (round-$round)"
        fi
        # The article's reading, from outside, in KiB on Linux and macOS.
        rss="$(ps -o rss= -p "${GATE_PID}" | tr -d ' ')"
        if [[ ! "$rss" =~ ^[0-9]+$ ]]; then
            gate_fail crash "ps -o rss= -p ${GATE_PID} read \"$rss\" after leave $round"
        fi
        lazy="$(gate_lazyfree_kib)"
        held="$(gate_field held_kib)"
        footprint="$(gate_field footprint_kib)"
        if ((rss > worst)); then
            worst=$rss worst_at="leave $round" worst_held="$held"
        fi
        if ! gk_judge "$article" "$rss" "$lazy" "$held" "$footprint" "ps after leave $round, the article's cap"; then
            gate_fail "$GK_REASON" "$GK_DETAIL"
        fi
        if ! gk_judge "$strict" "$rss" "$lazy" "$held" "$footprint" \
            "ps after leave $round, under the article's $(gate_mib "$article") but not $same's cap"; then
            gate_fail "$GK_REASON" "$GK_DETAIL"
        fi
        ((round == 3)) || gate_continue
    done
    gate_finish || return 1
    gate_pass "$(gate_mib "$worst")${worst_held:+ (runtime $(gate_mib "$worst_held"))} at $worst_at; under $(gate_mib "$article") and $(gate_mib "$strict")"
}

@test "article-400mb-program" {
    article_gate
}

@test "article-400mb-library" {
    article_gate
}

@test "article-400mb-heap" {
    article_gate
}
