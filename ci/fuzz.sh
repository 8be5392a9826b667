#!/usr/bin/env bash
# fuzz.sh -- builds and runs the fuzz target under libFuzzer and AFL++, and shows it has teeth.
#
# `make fuzz` runs this. A fuzzer that exits 0 proves nothing by itself:
# afl-fuzz exits 0 even after saving crashes, and a harness can be too weak
# to see the bugs it exists for. So the run mode judges each engine by what
# it saved (libFuzzer's crash-*/leak-*/timeout-*/oom-* files, AFL++'s
# crashes/ directory), prints a command that reproduces each crash, and the
# teeth mode runs the same target built on two poisoned runtimes with a
# fixed seed and a bounded number of executions: on unpinned-free it must
# report a use-after-free, on unbound-map-arena the end-of-input counter
# check must fail, and on the clean runtime the same bound must run clean.
#
# Each engine process runs one runtime configuration (the block source,
# growth path, small-chunk source and stress setting are per process, as
# gb_init runs once); processes take the configurations in turn, so with two
# or more cores every engine covers both block sources.
#
# Usage: ci/fuzz.sh [MODE]
#   run      (default) build, then libFuzzer for FUZZ_SECONDS with one
#            process per core, then AFL++ for FUZZ_SECONDS with one instance
#            per core (main + secondaries); fails if either saved a crash
#   teeth    build, then the teeth cases; one line per case and
#            "teeth: N passed, N failed"
#   replay   build, then replay the committed corpus in every configuration
#   merge    build, then merge what the last run found into fuzz/corpus,
#            minimized (libFuzzer -merge=1, each configuration)
#   build    build only
# Environment:
#   FUZZ_SECONDS   seconds per engine (default 300)
#   FUZZ_JOBS      processes per engine (default: the number of cores)
#   FUZZ_ENGINES   engines to run (default "libfuzzer afl"; those that are
#                  not installed are skipped with a message, but if none is,
#                  the script fails)
#   FUZZ_VARIANT   clean (default), unpinned-free or unbound-map-arena: the
#                  runtime the run mode fuzzes (a poison shows a crash being
#                  reported)
#   FUZZ_MAX_LEN   largest input (default 4096)
#   FUZZ_READER_RUNS  executions of the kit's reader target under libFuzzer
#                  in the run mode (default 100000; fuzz/reader.c)
#   TEETH_RUNS     the execution bound of the teeth cases that start from
#                  the committed corpus (default 20000)
#   TEETH_DISCOVER_RUNS  the bound of the case that starts from nothing
#                  (default 250000)
# Prerequisites: ci/install-deps.sh base fuzz
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mode="${1:-run}"
seconds="${FUZZ_SECONDS:-300}"
jobs="${FUZZ_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"
engines="${FUZZ_ENGINES:-libfuzzer afl}"
variant="${FUZZ_VARIANT:-clean}"
max_len="${FUZZ_MAX_LEN:-4096}"
teeth_runs="${TEETH_RUNS:-20000}"
discover_runs="${TEETH_DISCOVER_RUNS:-250000}"
build_jobs="${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}"

corpus="$root/fuzz/corpus"
# Hand-written inputs that each hold one promise (fuzz/seeds/README.md):
# every engine starts from them too, and a merge never drops them.
seeds="$root/fuzz/seeds"
dict="$root/fuzz/fuzz_runtime.dict"
out="$root/build/fuzz"
lf_dir="$out/libfuzzer"
afl_dir="$out/afl"
runs="$out/run"

log() { echo "fuzz.sh: $*"; }
die() { echo "fuzz.sh: error: $*" >&2; exit 1; }

# The runtime configurations (fuzz/configs.txt, those for this OS), one
# per engine process in turn: "name:NAME=value NAME=value".
configs=()
os_name="$(uname -s | tr '[:upper:]' '[:lower:]')"
while read -r name where env; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    [[ "$where" == any || "$where" == "$os_name" ]] && configs+=("$name:$env")
done <"$root/fuzz/configs.txt"
[[ ${#configs[@]} -gt 0 ]] || die "no configuration in fuzz/configs.txt for $os_name"
config_name() { echo "${configs[$1 % ${#configs[@]}]%%:*}"; }
config_env() { echo "${configs[$1 % ${#configs[@]}]#*:}"; }

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
werror=()
[[ -n "${CI:-}" ]] && werror=(-DGB_WERROR=ON)

# The clang that builds libFuzzer targets: $CC if it is a clang, else clang.
lf_cc() {
    if [[ -n "${CC:-}" ]] && "$CC" --version 2>/dev/null | grep -q clang; then
        echo "$CC"
    else
        command -v clang || true
    fi
}

have_engine() {
    case "$1" in
        libfuzzer) [[ -n "$(lf_cc)" ]] ;;
        afl) command -v afl-fuzz >/dev/null 2>&1 && command -v afl-clang-fast >/dev/null 2>&1 ;;
        *) die "unknown engine '$1' (libfuzzer or afl)" ;;
    esac
}

# The target name of a variant: fuzz_runtime[_afl][_<poison>].
target_of() {   # target_of ENGINE VARIANT
    local t=fuzz_runtime
    [[ "$1" == afl ]] && t+=_afl
    [[ "$2" != clean ]] && t+="_$2"
    echo "$t"
}

# The runtime and the harness carry libFuzzer's edge counters but not its
# comparison tracing: every choice in the input is taken modulo a count, so
# there is no magic value to find, and the tracing cost a third of the time.
build_libfuzzer() {
    local cc
    cc="$(lf_cc)"
    [[ -n "$cc" ]] || die "no clang for libFuzzer; run: ci/install-deps.sh fuzz"
    CC="$cc" cmake -S fuzz -B "$lf_dir" ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGB_SANITIZE=address,undefined \
        -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-coverage=trace-cmp" \
        -DGB_FUZZ_ENGINE=libfuzzer >/dev/null
    cmake --build "$lf_dir" --parallel "$build_jobs" --target fuzz_runtime fuzz_runtime_replay \
        fuzz_runtime_unpinned-free fuzz_runtime_unbound-map-arena fuzz_reader
}

build_afl() {
    AFL_QUIET=1 CC=afl-clang-fast cmake -S fuzz -B "$afl_dir" ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGB_SANITIZE=address,undefined \
        -DGB_FUZZ_ENGINE=afl >/dev/null
    AFL_QUIET=1 cmake --build "$afl_dir" --parallel "$build_jobs" \
        --target "$(target_of afl "$variant")"
}

# Engines asked for and installed; fails when none is.
active=()
select_engines() {
    local e
    for e in $engines; do
        if have_engine "$e"; then
            active+=("$e")
        else
            log "$e is not installed (ci/install-deps.sh fuzz): skipped"
        fi
    done
    [[ ${#active[@]} -gt 0 ]] || die "no fuzzing engine installed; run: ci/install-deps.sh fuzz"
}

build_all() {
    local e
    for e in "${active[@]}"; do
        log "building $e"
        "build_$e"
    done
}

symbolizer() {
    local s
    for s in llvm-symbolizer "llvm-symbolizer-$("$(lf_cc)" -dumpversion 2>/dev/null | cut -d. -f1)"; do
        command -v "$s" >/dev/null 2>&1 && { command -v "$s"; return; }
    done
}
sym="$(symbolizer || true)"
[[ -n "$sym" ]] && export ASAN_SYMBOLIZER_PATH="$sym"

# How to reproduce a crash file, with the libFuzzer build if there is one
# (symbolized reports), else the target itself.
repro() {   # repro ENV FILE
    local bin
    if [[ -x "$lf_dir/$(target_of libfuzzer "$variant")" ]]; then
        bin="$lf_dir/$(target_of libfuzzer "$variant")"
    else
        bin="$afl_dir/$(target_of afl "$variant")"
    fi
    printf '  reproduce: %s %s %q\n' "$1" "${bin#"$root"/}" "${2#"$root"/}"
}

# ------------------------------------------------------------------ run
failures=0

run_libfuzzer() {
    local bin i name env pids=() dir rc execs rate units found rss
    bin="$lf_dir/$(target_of libfuzzer "$variant")"
    log "libFuzzer: $jobs process(es) for ${seconds}s on the $variant runtime"
    for ((i = 0; i < jobs; i++)); do
        name="$(config_name "$i")"
        dir="$runs/libfuzzer-$i-$name"
        rm -rf "$dir"
        mkdir -p "$dir/corpus" "$dir/artifacts"
        env="$(config_env "$i")"
        # shellcheck disable=SC2086 # $env is a list of NAME=value words
        env $env "$bin" -max_total_time="$seconds" -timeout=20 -max_len="$max_len" \
            -dict="$dict" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
            "$dir/corpus" "$corpus" "$seeds" >"$dir/log" 2>&1 &
        pids+=($!)
    done
    for ((i = 0; i < jobs; i++)); do
        rc=0
        wait "${pids[$i]}" || rc=$?
        name="$(config_name "$i")"
        dir="$runs/libfuzzer-$i-$name"
        execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)"
        rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -n 1)"
        # The peak resident size shows a process that grows per execution
        # (memory kept across inputs that no counter sees) before it meets
        # libFuzzer's -rss_limit_mb.
        rss="$(sed -n 's/^stat::peak_rss_mb: *//p' "$dir/log" | tail -n 1)"
        units="$(find "$dir/corpus" -type f | wc -l | tr -d ' ')"
        found="$(find "$dir/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)"
        if [[ -n "$found" || "$rc" -ne 0 ]]; then
            failures=$((failures + 1))
            log "libFuzzer [$name]: FAILED (exit $rc) after ${execs:-?} executions; log: ${dir#"$root"/}/log"
            grep -E 'ERROR: |^fuzz_runtime: |SUMMARY: ' "$dir/log" | head -n 5 | sed 's/^/  /' || true
            local f
            for f in $found; do repro "$(config_env "$i")" "$f"; done
        else
            log "libFuzzer [$name]: clean: ${execs:-?} executions, ${rate:-?} exec/s, $units new inputs, peak rss ${rss:-?} MB"
        fi
    done
}

# The gate kit's C reader (fuzz/reader.c): libFuzzer for a number of
# executions (FUZZ_READER_RUNS), not a time, from its committed corpus;
# what it finds new is kept in the run's folder, a failure is a crash.
run_reader() {
    local dir="$runs/reader" rc=0 execs
    rm -rf "$dir"
    mkdir -p "$dir/corpus" "$dir/artifacts"
    log "libFuzzer: the kit's reader for ${FUZZ_READER_RUNS:-100000} executions"
    "$lf_dir/fuzz_reader" -runs="${FUZZ_READER_RUNS:-100000}" -max_len=8192 -timeout=20 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" "$root/fuzz/corpus-reader" >"$dir/log" 2>&1 || rc=$?
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)"
    if ((rc != 0)) || [[ -n "$(find "$dir/artifacts" -type f)" ]]; then
        failures=$((failures + 1))
        log "libFuzzer [reader]: FAILED (exit $rc) after ${execs:-?} executions; log: ${dir#"$root"/}/log"
        grep -E 'ERROR: |^reader: |SUMMARY: ' "$dir/log" | head -n 5 | sed 's/^/  /' || true
    else
        log "libFuzzer [reader]: clean: ${execs:-?} executions, $(find "$dir/corpus" -type f | wc -l | tr -d ' ') new inputs"
    fi
}

# AFL++ instance i: the main one first, then secondaries; each runs the
# configurations after those the libFuzzer processes ran. afl-fuzz takes
# names of at most 24 characters.
afl_name() {
    local name
    name="$(config_name "$(($1 + jobs))")"
    if (($1 == 0)); then name="main-$name"; else name="sec$1-$name"; fi
    echo "${name:0:24}"
}

run_afl() {
    local bin i env dir pids=() rc role flag crashes st execs rate items
    bin="$afl_dir/$(target_of afl "$variant")"
    dir="$runs/afl"
    rm -rf "$dir"
    mkdir -p "$dir"
    export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1
    # A core_pattern that pipes cores to a handler (apport, systemd-coredump)
    # delays crash reports; without root to change it, AFL++ must be told.
    if [[ -r /proc/sys/kernel/core_pattern && "$(cat /proc/sys/kernel/core_pattern)" == \|* ]]; then
        export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
    fi
    log "AFL++: $jobs instance(s) (main + secondaries) for ${seconds}s on the $variant runtime"
    for ((i = 0; i < jobs; i++)); do
        role="$(afl_name "$i")"
        flag=-S
        ((i == 0)) && flag=-M
        env="$(config_env "$((i + jobs))")"
        # shellcheck disable=SC2086 # $env is a list of NAME=value words
        env $env afl-fuzz "$flag" "$role" -V "$seconds" -m none -t 2000 -i "$corpus" -o "$dir" \
            -x "$dict" -- "$bin" >"$dir/$role.log" 2>&1 &
        pids+=($!)
    done
    for ((i = 0; i < jobs; i++)); do
        rc=0
        wait "${pids[$i]}" || rc=$?
        role="$(afl_name "$i")"
        st="$dir/$role/fuzzer_stats"
        execs="$(sed -n 's/^execs_done *: *//p' "$st" 2>/dev/null || true)"
        rate="$(sed -n 's/^execs_per_sec *: *//p' "$st" 2>/dev/null || true)"
        items="$(sed -n 's/^corpus_count *: *//p' "$st" 2>/dev/null || true)"
        # AFL++ 4.0x saves crashes in crashes/, later ones may say
        # saved_crashes/; both are checked, and afl-fuzz exits 0 either way.
        crashes="$(find "$dir/$role/crashes" "$dir/$role/saved_crashes" -type f -name 'id:*' 2>/dev/null | sort || true)"
        if [[ -n "$crashes" || "$rc" -ne 0 || ! -f "$st" ]]; then
            failures=$((failures + 1))
            log "AFL++ [$role]: FAILED (exit $rc, $(grep -c . <<<"$crashes") crash(es)) after ${execs:-?} executions; log: ${dir#"$root"/}/$role.log"
            local f n=0 seed
            if [[ ! -f "$st" ]]; then
                tail -n 15 "$dir/$role.log" | sed 's/^/  /'
                # A seed that crashes stops afl-fuzz before it fuzzes.
                seed="$(sed -n "s/.*Test case '\([^']*\)' results in a crash.*/\1/p" "$dir/$role.log" | head -n 1)"
                [[ -n "$seed" ]] && crashes="$corpus/$(basename "$seed")"
            fi
            while IFS= read -r f; do
                [[ -n "$f" ]] || continue
                n=$((n + 1))
                ((n <= 5)) && repro "$(config_env "$((i + jobs))")" "$f"
            done <<<"$crashes"
        else
            log "AFL++ [$role]: clean: ${execs:-?} executions, ${rate:-?} exec/s, ${items:-?} inputs in its queue"
        fi
    done
}

# ---------------------------------------------------------------- teeth
teeth_passed=0
teeth_failed=0

# Address-space randomisation changes which paths a run takes (pin-check
# summaries depend on addresses); without it, and with libFuzzer's
# clock-driven corpus reload off, a fixed seed gives the same run every
# time on a given build. setarch is util-linux; elsewhere the bounds keep a
# margin.
no_aslr=()
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
    no_aslr=(setarch "$(uname -m)" -R)
fi

# tooth NAME VARIANT ENV EXPECT [RUNS [START]]: EXPECT is "clean" or a
# regex the report must match; the run has a fixed seed and at most RUNS
# executions (TEETH_RUNS), starting from the committed corpus and the
# hand-written seeds, or from nothing but the dictionary when START is
# "none".
tooth() {
    local name="$1" var="$2" env="$3" expect="$4" bound="${5:-$teeth_runs}" start="${6:-corpus}"
    local bin dir rc=0 execs line verdict from=()
    bin="$lf_dir/$(target_of libfuzzer "$var")"
    dir="$runs/teeth/$name"
    rm -rf "$dir"
    mkdir -p "$dir/corpus" "$dir/artifacts"
    [[ "$start" != none ]] && from=("$corpus" "$seeds")
    # shellcheck disable=SC2086 # $env is a list of NAME=value words
    env $env ${no_aslr[@]+"${no_aslr[@]}"} "$bin" -seed="${TEETH_SEED:-2}" -reload=0 -runs="$bound" -max_len="$max_len" -timeout=20 \
        -dict="$dict" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
        ${from[@]+"${from[@]}"} >"$dir/log" 2>&1 || rc=$?
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)"
    if [[ "$expect" == clean ]]; then
        if [[ "$rc" -eq 0 ]]; then
            verdict=pass
            line="clean in ${execs:-?} executions (bound $bound)"
        else
            verdict=FAIL
            line="expected clean, failed (exit $rc) after ${execs:-?} executions: $(grep -m 1 -E 'ERROR: |^fuzz_runtime: operation' "$dir/log" | cut -c1-200 || true)"
        fi
    else
        line="$(grep -m 1 -E "$expect" "$dir/log" || true)"
        if [[ "$rc" -ne 0 && -n "$line" ]]; then
            verdict=pass
            line="caught in ${execs:-?} executions (bound $bound): $(sed -E 's/^==[0-9]+==//; s/ on (unknown )?address.*//; s/^fuzz_runtime: //' <<<"$line" | cut -c1-120)"
        else
            verdict=FAIL
            line="expected /$expect/, got exit $rc after ${execs:-?} executions: $(grep -m 1 -E 'ERROR: |^fuzz_runtime: operation' "$dir/log" | cut -c1-200 || echo 'nothing reported')"
        fi
    fi
    if [[ "$verdict" == pass ]]; then teeth_passed=$((teeth_passed + 1)); else teeth_failed=$((teeth_failed + 1)); fi
    printf 'teeth: %-4s %-28s %s\n' "$verdict" "$name" "$line"
    [[ "$verdict" == pass ]] || echo "  log: ${dir#"$root"/}/log"
}

run_teeth() {
    # A region freed while pinned is read after the free: ASan reports it
    # (freed heap memory, an unmapped block, memory the runtime poisoned;
    # "stack-overflow" when the unmapped block lay next to a stack), or, when
    # the memory was handed out again first (the runtime's block cache,
    # slabs), the model sees other bytes than it wrote, gb_region_info says
    # FREED, or a reset did not retire what a frozen stack points into.
    # Never the end-of-input counters nor the count of a region's arenas:
    # those are the other poison's signature (an arena bound to no region
    # is not counted in its region's gb_region_info, nor found there by
    # gb_region_of, and outlives it).
    local uaf='AddressSanitizer: (heap-use-after-free|SEGV on unknown address|use-after-poison|stack-overflow)'
    uaf+='|^fuzz_runtime: operation [0-9]+ \([a-z]+\): (allocation|vec|map|coroutine [0-9]+: its stack|regions_retired|region [0-9]+ (is FREED|was reset while a frozen))'
    local leak='container arenas bound|in its arena|end of input: the runtime still holds memory'
    tooth clean/map clean "GB_BLOCKS=map" clean
    tooth clean/heap clean "GB_BLOCKS=heap GB_STRESS=3" clean
    tooth unpinned-free/map unpinned-free "GB_BLOCKS=map" "$uaf"
    tooth unpinned-free/heap unpinned-free "GB_BLOCKS=heap" "$uaf"
    tooth unbound-map-arena/map unbound-map-arena "GB_BLOCKS=map" "$leak"
    tooth unbound-map-arena/heap unbound-map-arena "GB_BLOCKS=heap" "$leak"
    # Not replayed but found: from the dictionary alone, the fuzzer must
    # build the interleaving itself (25,000 to 95,000 executions here, by
    # seed and environment).
    tooth unpinned-free/discovered unpinned-free "GB_BLOCKS=heap" "$uaf" "$discover_runs" none
    echo "teeth: $teeth_passed passed, $teeth_failed failed"
    [[ "$teeth_failed" -eq 0 ]]
}

# --------------------------------------------------------------- replay
run_replay() {
    local i env bad=0
    for ((i = 0; i < ${#configs[@]}; i++)); do
        env="$(config_env "$i")"
        # shellcheck disable=SC2086 # $env is a list of NAME=value words
        if env $env "$lf_dir/fuzz_runtime_replay" "$corpus" "$seeds" >"$runs/replay-$i.log" 2>&1; then
            log "replay [$(config_name "$i")]: $(grep '^replay:' "$runs/replay-$i.log")"
        else
            bad=$((bad + 1))
            log "replay [$(config_name "$i")]: FAILED"
            tail -n 20 "$runs/replay-$i.log" | sed 's/^/  /'
        fi
    done
    [[ "$bad" -eq 0 ]]
}

# ---------------------------------------------------------------- merge
# Merges the committed corpus and everything the last runs found, in every
# configuration, into the smallest set that keeps their edge coverage
# (-use_counters=0: a new hit count of an edge already covered does not
# earn an input its place; the engines grow the counts back in minutes).
run_merge() {
    local i env d merged="$out/merged" sources=()
    while IFS= read -r d; do
        sources+=("$d")
    done < <(find "$runs" -maxdepth 3 -type d \( -path '*/libfuzzer-*/corpus' -o -path '*/afl/*/queue' \) | sort)
    rm -rf "$merged"
    mkdir -p "$merged"
    for ((i = 0; i < ${#configs[@]}; i++)); do
        env="$(config_env "$i")"
        # shellcheck disable=SC2086 # $env is a list of NAME=value words
        env $env "$lf_dir/fuzz_runtime" -merge=1 -use_counters=0 -max_len="$max_len" -timeout=20 \
            "$merged" "$corpus" \
            ${sources[@]+"${sources[@]}"} >"$runs/merge-$i.log" 2>&1 ||
            { tail -n 20 "$runs/merge-$i.log"; die "merge failed ($(config_name "$i"))"; }
    done
    # Content-addressed names, as libFuzzer writes them.
    rm -f "$corpus"/*
    cp "$merged"/* "$corpus"/
    log "merge: fuzz/corpus now holds $(find "$corpus" -type f | wc -l | tr -d ' ') inputs ($(cat "$corpus"/* | wc -c | tr -d ' ') bytes) from ${#sources[@]} run corpora"
}

mkdir -p "$runs"
case "$mode" in
    run)
        select_engines
        build_all
        for e in "${active[@]}"; do "run_$e"; done
        [[ " ${active[*]} " != *" libfuzzer "* ]] || run_reader
        if ((failures)); then
            log "$failures engine process(es) saved crashes or failed"
            exit 1
        fi
        log "all clean"
        ;;
    teeth)
        engines=libfuzzer
        select_engines
        build_all
        run_teeth
        ;;
    replay)
        engines=libfuzzer
        select_engines
        build_all
        run_replay
        ;;
    merge)
        engines=libfuzzer
        select_engines
        build_all
        run_merge
        ;;
    build)
        select_engines
        build_all
        ;;
    -h | --help) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "unknown mode '$mode' (run, teeth, replay, merge, build)" ;;
esac
