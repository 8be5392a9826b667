#!/usr/bin/env bash
# test.sh -- every test the project has, from nothing, as `make test` runs it.
#
# One script so that a developer, `.ci/run` and GitHub Actions run the same
# steps: the linters, the release build's tests, the shared library's ABI
# against the last release's (ci/abi.sh), the same tests under ASan
# and UBSan, the thread and coroutine tests under TSan, the kill matrix (ci/gate.sh), a
# short run of both fuzzing engines with the fuzzer's teeth, the mutation
# engine's own tests and its run on the lines changed since mutants/base
# (ci/mutants.sh, within a budget), every
# benchmark's quick mode (ci/bench.sh --quick: a broken benchmark fails
# here; its figures are not judged), the arm64 build under qemu-user and
# the macOS cross build where this
# machine can do them, and macOS's policies simulated on Linux (macos-sim:
# the runtime's tests and the kill matrix on runtime/src/os/sim_macos.c,
# judged by the macOS colours). Each stage prints its ctest summary and
# names every test it skipped, with the reason, counted (a skip without
# one fails the stage) and its time; the script ends with every stage's
# time and one "N passed, N failed" line over stages, and fails if any
# stage failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"

# Stages to run: all by default, or those named in GB_TEST_STAGES.
stages="${GB_TEST_STAGES:-lint release abi debug tsan gate fuzz mutants bench arm64 macos macos-sim}"
os="$(uname -s)"
arch="$(uname -m)"

passed=0
failed=0
failed_names=()
stage_times=""

# Each stage's output is kept in build/stages/<name>.log as well, so that
# the end of the run can show why a stage failed: a log's head may be
# thousands of lines above the last line a CI page shows.
stage() {
    local name="$1" rc secs t0=$SECONDS
    shift
    echo "=== stage: $name"
    mkdir -p "$root/build/stages"
    set +e
    "$@" 2>&1 | tee "$root/build/stages/$name.log"
    rc=${PIPESTATUS[0]}
    set -e
    # Its time, so that a run near CI's limit says which stage to look at.
    secs=$((SECONDS - t0))
    echo "=== stage $name: exit $rc after $secs s"
    stage_times="${stage_times:+$stage_times, }$name $secs s"
    if ((rc == 0)); then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failed_names+=("$name")
    fi
}

# A minute of each fuzzing engine, then the teeth (the fuzzer must catch
# the unpinned-free and unbound-map-arena poisons within a fixed number of
# executions); ctest replays the corpus in the release and debug stages.
fuzz_smoke() {
    FUZZ_SECONDS="${FUZZ_SECONDS:-60}" ci/fuzz.sh run && ci/fuzz.sh teeth
}

preset() {
    local p="$1" rc=0 junit="$root/build/$1/ctest-junit.xml"
    cmake --preset "$p" ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} &&
        cmake --build --preset "$p" --parallel "$jobs" || return 1
    rm -f "$junit"
    ctest --preset "$p" --parallel "$jobs" --output-junit "$junit" || rc=1
    gb_skips "$junit" || rc=1
    return "$rc"
}

# The mutation engine: its operators' tests and its teeth on its fixture
# (ci/mutants/test/), then the engine on every line in scope changed since
# the revision mutants/base names, each mutant killed, or argued in
# mutants/equivalent.tsv. The budget bounds the time the engine starts
# mutants in, so that the stage keeps .ci/run under its hour on a slow
# machine; a mutant it leaves untried is reported not-run, never passed.
mutants_stage() {
    local rc=0
    (cd ci/mutants/test && python3 -m unittest -q test_ops) || rc=1
    bats ci/mutants/test/engine.bats || rc=1
    ci/mutants.sh --since "$(cat mutants/base)" --budget "${GB_MUTANTS_BUDGET:-600}" --jobs "$jobs" || rc=1
    return "$rc"
}

# The runtime's tests on the simulated macOS layer, then the kill matrix
# on its builds (ci/gate.sh --macos-sim).
macos_sim() {
    local rc=0
    preset macos-sim || rc=1
    ci/gate.sh --macos-sim || rc=1
    return "$rc"
}

# The shared library's ABI against the release's record (ci/abi.sh); the
# release preset's build, made here if the release stage did not run.
abi_check() {
    cmake --preset release ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} >/dev/null &&
        cmake --build --preset release --parallel "$jobs" --target giveback >/dev/null &&
        ci/abi.sh check
}

for s in $stages; do
    case "$s" in
        abi)
            if [[ "$os" == Linux ]]; then
                stage abi abi_check
            else
                echo "=== stage abi: the recorded ABI is an ELF corpus, checked on Linux only (this is $os)"
            fi
            ;;
        release | debug | tsan) stage "$s" preset "$s" ;;
        gate) stage gate ci/gate.sh ;;
        fuzz) stage fuzz fuzz_smoke ;;
        mutants)
            if [[ "$os" == Linux ]]; then
                stage mutants mutants_stage
            else
                echo "=== stage mutants: the mutation engine reads gcc's gcov and bash's traces, on Linux only (this is $os)"
            fi
            ;;
        bench) stage bench ci/bench.sh --quick ;;
        lint) stage lint ci/lint.sh ;;
        arm64)
            if [[ "$os" == Linux && "$arch" == x86_64 ]]; then
                stage arm64 ci/cross-arm64.sh ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"}
            else
                echo "=== stage arm64: only cross-built from x86-64 Linux (this is $os $arch)"
            fi
            ;;
        macos)
            if [[ "$os" == Linux && "$arch" == x86_64 ]]; then
                stage macos ci/cross-macos.sh ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"}
            else
                echo "=== stage macos: only cross-built from x86-64 Linux (this is $os $arch)"
            fi
            ;;
        macos-sim)
            if [[ "$os" == Linux ]] && getconf GNU_LIBC_VERSION >/dev/null 2>&1; then
                stage macos-sim macos_sim
            else
                echo "=== stage macos-sim: the simulated macOS layer runs on glibc Linux only (this is $os)"
            fi
            ;;
        *) echo "test.sh: unknown stage $s" >&2; exit 2 ;;
    esac
done

if ((failed)); then
    for s in "${failed_names[@]}"; do
        echo "=== why stage $s failed: the last lines of build/stages/$s.log"
        tail -n 25 "$root/build/stages/$s.log"
    done
    echo "failed stages: ${failed_names[*]}"
fi
echo "stage times: ${stage_times:-none} (the whole run $SECONDS s)"
echo "stages: $passed passed, $failed failed"
((failed == 0))
