# shellcheck shell=bash
# helpers.bash -- what the kit's bats files read a run's output with, loaded
# by each (`load helpers`). They read the status and output that bats' run
# sets for the test that calls them.
# shellcheck disable=SC2154 # lines and output are bats' own.

# verdict: the runner's last line, "gate: pass" or "gate: fail (...)".
verdict() {
    echo "${lines[${#lines[@]} - 1]}"
}

# field NAME KEY: the figure KEY of the runner's line for checkpoint NAME.
field() {
    grep "^checkpoint $1 " <<<"$output" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
