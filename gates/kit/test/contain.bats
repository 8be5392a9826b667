#!/usr/bin/env bats
# contain.bats -- nothing a run starts outlives it: a program that leaves
# a daemon behind (setsid, then a double fork, so that it is in no process
# group of the run's and its parent is gone) has the daemon ended with the
# run, by the run's cgroup where one can be made, and by the sweep of the
# processes marked with the run's id everywhere; the run says which is in
# force. Run by ci/gate.sh with the kit's other tests; by hand: bats
# gates/kit/test/contain.bats.
bats_require_minimum_version 1.8.0

load helpers

setup() {
    kit_paths
    SUBJECT="${BATS_TEST_TMPDIR}/daemon"
    PIDS="${BATS_TEST_TMPDIR}/pids"
    # The subject: starts a daemon (with its environment as it is, or
    # emptied), checkpoints, and exits.
    cat >"${SUBJECT}" <<'SUBJECT'
#!/usr/bin/env bash
if [[ "$2" == clean ]]; then
    setsid env -i /bin/sh -c '( sleep 300 & echo $! >"$1" ) &' sh "$1" </dev/null >/dev/null 2>&1
else
    setsid /bin/sh -c '( sleep 300 & echo $! >"$1" ) &' sh "$1" </dev/null >/dev/null 2>&1
fi
while [[ ! -s "$1" ]]; do sleep 0.05; done
printf 'checkpoint started\n'
[[ "${GBGATE:-}" == stop ]] && kill -STOP $$
exit 0
SUBJECT
    chmod +x "${SUBJECT}"
}

teardown() {
    if [[ -s "${PIDS}" ]]; then
        kill -KILL "$(cat "${PIDS}")" 2>/dev/null || true
    fi
}

# dead PID: PID has ended (a function, so that its status fails the test
# wherever it stands; bats does not fail on a "!" that is not last).
dead() {
    if alive "$1"; then
        echo "pid $1 outlived the run"
        return 1
    fi
}

# alive PID: PID is a process that has not ended (a zombie has).
alive() {
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    [[ -n "$state" && "$state" != Z* ]]
}

# cgroup_possible: whether this machine lets a run make a cgroup v2,
# found apart from the runner: a cgroup2 mount, and this process's cgroup
# in it a folder it may write.
cgroup_possible() {
    local mnt rel
    [[ -r /proc/self/mountinfo && -r /proc/self/cgroup ]] || return 1
    mnt="$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' /proc/self/mountinfo | head -n 1)"
    rel="$(awk -F: '$1 == "0" { print $3; exit }' /proc/self/cgroup)"
    [[ -n "$mnt" && -n "$rel" && -w "$mnt${rel%/}/cgroup.procs" && -w "$mnt${rel%/}" ]]
}

@test "a daemon the program leaves behind ends with the run, and the run says what contained it" {
    run "${KIT_GBGATE}" run --cap 64MiB -- "${SUBJECT}" "${PIDS}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[${#lines[@]} - 3]}" =~ ^gate:\ contained\ by\ the\ (cgroup\ .*,\ and\ a\ )?sweep\ of\ the\ processes\ marked\ GBGATE_RUN_ID= ]]
    # Where a cgroup can be made, the run is in one, and says so.
    if cgroup_possible; then
        [[ "${lines[${#lines[@]} - 3]}" == "gate: contained by the cgroup "* ]] || false
    fi
    [ -s "${PIDS}" ]
    sleep 0.2
    dead "$(cat "${PIDS}")"
}

@test "without a cgroup, the sweep of the marked processes ends the daemon" {
    GK_NO_CGROUP=1 run "${KIT_GBGATE}" run --cap 64MiB -- "${SUBJECT}" "${PIDS}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[${#lines[@]} - 3]}" == "gate: contained by the sweep of the processes marked GBGATE_RUN_ID="* ]]
    sleep 0.2
    dead "$(cat "${PIDS}")"
}

@test "a daemon that empties its environment is ended by the run's cgroup" {
    cgroup_possible || skip "no cgroup v2 can be made here (not root, or the unified hierarchy is not mounted writable): only the sweep is in force, which such a daemon escapes"
    run "${KIT_GBGATE}" run --cap 64MiB -- "${SUBJECT}" "${PIDS}" clean
    echo "$output"
    [ "$status" -eq 0 ]
    sleep 0.2
    dead "$(cat "${PIDS}")"
}

@test "a program killed by the guard takes its daemon with it" {
    # The daemon is started, then the program hangs past the guard's clock.
    # shellcheck disable=SC2016 # the script's own $1, unexpanded here
    printf '#!/usr/bin/env bash\nsetsid /bin/sh -c %s sh "$1" </dev/null >/dev/null 2>&1\nsleep 300\n' \
        "'( sleep 300 & echo \$! >\"\$1\" ) &'" >"${SUBJECT}"
    run "${KIT_GBGATE}" run --guard-s 2 -- "${SUBJECT}" "${PIDS}"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$(verdict)" == "gate: fail (guard-time):"* ]] || false
    sleep 0.2
    dead "$(cat "${PIDS}")"
}

@test "a gate written in bats contains its program as the runner does" {
    # shellcheck source=gates/kit/gbgate.bash
    source "${KIT}/gbgate.bash"
    gk_start "${BATS_TEST_TMPDIR}/out" "${BATS_TEST_TMPDIR}/err" "${SUBJECT}" "${PIDS}"
    gk_next
    [ -s "${PIDS}" ]
    alive "$(cat "${PIDS}")"
    gk_kill
    sleep 0.2
    dead "$(cat "${PIDS}")"
}

@test "a host with no cgroup v2 mounted gets no cgroup, and nothing is made in its place" {
    # /proc/self/cgroup may list "0::<path>" where no cgroup2 is mounted
    # (a hybrid host with its v2 hierarchy unmounted): the runner must not
    # make a folder at that path, which is a path of the root file system
    # there. Both files are stood in for, the path a folder of this test.
    # The v1 hierarchy is mounted at a folder of the test, with the
    # runner's path inside it made: a runner that took the v1 mount for
    # the v2 one would make its cgroup folder there.
    mkdir -p "${BATS_TEST_TMPDIR}/root" "${BATS_TEST_TMPDIR}/v1${BATS_TEST_TMPDIR}/root"
    printf '25 1 0:22 / %s rw - cgroup cgroup rw,memory\n' "${BATS_TEST_TMPDIR}/v1" >"${BATS_TEST_TMPDIR}/mountinfo"
    printf '0::%s\n' "${BATS_TEST_TMPDIR}/root" >"${BATS_TEST_TMPDIR}/cgroup"
    GK_MOUNTINFO="${BATS_TEST_TMPDIR}/mountinfo" GK_PROC_CGROUP="${BATS_TEST_TMPDIR}/cgroup" \
        run "${KIT_GBGATE}" run -- "${SUBJECT}" "${PIDS}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gate: contained by the sweep of the processes marked GBGATE_RUN_ID="* ]] || false
    [ -z "$(ls -A "${BATS_TEST_TMPDIR}/root")" ]
    [ -z "$(ls -A "${BATS_TEST_TMPDIR}/v1${BATS_TEST_TMPDIR}/root")" ]
    dead "$(cat "${PIDS}")"
}

@test "the run's cgroup is made under the runner's own, not at the hierarchy's root" {
    # A stand-in hierarchy in a folder of this test: mounted at root/, the
    # runner in /sub. The kernel would move the program into a real one;
    # here the folder is only made (and, no kernel moving anything, given
    # up for the sweep): it must be made in sub/, where a delegated
    # subtree lets a runner that is not root make it.
    mkdir -p "${BATS_TEST_TMPDIR}/root/sub"
    # The mount's source is "none", as some hosts name it: the type, the
    # field after " - ", is what says cgroup2.
    printf '30 1 0:26 / %s rw - cgroup2 none rw\n' "${BATS_TEST_TMPDIR}/root" >"${BATS_TEST_TMPDIR}/mountinfo"
    printf '0::/sub\n' >"${BATS_TEST_TMPDIR}/cgroup"
    GK_MOUNTINFO="${BATS_TEST_TMPDIR}/mountinfo" GK_PROC_CGROUP="${BATS_TEST_TMPDIR}/cgroup" \
        run "${KIT_GBGATE}" run -- "${SUBJECT}" "${PIDS}"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gate: contained by the sweep of the processes marked GBGATE_RUN_ID="* ]] || false
    ls -la "${BATS_TEST_TMPDIR}/root" "${BATS_TEST_TMPDIR}/root/sub"
    compgen -G "${BATS_TEST_TMPDIR}/root/sub/gbgate.*" >/dev/null
    [ -z "$(compgen -G "${BATS_TEST_TMPDIR}/root/gbgate.*" || true)" ]
    dead "$(cat "${PIDS}")"
}
