# shellcheck shell=bash
# helpers.bash -- what the kit's bats files find the kit and read a run's
# output with, loaded by each (`load helpers`). verdict and field read the
# status and output that bats' run sets for the test that calls them.
# shellcheck disable=SC2154,SC2034 # lines and output are bats' own; the
# variables set here are read by the bats files that load this one.

# verdict: the runner's last line, "gate: pass" or "gate: fail (...)".
verdict() {
    echo "${lines[${#lines[@]} - 1]}"
}

# field NAME KEY: the figure KEY of the runner's line for checkpoint NAME.
field() {
    grep "^checkpoint $1 " <<<"$output" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# kit_paths: TEST_DIR (this folder), KIT (the kit's) and KIT_GBGATE (its
# runner), and the kit first on PATH, so that a program calls the helper
# by its name, as it would an installed kit's.
kit_paths() {
    TEST_DIR="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    KIT="$(dirname "${TEST_DIR}")"
    KIT_GBGATE="${KIT}/gbgate"
    PATH="${KIT}:${PATH}"
    export PATH
}

# path_without NAME...: a PATH for a host that lacks the programs NAME...:
# one folder of links to every other program on PATH, each name's first,
# as a lookup on PATH finds it.
path_without() {
    local dir="${BATS_TEST_TMPDIR}/path-without" d f n
    local -a dirs
    mkdir -p "${dir}"
    IFS=: read -r -a dirs <<<"${PATH}"
    for d in "${dirs[@]}"; do
        for f in "${d}"/*; do
            n="${f##*/}"
            [[ -f "${f}" && -x "${f}" && ! -e "${dir}/${n}" && " $* " != *" ${n} "* ]] || continue
            ln -s "${f}" "${dir}/${n}"
        done
    done
    echo "${dir}"
}
