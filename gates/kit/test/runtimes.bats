#!/usr/bin/env bats
# runtimes.bats -- the runner of the language-runtime matrices
# (../runtimes/run.sh) must never let a runtime it did not judge read as a
# pass: one not installed, or whose gate does not run on this machine, is
# n/a and says why; a matrix with a wrong cell, or a program that does not
# build, fails the run. The matrices themselves run in make gate
# (ci/gate.sh); here the runtimes are stand-ins, so these tests take
# seconds. Run by hand: bats gates/kit/test/runtimes.bats.
# shellcheck disable=SC2030,SC2031
bats_require_minimum_version 1.8.0

setup() {
    TEST_DIR="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    RUN="$(dirname "${TEST_DIR}")/runtimes/run.sh"
    OUT="${BATS_TEST_TMPDIR}/out"
    FAKE="${BATS_TEST_TMPDIR}/fake"
    mkdir -p "$FAKE"
}

@test "a runtime that is not installed is n/a with its reason, not run and not a pass" {
    NODE=no-such-node run "$RUN" --out "$OUT" node
    [ "$status" -eq 0 ]
    [[ "$output" == *"node: n/a here: no no-such-node on PATH"* ]]
    [[ "$output" == *"n/a here, not run and not passed: node"* ]]
    grep -q '^n/a: no no-such-node on PATH (ci/install-deps.sh runtimes installs it). Not run, and not counted as a pass.$' "$OUT/summary.md"
    [ ! -e "$OUT/node/matrix.md" ]
    # No matrix in the summary: no row of one, no count of cells passed.
    [ "$(grep -c -e '^| ' -e 'passed' "$OUT/summary.md")" -eq 0 ]
}

@test "a runtime whose gate does not run on this machine is n/a, every one of them" {
    GBGATE_PLATFORMS="all macos" run "$RUN" --out "$OUT"
    [ "$status" -eq 0 ]
    [[ "$output" == *"n/a here, not run and not passed: go python node lua jvm php perl tcl"* ]]
    [ "$(grep -c '^n/a: the gate runs on .* only; this machine is all macos. Not run, and not counted as a pass.$' "$OUT/summary.md")" -eq 8 ]
}

@test "a matrix with a wrong cell fails the run and its summary says so" {
    # A stand-in python whose every build gives everything back: the
    # poison's cell survives (and the failsafe is not red), so the matrix
    # is wrong and run.sh must fail.
    cat >"$FAKE/python" <<'PY'
#!/usr/bin/env bash
if [[ "$1" == -c ]]; then echo "stand-in python"; exit 0; fi
for r in round1 round2 round3; do gbgate checkpoint "$r" held_kib=1 || exit 1; done
PY
    chmod +x "$FAKE/python"
    PYTHON="$FAKE/python" run "$RUN" --out "$OUT" python
    [ "$status" -eq 1 ]
    [[ "$output" == *"run.sh: FAILED"* ]]
    grep -q '^## python: FAILED$' "$OUT/summary.md"
}

@test "a Go program that does not build fails the run" {
    cat >"$FAKE/go" <<'GO'
#!/bin/sh
if [ "$1" = version ]; then echo "go version stand-in"; exit 0; fi
echo "stand-in: cannot build" >&2
exit 1
GO
    chmod +x "$FAKE/go"
    GO="$FAKE/go" run "$RUN" --out "$OUT" go
    [ "$status" -eq 1 ]
    [[ "$output" == *"rounds.go does not build"* ]]
    grep -q '^## go: FAILED$' "$OUT/summary.md"
}

@test "an unknown runtime is a usage error" {
    run "$RUN" --out "$OUT" ruby
    [ "$status" -eq 2 ]
    [[ "$output" == *'unknown argument "ruby"'* ]]
}
