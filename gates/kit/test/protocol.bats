#!/usr/bin/env bats
# protocol.bats -- the checkpoint protocol from languages other than C: the
# helper (gbgate checkpoint) and the snippets in ../snippets/, each run
# under gbgate run with a cap, green, and each with one mistake a program
# in that language is likely to make, red for protocol. A runtime that is
# not installed skips its tests, saying which (ci/install-deps.sh installs
# them). Run by hand: bats gates/kit/test/protocol.bats.
# The helpers below read the status and output that bats' run sets for
# the test that calls them.
# shellcheck disable=SC2030,SC2031
bats_require_minimum_version 1.8.0

load helpers

setup() {
    kit_paths
    SNIPPETS="${KIT}/snippets"
}

# within SECONDS COMMAND...: runs COMMAND and returns its status; kills it
# after SECONDS, a guard (macOS has no timeout(1)): a hang fails the test
# rather than hanging it.
within() {
    local limit=$(($1 * 20)) pid i=0 rc=0
    shift
    "$@" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && ((i < limit)); do
        sleep 0.05
        i=$((i + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" || rc=$?
    return "$rc"
}

need() {
    command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed (ci/install-deps.sh installs it)"
}

@test "the helper does nothing outside the kit, prints under GBGATE=print" {
    run env -u GBGATE "${KIT_GBGATE}" checkpoint left objects=3
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    GBGATE=print run "${KIT_GBGATE}" checkpoint left objects=3 note=a-b.c
    [ "$status" -eq 0 ]
    [ "$output" = "checkpoint left objects=3 note=a-b.c" ]
}

@test "the helper refuses a line the runners could not read, and a stop with nothing to stop" {
    GBGATE=print run "${KIT_GBGATE}" checkpoint "two words"
    [ "$status" -eq 2 ]
    [[ "$output" == *'the checkpoint'"'"'s name "two words" is not a word'* ]] || false
    GBGATE=print run "${KIT_GBGATE}" checkpoint left objects
    [ "$status" -eq 2 ]
    [[ "$output" == *'"objects" (checkpoint left) is not KEY=VALUE'* ]] || false
    GBGATE=print run "${KIT_GBGATE}" checkpoint left "note=a b"
    [ "$status" -eq 2 ]
    GBGATE=print run "${KIT_GBGATE}" checkpoint
    [ "$status" -eq 2 ]
    GBGATE=stop run env -u GBGATE_PID "${KIT_GBGATE}" checkpoint left
    [ "$status" -eq 2 ]
    [[ "$output" == *"GBGATE=stop, but GBGATE_PID is not set"* ]] || false
    [[ "$output" != *"checkpoint left"$'\n'* ]] || false
    # A pid is digits alone, the first not 0.
    GBGATE=stop GBGATE_PID=1x run "${KIT_GBGATE}" checkpoint left
    [ "$status" -eq 2 ]
    [ "$output" = 'gbgate checkpoint: error: GBGATE_PID is "1x", not a process id' ]
}

@test "the helper refuses what the runners' grammar refuses: a key not a word, a value not printable, too long" {
    local bad
    for bad in "a.b=1" "-k=1" "k=$(printf 'caf\303\251')" "k=$(printf 'a\tb')" "k=$(printf '%0257d' 0)" \
        "$(printf 'k%064d' 0)=1"; do
        GBGATE=print run "${KIT_GBGATE}" checkpoint left "$bad"
        echo "$bad: $output"
        [ "$status" -eq 2 ]
        [[ "$output" == *"is not KEY=VALUE"* ]] || false
    done
    GBGATE=print run "${KIT_GBGATE}" checkpoint "$(printf 'n%064d' 0)"
    [ "$status" -eq 2 ]
    GBGATE=print run "${KIT_GBGATE}" checkpoint left "k_2=$(printf '%0256d' 0)"
    [ "$status" -eq 0 ]
    # The bounds themselves are kept: a key of 64, a name of 64.
    GBGATE=print run "${KIT_GBGATE}" checkpoint "$(printf 'n%063d' 0)" "$(printf 'k%063d' 0)=1"
    [ "$status" -eq 0 ]
}

@test "the helper's line reaches the runner through a pipe: system(), popen() and a command substitution" {
    # The program reads the helper's stdout (as PHP's system() and a
    # popen() do): the helper writes its line to the capture file
    # (GBGATE_OUT), where the runner reads it while the program is stopped.
    cat >"${BATS_TEST_TMPDIR}/piped.sh" <<EOF
#!/usr/bin/env bash
x="\$(head -c 40000000 /dev/zero | tr '\\0' a)"
got="\$(sh -c '"${KIT_GBGATE}" checkpoint held')"
printf '%s' "\$got"
x=""
sh -c '"${KIT_GBGATE}" checkpoint freed' | cat
EOF
    run "${KIT_GBGATE}" run --cap 16MiB --at freed -- bash "${BATS_TEST_TMPDIR}/piped.sh"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"checkpoint held rss_kib="* ]] || false
    [ "$(verdict)" = "gate: pass" ]
    # Without GBGATE_OUT (a helper older than the runner, say) the line
    # goes into the pipe, read by the program after the stop: red for
    # protocol, never a pass.
    cat >"${BATS_TEST_TMPDIR}/unset.sh" <<EOF
#!/usr/bin/env bash
got="\$(env -u GBGATE_OUT "${KIT_GBGATE}" checkpoint held)"
printf '%s\n' "\$got"
EOF
    run "${KIT_GBGATE}" run --cap 16MiB -- bash "${BATS_TEST_TMPDIR}/unset.sh"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): "*"or the line went into a pipe that the program reads, as system() and popen() do"* ]] || false
}

@test "the helper stops the program the runner started, and the runner reads it there" {
    run "${KIT_GBGATE}" run --cap 8MiB --at freed -- bash "${SNIPPETS}/checkpoint.sh"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    # The reading is the shell's: 16 MiB held at held, given back at freed.
    (($(field held rss_kib) > 16 * 1024))
    (($(field freed rss_kib) < 8 * 1024))
    [ "$(field held bytes)" = 16777216 ]
}

@test "the helper through an intermediate sh -c (Lua's os.execute, system()) stops the program" {
    # bash, the program, runs sh -c, which runs the helper: the helper's
    # parent is a shell the program started for it.
    run "${KIT_GBGATE}" run --at a,b -- bash -c 'sh -c "gbgate checkpoint a n=1"; sh -c "gbgate checkpoint b n=2"; true'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(field b n)" = 2 ]
}

@test "the helper in a program behind a wrapper that does not exec is red for protocol, saying why" {
    run "${KIT_GBGATE}" run --cap 8MiB -- sh -c "bash \"${SNIPPETS}/checkpoint.sh\"; true"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): "*"the helper said: the helper was run by pid "*" (bash), not by the process the runner started, GBGATE_PID "*" (sh), nor by a shell that process started: a wrapper started the program without exec"* ]] || false
    run "${KIT_GBGATE}" run --cap 8MiB --at freed -- sh -c "exec bash \"${SNIPPETS}/checkpoint.sh\""
    [ "$status" -eq 0 ]
    # The program runs the helper through sh -c, as a system() does: a
    # shell, but one the program started, not the process the runner
    # started (each command list ends with "; true", so no shell execs
    # its last command).
    run "${KIT_GBGATE}" run -- sh -c "bash -c 'sh -c \"gbgate checkpoint left; true\"; true'; true"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): "*"the helper said: the helper was run by pid "*" (sh), not by the process the runner started, GBGATE_PID "*" (sh), nor by a shell that process started: a wrapper started the program without exec"* ]] || false
}

@test "the helper returns when the runner read and continued the stop before it looked" {
    # A runner that reads the stop and continues the program between two
    # of the helper's polls: the helper never sees it stopped and must take
    # the runner's count of stops read as the proof. Here the program (a
    # bash that runs the helper) is continued again and again, by two
    # loops, so that the helper almost never finds it stopped, and the
    # count is written once its line is out.
    local out="${BATS_TEST_TMPDIR}/out" stops="${BATS_TEST_TMPDIR}/stops" pidf="${BATS_TEST_TMPDIR}/pid" cont cont2 rc=0
    echo 0 >"${stops}"
    (
        until [[ -s "${pidf}" ]]; do sleep 0.01; done
        read -r p <"${pidf}"
        l="" written=0
        while kill -CONT "${p}" 2>/dev/null; do
            if ((!written)); then
                read -r l <"${out}" || true
                [[ "$l" != "checkpoint left" ]] || { echo 1 >"${stops}"; written=1; }
            fi
        done
    ) 3>&- &
    cont=$!
    (
        until [[ -s "${pidf}" ]]; do sleep 0.01; done
        read -r p <"${pidf}"
        while kill -CONT "${p}" 2>/dev/null; do :; done
    ) 3>&- &
    cont2=$!
    # shellcheck disable=SC2016  # $$ is the inner bash's
    GBGATE=stop GBGATE_STOPS_FILE="${stops}" within 20 \
        bash -c 'echo $$ >"$1"; GBGATE_PID=$$ gbgate checkpoint left; true' _ "${pidf}" >"${out}" 2>&1 || rc=$?
    kill "${cont}" "${cont2}" 2>/dev/null || true
    wait "${cont}" "${cont2}" 2>/dev/null || true
    cat "${out}"
    [ "${rc}" -eq 0 ]
    [ "$(cat "${out}")" = "checkpoint left" ]
}

# preloaded: the helper with continued.c preloaded (Linux), built into
# CONTINUED_SO; skips elsewhere.
preloaded() {
    [[ "$(uname -s)" == Linux ]] || skip "the preloaded kill() is Linux's (LD_PRELOAD, /proc)"
    CONTINUED_SO="${BATS_TEST_TMPDIR}/continued.so"
    "${CC:-cc}" -std=c99 -O1 -Wall -Wextra -Werror -shared -fPIC -o "${CONTINUED_SO}" "${TEST_DIR}/continued.c" -ldl
}

@test "the helper takes the runner's count of stops read as the proof of a stop it never saw (Linux)" {
    preloaded
    # The runner read the stop and continued the program before the
    # helper's first look (continued.c, CONTINUED=read): only the count,
    # 1, past the one before the line says the stop happened. That one
    # was not a number, which counts as no stop read.
    local out="${BATS_TEST_TMPDIR}/out" stops="${BATS_TEST_TMPDIR}/stops" rc=0
    echo none >"${stops}"
    # shellcheck disable=SC2016  # $$ and $1 are the inner bash's
    GBGATE=stop GBGATE_STOPS_FILE="${stops}" CONTINUED=read within 20 \
        bash -c 'GBGATE_PID=$$ LD_PRELOAD="$1" gbgate checkpoint left; echo "returned $?"' _ "${CONTINUED_SO}" \
        >"${out}" 2>&1 || rc=$?
    cat "${out}"
    [ "${rc}" -eq 0 ]
    [ "$(cat "${out}")" = "$(printf 'checkpoint left\nreturned 0')" ]
}

@test "the helper polls without starting a process at each poll (Linux, bash 4 and later)" {
    preloaded
    bash -c '((BASH_VERSINFO[0] >= 4))' || skip "bash before 4 has no read with a fraction of a second to wait"
    # The count of stops read comes 200 ms after the runner continued the
    # program (continued.c, CONTINUED=late): the helper polls for it all
    # that while, each wait between two polls bash's own, not a process
    # started for it. One process in all, the pipe it waits on, at most;
    # and it returns once the count says the stop was read, not before.
    local out="${BATS_TEST_TMPDIR}/out" stops="${BATS_TEST_TMPDIR}/stops" forks="${BATS_TEST_TMPDIR}/forks" rc=0
    echo 0 >"${stops}"
    # shellcheck disable=SC2016  # $$ and $1 are the inner bash's
    GBGATE=stop GBGATE_STOPS_FILE="${stops}" CONTINUED=late CONTINUED_FORKS="${forks}" within 20 \
        bash -c 'GBGATE_PID=$$ LD_PRELOAD="$1" gbgate checkpoint left; echo "returned $? after $(cat "$2") stop read"' \
        _ "${CONTINUED_SO}" "${stops}" \
        >"${out}" 2>&1 || rc=$?
    cat "${out}" "${forks}"
    [ "${rc}" -eq 0 ]
    [ "$(cat "${out}")" = "$(printf 'checkpoint left\nreturned 0 after 1 stop read')" ]
    (($(cat "${forks}") <= 1))
}

@test "where bash has no timed read, the helper polls with sleep, and quietly (Linux)" {
    preloaded
    # GK_HELPER_FD=none: the helper's way without a pipe to wait on (bash
    # 3.2, or no /proc/self/fd), on this machine; fd 9 is not open in it.
    # It polls for the count (CONTINUED=late) and says nothing but its line.
    local out="${BATS_TEST_TMPDIR}/out" stops="${BATS_TEST_TMPDIR}/stops" rc=0
    echo 0 >"${stops}"
    # shellcheck disable=SC2016  # $$ and $1 are the inner bash's
    GBGATE=stop GBGATE_STOPS_FILE="${stops}" CONTINUED=late GK_HELPER_FD=none within 20 \
        bash -c 'GBGATE_PID=$$ LD_PRELOAD="$1" gbgate checkpoint left 9>&-; echo "returned $? after $(cat "$2") stop read"' \
        _ "${CONTINUED_SO}" "${stops}" \
        >"${out}" 2>&1 || rc=$?
    cat "${out}"
    [ "${rc}" -eq 0 ]
    [ "$(cat "${out}")" = "$(printf 'checkpoint left\nreturned 0 after 1 stop read')" ]
}

@test "the helper without the runner's stops file stops its caller all the same, and says nothing of the file (Linux)" {
    preloaded
    # A helper run by hand, or under a runner older than the file: it
    # sees the stop itself (continued.c, CONTINUED=exit, continues the
    # caller once the helper has returned). No file named, or one that is
    # not there: no count, and no complaint.
    local out="${BATS_TEST_TMPDIR}/out" rc=0
    # shellcheck disable=SC2016  # $$ and $1 are the inner bash's
    GBGATE=stop CONTINUED=exit within 20 env -u GBGATE_STOPS_FILE \
        bash -c 'GBGATE_PID=$$ LD_PRELOAD="$1" gbgate checkpoint left; echo "returned $?"' _ "${CONTINUED_SO}" \
        >"${out}" 2>&1 || rc=$?
    cat "${out}"
    [ "${rc}" -eq 0 ]
    [ "$(cat "${out}")" = "$(printf 'checkpoint left\nreturned 0')" ]
    # shellcheck disable=SC2016  # $$ and $1 are the inner bash's
    GBGATE=stop GBGATE_STOPS_FILE="${BATS_TEST_TMPDIR}/gone" CONTINUED=exit within 20 \
        bash -c 'GBGATE_PID=$$ LD_PRELOAD="$1" gbgate checkpoint left; echo "returned $?"' _ "${CONTINUED_SO}" \
        >"${out}" 2>&1 || rc=$?
    cat "${out}"
    [ "${rc}" -eq 0 ]
    [ "$(cat "${out}")" = "$(printf 'checkpoint left\nreturned 0')" ]
}

@test "a program that never stops is told of the protocol, in any language" {
    run "${KIT_GBGATE}" run -- python3 -c 'print("checkpoint-less")'
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (crash): it exited without reaching a checkpoint: it never printed \"checkpoint <name>\" and stopped (the protocol: gbgate_checkpoint of gbgate.h in C, gbgate checkpoint NAME from any language; the kit's README.md, \"The protocol\")" ]
}

# snippet_gate CAP CHECKPOINT_CAP COMMAND...: runs a snippet under the
# runner with a cap at freed; it must pass, over the cap at held (the
# reading is the program's, and the cap has teeth) and under it at freed.
snippet_gate() {
    local cap="$1" kib="$2"
    shift 2
    run "${KIT_GBGATE}" run --cap "${cap}" --at freed -- "$@"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    (($(field held rss_kib) > kib))
    (($(field freed rss_kib) <= kib))
    [ "$(field held bytes)" -gt 0 ]
}

# stop_without_line: the verdict of a stop that came with no line.
stop_without_line() {
    [ "$status" -eq 1 ]
    [ "$(verdict)" = "gate: fail (protocol): stop 1 came with no new checkpoint line (it stopped without printing one, its stdout was not flushed, or the line went into a pipe that the program reads, as system() and popen() do: the helper, gbgate checkpoint, writes to GBGATE_OUT then)" ]
}

@test "Python: the snippet passes; a line not flushed before its own stop is red for protocol" {
    need python3
    snippet_gate 24MiB $((24 * 1024)) python3 "${SNIPPETS}/checkpoint.py"
    # Its own stop is exact in Python (the thread that prints is the one
    # the signal stops), but print() to a file is buffered, unless
    # PYTHONUNBUFFERED is set, as it may be where the tests run.
    cat >"${BATS_TEST_TMPDIR}/mistake.py" <<'PY'
import os, signal
print("checkpoint held")
os.kill(os.getpid(), signal.SIGSTOP)
print("checkpoint freed", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
PY
    run "${KIT_GBGATE}" run -- env -u PYTHONUNBUFFERED python3 "${BATS_TEST_TMPDIR}/mistake.py"
    echo "$output"
    stop_without_line
}

@test "Node: the snippet passes; the helper's stdout left to a pipe is red for protocol" {
    need node
    snippet_gate 64MiB $((64 * 1024)) node --expose-gc "${SNIPPETS}/checkpoint.js"
    # execFileSync's default stdio pipes the helper's stdout back to Node:
    # the line never reaches the runner, the stop does.
    sed 's/, { stdio: "inherit" })/)/' "${SNIPPETS}/checkpoint.js" >"${BATS_TEST_TMPDIR}/mistake.js"
    run ! grep -q 'stdio: "inherit"' "${BATS_TEST_TMPDIR}/mistake.js"
    run "${KIT_GBGATE}" run -- node --expose-gc "${BATS_TEST_TMPDIR}/mistake.js"
    echo "$output"
    stop_without_line
}

@test "Go: the snippet passes; the helper's stdout left unset is red for protocol" {
    need go
    local bin="${BATS_TEST_TMPDIR}/checkpoint"
    # Built, not go run: go run is a wrapper that does not exec.
    (cd "${BATS_TEST_TMPDIR}" && go build -o "${bin}" "${SNIPPETS}/checkpoint.go")
    snippet_gate 24MiB $((24 * 1024)) "${bin}"
    # exec.Command's Stdout left nil is /dev/null: the line is lost.
    mkdir -p "${BATS_TEST_TMPDIR}/mistake"
    grep -v 'cmd.Stdout, cmd.Stderr = ' "${SNIPPETS}/checkpoint.go" >"${BATS_TEST_TMPDIR}/mistake/main.go"
    (cd "${BATS_TEST_TMPDIR}/mistake" && go build -o "${bin}-mistake" main.go)
    run "${KIT_GBGATE}" run -- "${bin}-mistake"
    echo "$output"
    stop_without_line
}

@test "Ruby: the snippet passes; a line not flushed before its own stop is red for protocol" {
    need ruby
    snippet_gate 24MiB $((24 * 1024)) ruby "${SNIPPETS}/checkpoint.rb"
    cat >"${BATS_TEST_TMPDIR}/mistake.rb" <<'RB'
puts "checkpoint held"
Process.kill(:STOP, Process.pid)
RB
    run "${KIT_GBGATE}" run -- ruby "${BATS_TEST_TMPDIR}/mistake.rb"
    echo "$output"
    stop_without_line
}

@test "Lua: the snippet passes; a line not flushed before a stop by kill is red for protocol" {
    need lua5.4
    snippet_gate 24MiB $((24 * 1024)) lua5.4 "${SNIPPETS}/checkpoint.lua"
    # Lua has no kill of its own: a shell sends it ($PPID is Lua), after a
    # line left in stdio's buffer.
    cat >"${BATS_TEST_TMPDIR}/mistake.lua" <<'LUA'
io.write("checkpoint held\n")
os.execute("kill -STOP $PPID")
LUA
    run "${KIT_GBGATE}" run -- lua5.4 "${BATS_TEST_TMPDIR}/mistake.lua"
    echo "$output"
    stop_without_line
}

@test "Java: the snippet passes once settled; the JVM started by a launcher that does not exec is red for protocol" {
    need java
    # java runs the snippet from its source: a JDK's compiler, not a JRE.
    java --list-modules 2>/dev/null | grep -q '^jdk.compiler@' || skip "java has no compiler (a JRE, not a JDK: ci/install-deps.sh installs default-jdk-headless)"
    # G1 uncommits the freed heap on a background thread after System.gc()
    # returns: the gate judges the reading once settled, as snippet_gate
    # (which does not settle) cannot.
    run "${KIT_GBGATE}" run --cap 160MiB --settle 2 --at freed -- java "${SNIPPETS}/checkpoint.java"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(verdict)" = "gate: pass" ]
    (($(field held rss_kib) > 160 * 1024))
    (($(field freed rss_kib) <= 160 * 1024))
    [ "$(field held bytes)" -gt 0 ]
    # ProcessBuilder's default stdout is a pipe (not Node's socket): the
    # helper writes its line to GBGATE_OUT and the run passes, so that is
    # not the mistake shown. Java cannot stop itself (sun.misc.Signal
    # refuses STOP), so its likely mistake is the start script: one that
    # runs java and then reports its status cannot exec it, and the helper
    # refuses to stop the script in the JVM's place.
    cp "${SNIPPETS}/checkpoint.java" "${BATS_TEST_TMPDIR}/checkpoint.java"
    cat >"${BATS_TEST_TMPDIR}/launch.sh" <<'SH'
#!/bin/sh
java "$(dirname "$0")/checkpoint.java" "$@"
echo "checkpoint.java exited $?" >&2
SH
    run "${KIT_GBGATE}" run --cap 160MiB -- sh "${BATS_TEST_TMPDIR}/launch.sh"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (protocol): "*"the helper said: the helper was run by pid "*" (java), not by the process the runner started, GBGATE_PID "*" (sh)"*"a wrapper started the program without exec"* ]] || false
}

@test "PHP: the snippet passes through system(); a line left in PHP's output buffer before its own stop is red for protocol" {
    need php
    snippet_gate 32MiB $((32 * 1024)) php "${SNIPPETS}/checkpoint.php"
    # echo in the CLI writes at once, so echo and posix_kill alone keep to
    # the protocol; with output buffering on (ob_start(), as templates and
    # frameworks turn it on; output_buffering in a php.ini that a SAPI
    # other than the CLI reads) the line waits in PHP's buffer past the
    # stop.
    php -r 'exit(function_exists("posix_kill") ? 0 : 1);' || skip "php has no posix extension (posix_kill)"
    cat >"${BATS_TEST_TMPDIR}/mistake.php" <<'PHP'
<?php
ob_start();
echo "checkpoint held\n";
posix_kill(getmypid(), SIGSTOP);
PHP
    run "${KIT_GBGATE}" run -- php "${BATS_TEST_TMPDIR}/mistake.php"
    echo "$output"
    stop_without_line
}

@test "Perl: the snippet passes; a line not flushed before its own stop is red for protocol" {
    need perl
    snippet_gate 24MiB $((24 * 1024)) perl "${SNIPPETS}/checkpoint.pl"
    # kill 'STOP', $$ is exact in Perl (perl starts no threads of its own), but
    # print to a file is buffered unless $| is set: the line is still in
    # the buffer at the stop.
    cat >"${BATS_TEST_TMPDIR}/mistake.pl" <<'PL'
print "checkpoint held\n";
kill 'STOP', $$;
PL
    run "${KIT_GBGATE}" run -- perl "${BATS_TEST_TMPDIR}/mistake.pl"
    echo "$output"
    stop_without_line
}

@test "Tcl: the snippet passes; a line left in a fully buffered stdout at a stop by kill is red for protocol" {
    need tclsh
    snippet_gate 24MiB $((24 * 1024)) tclsh "${SNIPPETS}/checkpoint.tcl"
    # Tcl's stdout is line-buffered even into a file, so a puts is out at
    # its newline; a program that sets it to full buffering, as one that
    # prints much does for speed, leaves the line in the buffer at a stop
    # of its own (Tcl has no kill: it execs one, [pid] being tclsh).
    cat >"${BATS_TEST_TMPDIR}/mistake.tcl" <<'TCL'
fconfigure stdout -buffering full
puts "checkpoint held"
exec kill -STOP [pid]
TCL
    run "${KIT_GBGATE}" run -- tclsh "${BATS_TEST_TMPDIR}/mistake.tcl"
    echo "$output"
    stop_without_line
    # exec without >@stdout reads the helper's stdout through a pipe, and
    # would take the line as its result; the helper writes it to the
    # capture file instead (GBGATE_OUT), so that snippet passes too.
    sed 's/ >@stdout 2>@stderr$//' "${SNIPPETS}/checkpoint.tcl" >"${BATS_TEST_TMPDIR}/piped.tcl"
    # shellcheck disable=SC2016 # Tcl's $name and $args, matched as text
    grep -qx ' *exec gbgate checkpoint $name {\*}$args' "${BATS_TEST_TMPDIR}/piped.tcl"
    snippet_gate 24MiB $((24 * 1024)) tclsh "${BATS_TEST_TMPDIR}/piped.tcl"
}
