#!/usr/bin/env bats
# engine.bats -- the mutation engine's own teeth, on its fixture
# (fixture/: a small library whose tests leave, on purpose, a function no
# test calls, a bound no test reaches, a mutant that hangs and one that
# changes nothing, a child process that leaves by _exit, and shell scripts
# and an awk program with bats tests of their own).
#
# Each engine run here is a real one: the fixture is copied into a git
# repository of its own, its coverage pass and its workers build it, and
# its tests judge each mutant.
bats_require_minimum_version 1.8.0

setup_file() {
    ENGINE="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/mutants.sh"
    export ENGINE
    export FX="$BATS_FILE_TMPDIR/fx"
    cp -R "$BATS_TEST_DIRNAME/fixture" "$FX"
    git -C "$FX" init -q
    git -C "$FX" add -A
    git -C "$FX" -c user.email=engine@test -c user.name=engine commit -qm fixture
}

teardown() {
    git -C "$FX" checkout -q -- mutants/equivalent.tsv src/calc.c
}

# sums DIR: a digest of every file of DIR but its build/ and .git/.
sums() {
    (cd "$1" && find . \( -path ./build -o -path ./.git \) -prune -o -type f -print | LC_ALL=C sort |
        xargs sha256sum)
}

# mutant_id OPERATOR TEXT: the id of the fixture's mutant of OPERATOR on
# the line holding TEXT.
mutant_id() {
    "$ENGINE" --root "$FX" --all --list | grep -F "[$1] $2" | cut -d' ' -f1
}

# column_of ID COLUMN: what mutants.tsv says of the mutant ID in COLUMN.
column_of() {
    awk -F'\t' -v id="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $1 == id { print $col[c] }' "$FX/build/mutants/mutants.tsv"
}

verdict_of() {
    column_of "$1" verdict
}

@test "an untested function is named, and the run fails" {
    run "$ENGINE" --root "$FX" --all --jobs 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"uncovered: src/calc.c:31 calc_untested [return]"* ]]
    # The bound no test reaches survives; nothing else does.
    [[ "$output" == *"survived: src/calc.c:16 calc_cap [boundary]"* ]]
    [[ "$output" == *"survived: src/calc.c:23 calc_floor0 [boundary]"* ]]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 26 killed, 2 survived, 0 equivalent, 1 uncovered, of 29" ]
}

@test "an equivalent entry silences exactly its own mutant" {
    local eq="$FX/mutants/equivalent.tsv"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' src/calc.c calc_floor0 boundary "if (x < 0)" "if (x <= 0)" 0 \
        "at 0 both branches return 0" >>"$eq"
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 1
    [ "$status" -eq 1 ]
    [[ "$output" != *"survived: src/calc.c:23 calc_floor0"* ]]
    [[ "$output" == *"survived: src/calc.c:16 calc_cap [boundary]"* ]]
    [ "$(verdict_of "$(mutant_id boundary 'if (x < 0)')")" = equivalent ]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 10 killed, 1 survived, 1 equivalent, 1 uncovered, of 13" ]

    # The same text for the occurrence that does not exist names nothing:
    # it silences nothing and is reported.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' src/calc.c calc_cap boundary "return x > 100 ? 100 : x;" \
        "return x >= 100 ? 100 : x;" 1 "the wrong occurrence" >>"$eq"
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"survived: src/calc.c:16 calc_cap [boundary]"* ]]
    [[ "$output" == *"equivalent.tsv:4 names no mutant of the code as it is"* ]]

    # Every open one argued (the uncovered line too): the run passes.
    git -C "$FX" checkout -q -- mutants/equivalent.tsv
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        src/calc.c calc_floor0 boundary "if (x < 0)" "if (x <= 0)" 0 "at 0 both branches return 0" \
        src/calc.c calc_cap boundary "return x > 100 ? 100 : x;" "return x >= 100 ? 100 : x;" 0 "argued for the test" \
        src/calc.c calc_untested return "return x * 2 + 1;" "return 0;" 0 "argued for the test" >>"$eq"
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 1
    git -C "$FX" checkout -q -- mutants/equivalent.tsv
    [ "$status" -eq 0 ]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 10 killed, 0 survived, 3 equivalent, 0 uncovered, of 13" ]

    # An argument for a mutant a test kills is wrong, and fails the run.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' src/calc.c calc_cap rel "return x > 100 ? 100 : x;" \
        "return x < 100 ? 100 : x;" 0 "wrongly argued" >>"$eq"
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"equivalent.tsv:3 argues a mutant equivalent that calc.cap kills"* ]]
}

@test "a kill of an argued mutant that does not repeat is a flaky test, not a refutation" {
    local eq="$FX/mutants/equivalent.tsv" id
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' src/calc.c calc_floor0 boundary "if (x < 0)" "if (x <= 0)" 0 \
        "at 0 both branches return 0" >>"$eq"
    id="$(mutant_id boundary 'if (x < 0)')"
    [ -n "$id" ]
    # The first test run fails (and leaves the mark); the two runs again pass.
    CALC_FAIL_ONCE="$BATS_TEST_TMPDIR/failed-once" run "$ENGINE" --root "$FX" --files src/calc.c \
        --mutant "$id" --tests '^calc\.' --jobs 1
    [ "$status" -eq 0 ]
    [ -e "$BATS_TEST_TMPDIR/failed-once" ]
    [ "$(verdict_of "$id")" = equivalent ]
    [[ "$output" == *"equivalent.tsv:3 argues a mutant equivalent that calc."*" failed on once, then passed 2 of 2 times again"* ]]
    grep -q "failing once" "$FX/build/mutants/killed-$id.log"
    [[ "$output" != *"argues a mutant equivalent that calc."*" kills"* ]]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 0 killed, 0 survived, 1 equivalent, 0 uncovered, of 1" ]

    # A mutant the tests kill, argued: its first kill is the flaky test's,
    # the runs again kill it for real, and the argument is refuted.
    rm "$BATS_TEST_TMPDIR/failed-once"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' src/calc.c calc_cap rel "return x > 100 ? 100 : x;" \
        "return x < 100 ? 100 : x;" 0 "wrongly argued" >>"$eq"
    id="$(mutant_id rel 'return x > 100 ? 100 : x;')"
    CALC_FAIL_ONCE="$BATS_TEST_TMPDIR/failed-once" run "$ENGINE" --root "$FX" --files src/calc.c \
        --mutant "$id" --tests '^calc\.' --jobs 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"equivalent.tsv:4 argues a mutant equivalent that calc."*" kills"* ]]
}

@test "a hang counts as a timeout, not as a survivor or a failed run" {
    local id
    id="$(mutant_id assign-del 'i += 1;')"
    [ -n "$id" ]
    run "$ENGINE" --root "$FX" --files src/calc.c --mutant "$id" --jobs 1
    [ "$status" -eq 0 ]
    [ "$(verdict_of "$id")" = timeout ]
    [[ "$output" == *"1 of the killed were caught by a test's time guard (a hang)"* ]]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 1 killed, 0 survived, 0 equivalent, 0 uncovered, of 1" ]
}

@test "the shell's mutants run the shell's bats tests" {
    run "$ENGINE" --root "$FX" --files tools/grade.sh --jobs 1
    [ "$status" -eq 0 ]
    # Each killed by the one test that can tell it from the script.
    local boundary cond line
    # shellcheck disable=SC2016 # the script's own $1, as its line reads
    line='if (($1 >= 50)); then'
    boundary="$(mutant_id boundary "$line")"
    cond="$(mutant_id cond-del "$line")"
    [ "$(verdict_of "$boundary")" = killed ]
    [ "$(column_of "$boundary" test)" = "tests/grade.bats:fifty passes" ]
    [ "$(column_of "$cond" test)" = "tests/grade.bats:ten fails" ]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 3 killed, 0 survived, 0 equivalent, 0 uncovered, of 3" ]
}

@test "a child's lines before its _exit, and a process substitution in a function, count as run" {
    # gcov writes no counts at _exit, and bash traces the commands of a
    # process substitution in a function with the function's first line:
    # without the coverage pass's help both lines would be uncovered.
    run "$ENGINE" --root "$FX" --files src/child.c tools/words.sh --jobs 1
    echo "$output"
    [ "$status" -eq 0 ]
    local exit_del anchor
    exit_del="$(mutant_id call-del '_exit(x * x);')"
    # shellcheck disable=SC2016 # the script's own $1, as its line reads
    anchor="$(mutant_id anchor 'done < <(awk '"'"'!/^#/'"'"' "$1")')"
    [ -n "$exit_del" ] && [ -n "$anchor" ]
    [ "$(verdict_of "$exit_del")" = killed ]
    [ "$(column_of "$exit_del" test)" = calc.square_in_child ]
    [ "$(verdict_of "$anchor")" = killed ]
    [ "$(column_of "$anchor" test)" = "tests/words.bats:a line with a # inside is counted, a comment is not" ]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 9 killed, 0 survived, 0 equivalent, 0 uncovered, of 9" ]
}

@test "an awk program run by its path from a test counts as run by that test" {
    # No script in scope runs tools/above.awk; tests/above.bats does.
    run "$ENGINE" --root "$FX" --files tools/above.awk --jobs 1
    echo "$output"
    [ "$status" -eq 0 ]
    # shellcheck disable=SC2016 # the program's own $1, as its line reads
    [ "$(column_of "$(mutant_id boundary '$1 > 2 { n++ }')" test)" = "tests/above.bats:two of 1 2 3 4 are above 2" ]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 4 killed, 0 survived, 0 equivalent, 0 uncovered, of 4" ]
}

@test "--since takes only the lines changed since the revision" {
    sed -i 's/return x > 100 ? 100 : x;/return x > 99 ? 99 : x;/' "$FX/src/calc.c"
    run "$ENGINE" --root "$FX" --since HEAD --list
    [ "$status" -eq 0 ]
    [ "${lines[${#lines[@]} - 1]}" = "mutants: 3 in 1 files" ]
    [[ "$output" == *"calc_cap [boundary] return x > 99 ? 99 : x;"* ]]
}

@test "--tests judges by the tests named, without a coverage pass, and --argue writes the row" {
    local id
    id="$(mutant_id boundary 'return x > 100 ? 100 : x;')"
    run "$ENGINE" --root "$FX" --files src/calc.c --mutant "$id" --tests '^calc\.cap$' --jobs 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"judged by the 1 tests whose names match ^calc\.cap$, without a coverage pass"* ]]
    [[ "$output" != *"coverage: "* ]]
    [ "$(verdict_of "$id")" = survived ]
    run "$ENGINE" --root "$FX" --argue "$id" "no test asks at 100"
    [ "$status" -eq 0 ]
    [ "$(tail -n 1 "$FX/mutants/equivalent.tsv")" = "$(printf 'src/calc.c\tcalc_cap\tboundary\treturn x > 100 ? 100 : x;\treturn x >= 100 ? 100 : x;\t0\tno test asks at 100')" ]
    run "$ENGINE" --root "$FX" --files src/calc.c --mutant "$id" --tests '^calc\.cap$' --jobs 1
    [ "$status" -eq 0 ]
    [ "$(verdict_of "$id")" = equivalent ]
    # A killed mutant is not argued.
    id="$(mutant_id rel 'return x > 100 ? 100 : x;')"
    run "$ENGINE" --root "$FX" --files src/calc.c --mutant "$id" --tests '^calc\.cap$' --jobs 1
    [ "$(verdict_of "$id")" = killed ]
    run "$ENGINE" --root "$FX" --argue "$id" "wrong"
    [ "$status" -ne 0 ]
    [[ "$output" == *"the last run says killed"* ]]
}

@test "--resume carries over the kills of a run and tries only the rest" {
    local table="$BATS_TEST_TMPDIR/before.tsv"
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 2
    [ "$status" -eq 1 ]
    local last="${lines[${#lines[@]} - 1]}"
    cp "$FX/build/mutants/mutants.tsv" "$table"
    local killed
    killed="$(awk -F'\t' '$9 == "killed" || $9 == "timeout"' "$table" | wc -l)"
    ((killed > 0))
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 2 --resume "$table"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"mutants: $killed verdicts carried over from $table"* ]]
    # The same verdicts, the survivors tried again, and only they.
    [ "${lines[${#lines[@]} - 1]}" = "$last" ]
    local tried
    tried="$(awk -F'\t' 'NR > 1 && $9 != "killed" && $9 != "timeout" && $9 != "uncovered"' "$table" | wc -l)"
    [[ "$output" == *"mutants: $tried tried in "* ]]
    local id
    id="$(mutant_id rel 'return x > 100 ? 100 : x;')"
    [ "$(verdict_of "$id")" = killed ]
    [[ "$(column_of "$id" test)" == *"(carried over)" ]]
    # A table of something else is refused, by name.
    printf 'not\ta table\n' >"$BATS_TEST_TMPDIR/bad.tsv"
    run "$ENGINE" --root "$FX" --files src/calc.c --resume "$BATS_TEST_TMPDIR/bad.tsv"
    [ "$status" -ne 0 ]
    [[ "$output" == *"--resume $BATS_TEST_TMPDIR/bad.tsv: not a mutants.tsv of this engine"* ]]
}

@test "the tree is left unchanged, and after an interrupt too" {
    local before copy="$FX/build/mutants/w0/src/src/calc.c"
    before="$(sums "$FX")"
    run "$ENGINE" --root "$FX" --files src/calc.c --jobs 1
    [ "$(sums "$FX")" = "$before" ]
    [ -z "$(git -C "$FX" status --porcelain)" ]
    # The worker's copy is put back after each mutant.
    cmp "$copy" "$FX/src/calc.c"

    # Interrupted while a mutant is in the worker's copy: the project's
    # file is as committed at that moment, the engine ends with 130, the
    # copy is put back, and the project was never written.
    "$ENGINE" --root "$FX" --files src/calc.c --mutant "$(mutant_id assign-del 'i += 1;')" --jobs 1 \
        >"$BATS_TEST_TMPDIR/out" 2>&1 &
    local pid=$! waited=0
    until [[ -f "$copy" ]] && ! cmp -s "$copy" "$FX/src/calc.c"; do
        sleep 0.1
        waited=$((waited + 1))
        if ((waited > 600)); then
            kill "$pid"
            echo "the mutant never appeared in the worker's copy $copy" >&2
            false
        fi
    done
    [ -z "$(git -C "$FX" status --porcelain)" ]
    kill -INT "$pid"
    local rc=0
    wait "$pid" || rc=$?
    cat "$BATS_TEST_TMPDIR/out"
    [ "$rc" -eq 130 ]
    grep -q "interrupted" "$BATS_TEST_TMPDIR/out"
    # What was tried is reported: the mutant in flight was not judged.
    grep -q "what was tried is reported" "$BATS_TEST_TMPDIR/out"
    grep -q "1 were not tried before the interrupt" "$BATS_TEST_TMPDIR/out"
    [ "$(verdict_of "$(mutant_id assign-del 'i += 1;')")" = not-run ]
    [ "$(column_of "$(mutant_id assign-del 'i += 1;')" test)" = "the run was interrupted first" ]
    cmp "$copy" "$FX/src/calc.c"
    [ "$(sums "$FX")" = "$before" ]
    [ -z "$(git -C "$FX" status --porcelain)" ]
}
