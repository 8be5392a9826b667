#!/usr/bin/env bash
# mutants.sh -- giveback's mutation engine: small plausible bugs made in
# the lines in scope, one at a time, each run against the tests that
# execute its line; a mutant no test kills is a missing test, or an
# equivalent mutant argued in mutants/equivalent.tsv.
#
# Usage: ci/mutants.sh [--since REV | --files PATH... | --all]
#                      [--budget SECONDS] [--jobs N] [--list]
#   --since REV    the lines changed since REV, committed or not (the
#                  default: since the revision in mutants/base)
#   --files PATH   every line of these files (they must be in scope)
#   --all          every file in scope (mutants/config.ini)
#   --budget S     start no mutant later than S seconds after the start;
#                  those left are reported not-run
#   --jobs N       mutants tried at once, each in its own copy of the tree
#   --list         print the mutants and stop
# Writes build/mutants/mutants.tsv (a row per mutant) and mutants.md (the
# table); its last line is "mutants: K killed, S survived, E equivalent,
# U uncovered, of N". Exits 1 on a mutant that survives or a line no test
# executes that mutants/equivalent.tsv does not explain, 2 on a usage
# error. The project's own files are never written (ci/mutants/worker.py).
# The engine itself is ci/mutants/engine.py; README.md, "Mutation
# testing", says how to read and answer what it prints.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require mutants.sh "base mutants" python3 git cmake ninja gcov bats
exec python3 "$root/ci/mutants/engine.py" "$@"
