# shellcheck shell=bash
# trace-env.sh -- BASH_ENV of ci/mutants.sh's coverage pass: every bash
# that a test starts writes the lines it runs (file:line, by PS4) to a file
# of its own under GBM_TRACE_DIR, on a descriptor of its own, so that the
# program's own output is untouched. Sourced by bash before a script runs.
if [[ -n "${GBM_TRACE_DIR:-}" && $- != *x* ]] &&
    exec {gbm_trace_fd}>>"$GBM_TRACE_DIR/$$.$BASHPID.trace"; then
    BASH_XTRACEFD=$gbm_trace_fd
    PS4='+${BASH_SOURCE[0]-}:${LINENO}:'
    set -x
fi 2>/dev/null
