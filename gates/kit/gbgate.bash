# shellcheck shell=bash
# gbgate.bash -- the kit's reader in shell: run a program, stop at its
# checkpoints, read it from outside, guard it, judge a reading. Sourced by
# gbgate (run, matrix) and by gate.bash (gates written in bats), so there is
# one copy of the protocol in shell; the C reader (gbgate_reader.c) is the
# other side of the same protocol for programs that run their own children.
#
# The protocol (gbgate.h): a program run with GBGATE=stop prints
# "checkpoint <name> [key=value ...]" on stdout, flushes it and stops itself
# with SIGSTOP. The reader waits for the stop with nothing but ps, reads the
# stopped process (ps -o rss=, Linux's /proc/<pid>/smaps_rollup and
# /proc/<pid>/status), and continues it with SIGCONT. While it waits it is
# the guard: past the resident-size or the time limit the program is killed,
# so a runaway is a red cell with a reason, never a hung run or a dead
# machine.
#
# Written for bash 3.2 too (macOS's /bin/bash): no associative arrays, no
# mapfile, no ${var,,}; BSD ps, awk and sed.
#
# Globals of a run (gk_start .. gk_next): GK_PID, GK_OUT and GK_ERR (the
# files its stdout and stderr go to), GK_STOPS (checkpoints reached),
# GK_LINE (the last checkpoint line), GK_READ (the names of the
# checkpoints read, ",a,b,"), GK_PGID (its process group), GK_STATUS (exit status once it
# exited), GK_REASON and GK_DETAIL (why the guard killed it), GK_PEAK_KIB
# (the highest resident size read), GK_SERIES (a file to append the
# resident size over time to, or empty), GK_GUARD_RSS_KIB, GK_GUARD_CPU_S
# and GK_GUARD_S (the guard's limits), GK_CPU_MS and GK_CPU_BASE_MS (the
# group's CPU time at the last reading and when the interval began).
# They are read by the scripts that source this file.
# shellcheck disable=SC2034

# The limits the guard enforces unless a gate sets its own: the article's
# machine once panicked at 43 GB; nothing a gate runs should come near 3 GiB.
# A runaway is told from a slow machine by the CPU time it burns, not the
# time on the clock: 120 s of CPU (the program's whole process group)
# between two checkpoints, however long a loaded machine takes to give it
# them. A program blocked for ever burns none, so the clock bounds the run
# too, far above what any gate takes even on a machine loaded ten times
# over: 20 minutes.
GK_DEFAULT_GUARD_RSS_KIB=$((3 * 1024 * 1024))
GK_DEFAULT_GUARD_CPU_S=120
GK_DEFAULT_GUARD_S=1200

gk_die() {
    echo "gbgate: error: $*" >&2
    exit 2
}

# gk_size_kib SIZE: prints SIZE (64MiB, 512KiB, 3GiB, 1.5GiB, 100B, or the
# short K/M/G) in KiB, rounded up; fails on anything else. A bare number is
# refused: whether it meant bytes or KiB is exactly the slip a gate must not
# make silently.
gk_size_kib() {
    awk -v s="$1" 'BEGIN {
        if (match(s, /^[0-9]+(\.[0-9]+)?/) == 0) exit 1
        n = substr(s, 1, RLENGTH) + 0; u = substr(s, RLENGTH + 1)
        if (u == "B") k = n / 1024
        else if (u == "KiB" || u == "K" || u == "k") k = n
        else if (u == "MiB" || u == "M") k = n * 1024
        else if (u == "GiB" || u == "G") k = n * 1024 * 1024
        else if (u == "TiB" || u == "T") k = n * 1024 * 1024 * 1024
        else exit 1
        r = int(k); if (r < k) r++
        # %d is a 32-bit int in mawk: 2 TiB is past it.
        printf "%.0f\n", r
    }'
}

# gk_mib KIB: "4.7 MiB".
gk_mib() {
    awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'
}

# The platform names a cell or a gate may be limited to: all, and linux or
# macos, and glibc where the C library is glibc. GBGATE_PLATFORMS, when
# set, replaces them: a runtime that plays another OS's policies on this
# machine (giveback's simulated macOS layer) is judged by that OS's
# colours, and then the readings only Linux gives from outside (LazyFree,
# VmHWM) are taken only if it names linux.
gk_platforms() {
    if [[ -n "${GBGATE_PLATFORMS:-}" ]]; then
        echo "$GBGATE_PLATFORMS"
        return 0
    fi
    local p="all"
    case "$(uname -s)" in
        Linux) p="$p linux" ;;
        Darwin) p="$p macos" ;;
    esac
    getconf GNU_LIBC_VERSION >/dev/null 2>&1 && p="$p glibc"
    echo "$p"
}

gk_platform_is() {
    [[ " $(gk_platforms) " == *" $1 "* ]]
}

# gk_field LINE KEY: the value of key=value in a checkpoint line, or nothing.
gk_field() {
    local w words
    read -r -a words <<<"$1"
    for w in ${words[@]+"${words[@]}"}; do   # empty under set -u before bash 4.4
        if [[ "$w" == "$2="* ]]; then
            echo "${w#*=}"
            return 0
        fi
    done
    return 0
}

# gk_tick: GK_ELAPSED_US is the microseconds since the run started, where
# bash can tell (bash 5's EPOCHREALTIME), else whole seconds. A variable,
# not output: the guard reads the clock at every poll, and a command
# substitution there would fork a shell each time, taking the CPU from the
# program under measure.
gk_tick() {
    if [[ -n "${EPOCHREALTIME:-}" && -n "${GK_T0_US:-}" ]]; then
        local now="${EPOCHREALTIME:-}"
        now="${now//[.,]/}"
        GK_ELAPSED_US=$((10#$now - 10#$GK_T0_US))
    else
        GK_ELAPSED_US=$(((SECONDS - GK_T0_S) * 1000000))
    fi
}

# gk_series_add KIB [CHECKPOINT]: one row of the resident size over time,
# "<seconds>\t<KiB>\t<checkpoint>", the checkpoint "-" for a reading
# between two (an empty last field would read as missing to gnuplot).
gk_series_add() {
    [[ -n "${GK_SERIES:-}" ]] || return 0
    gk_tick
    printf '%d.%03d\t%s\t%s\n' $((GK_ELAPSED_US / 1000000)) $((GK_ELAPSED_US / 1000 % 1000)) "$1" "${2:--}" >>"$GK_SERIES"
}

# gk_series_begin FILE GATE BUILD CAP_KIB: starts a series file; its first
# line carries what the charts need to draw it (the cap is 0 when none).
gk_series_begin() {
    GK_SERIES="$1"
    [[ -n "$GK_SERIES" ]] || return 0
    mkdir -p "$(dirname "$GK_SERIES")"
    printf '# gate=%s build=%s cap_kib=%s\n' "$2" "$3" "${4:-0}" >"$GK_SERIES"
}

# gk_start OUT ERR COMMAND...: starts COMMAND in the background with
# GBGATE=stop, its stdout in OUT and its stderr in ERR. fd 3 (bats' own) is
# closed in it, or bats would wait for the program as well as the test.
gk_start() {
    GK_OUT="$1"
    GK_ERR="$2"
    shift 2
    : >"$GK_OUT"
    : >"$GK_ERR"
    # env execs the command, so $! is the program's own pid. Job control
    # (set -m) starts it as the leader of a process group of its own, so
    # that everything it starts can be found (gk_group_stopped) and killed
    # with it (gk_kill): nothing the kit started outlives the run.
    #
    # sh exports its own pid as GBGATE_PID before it execs env, so the
    # program's environment names the pid the kit started and reads, the
    # one the checkpoint helper (gbgate checkpoint) must stop; with it,
    # GBGATE_STOPS_FILE, where gk_next counts the stops it has read, and
    # GBGATE_OUT, the capture file, which the helper writes its line to
    # when its stdout is a pipe (a system() or popen() of the program).
    GK_STOPS_FILE="$GK_OUT.stops"
    echo 0 >"$GK_STOPS_FILE"
    # The run's cgroup, joined by sh before it execs (containment, above).
    gk_contain_begin
    set -m
    # Appended (>>): a program that moves its stdout's offset, as PHP's
    # proc_open does, still adds its lines at the end of the file read.
    sh -c 'if [ -n "$1" ]; then echo $$ >"$1" 2>/dev/null || :; fi; shift
           GBGATE_PID=$$; export GBGATE_PID; exec env "$@"' sh "${GK_CGROUP:+$GK_CGROUP/cgroup.procs}" \
        GBGATE=stop GBGATE_STOPS_FILE="$GK_STOPS_FILE" GBGATE_RUN_ID="$GK_RUN_ID" GBGATE_OUT="$GK_OUT" \
        "$@" >>"$GK_OUT" 2>>"$GK_ERR" 3>&- &
    GK_PID=$!
    set +m
    GK_PGID=$GK_PID
    gk_contain_joined
    GK_STOPS=0
    GK_READ=
    GK_POLLS=0
    GK_LINE=
    GK_STATUS=
    GK_REASON=
    GK_DETAIL=
    GK_PEAK_KIB=0
    GK_T0_S=$SECONDS
    # Empty under bash before 5.0 (macOS ships 3.2), which gk_tick knows.
    GK_T0_US="${EPOCHREALTIME:-}"
    GK_T0_US="${GK_T0_US//[.,]/}"
    GK_GUARD_RSS_KIB="${GK_GUARD_RSS_KIB:-$GK_DEFAULT_GUARD_RSS_KIB}"
    GK_GUARD_CPU_S="${GK_GUARD_CPU_S:-$GK_DEFAULT_GUARD_CPU_S}"
    GK_GUARD_S="${GK_GUARD_S:-$GK_DEFAULT_GUARD_S}"
    GK_CPU_MS=0
    GK_CPU_BASE_MS=0
    GK_CPU_BASE_AT=0
    GK_CPU_SCAN_US=0
    GK_CPU_SINCE="its start"
    # One fork per run, not per poll.
    [[ -n "${GK_CLK_TCK:-}" ]] || gk_clk_tck_read
}

# GK_CLK_TCK: the kernel's clock tick, the unit of /proc/<pid>/stat's
# times, as getconf says it; 100, the usual, where it says nothing usable.
gk_clk_tck_read() {
    GK_CLK_TCK="$(getconf CLK_TCK 2>/dev/null || echo 100)"
    [[ "$GK_CLK_TCK" =~ ^[0-9]+$ ]] && ((GK_CLK_TCK > 0)) || GK_CLK_TCK=100
}

# The resident size of the running program in KiB, as ps prints it.
gk_rss_kib() {
    local v
    v="$(ps -o rss= -p "$GK_PID" 2>/dev/null | tr -d ' ')"
    echo "${v:-0}"
}

# Pages given back with MADV_FREE still count in the resident size until
# the kernel wants them: Linux shows them as LazyFree; elsewhere 0.
gk_lazyfree_kib() {
    local f="/proc/$GK_PID/smaps_rollup"
    if [[ -r "$f" ]] && gk_platform_is linux; then
        awk '/^LazyFree:/ { print $2; found = 1 } END { if (!found) print 0 }' "$f"
    else
        echo 0
    fi
}

# gk_pss_uss: "<pss> <uss>" in KiB, read from Linux's smaps_rollup: the
# proportional set size (each page shared with other processes counted as
# its share, 1/n of it) and the unique set size (the pages no other
# process maps: Private_Clean + Private_Dirty). Nothing elsewhere, or when
# judged as a platform without it. For a runtime that forks workers, the
# resident size counts the pages they share in each of them; PSS divides
# them, USS leaves them out.
gk_pss_uss() {
    local f="/proc/$GK_PID/smaps_rollup"
    if [[ -r "$f" ]] && gk_platform_is linux; then
        awk '$1 == "Pss:" { pss = $2; found = 1 }
            $1 == "Private_Clean:" || $1 == "Private_Dirty:" { uss += $2 }
            END { if (found) print pss, uss + 0 }' "$f" 2>/dev/null || true
    fi
}

# The peak resident size from outside, where the OS keeps it (Linux
# VmHWM); elsewhere the highest the guard read.
gk_hwm_kib() {
    local f="/proc/$GK_PID/status"
    if [[ -r "$f" ]] && gk_platform_is linux; then
        awk '/^VmHWM:/ { print $2 }' "$f"
    else
        echo "${GK_PEAK_KIB:-0}"
    fi
}

# ---------------------------------------------------------- containment
#
# Nothing a run starts outlives it: not the program, not a child it
# started in another process group or session (setsid, a daemon's double
# fork), which the group's kill misses. Two nets, the first where it can be
# had:
#   cgroup  a cgroup v2 of its own for the run, made under the runner's
#           own (Linux, where the unified hierarchy is mounted and
#           writable: as root, or in a delegated subtree); the program
#           joins it before it execs, so does everything it starts, and
#           no setsid leaves it. Ended with cgroup.kill (Linux 5.14), else
#           each process in it killed, then removed.
#   sweep   always: the program's environment carries GBGATE_RUN_ID, which
#           its children inherit; at the end every process whose
#           environment holds it is killed (/proc/<pid>/environ on Linux,
#           ps -E on macOS). A child that clears its environment escapes
#           this net alone.
# GK_CONTAIN says which is in force, for the run's output.

# gk_contain_begin: a run's id and, where one can be made, its cgroup
# (GK_CGROUP, the folder, or empty).
gk_contain_begin() {
    GK_RUN_ID="$$.${RANDOM}${RANDOM}"
    GK_CGROUP=""
    GK_CONTAIN="sweep of the processes marked GBGATE_RUN_ID=$GK_RUN_ID"
    local mnt rel mountinfo="${GK_MOUNTINFO:-/proc/self/mountinfo}" cgroup="${GK_PROC_CGROUP:-/proc/self/cgroup}"
    # GK_NO_CGROUP set: the sweep alone; GK_MOUNTINFO and GK_PROC_CGROUP
    # stand for the two files (the kit's tests of a host without them).
    [[ -z "${GK_NO_CGROUP:-}" && -r "$mountinfo" && -r "$cgroup" ]] || return 0
    # The unified hierarchy's mount point (the field after " - " is the
    # file system's type), and the runner's cgroup in it ("0::<path>").
    # A host with cgroup v1 alone may still list "0::/" (hybrid, with no
    # v2 mount): without both, no cgroup is made anywhere.
    mnt="$(awk '{ split($0, half, " - "); split(half[2], after, " "); if (after[1] == "cgroup2") { print $5; exit } }' "$mountinfo")"
    rel="$(awk -F: '$1 == "0" { print $3; exit }' "$cgroup")"
    [[ -n "$mnt" && -n "$rel" ]] || return 0
    [[ "$rel" == / ]] && rel=""
    if mkdir "$mnt$rel/gbgate.$GK_RUN_ID" 2>/dev/null; then
        GK_CGROUP="$mnt$rel/gbgate.$GK_RUN_ID"
        GK_CGROUP_REL="$rel/gbgate.$GK_RUN_ID"
    fi
}

# gk_contain_joined: after the start, keeps the cgroup only if the program
# is in it. sh joins it before it execs the program; the runner moves it
# too, which is the same move if sh got there first, and settles it if
# not; a cgroup the kernel will not move it to (one whose parent may hold
# no process) is given up.
gk_contain_joined() {
    [[ -n "$GK_CGROUP" ]] || return 0
    echo "$GK_PID" >"$GK_CGROUP/cgroup.procs" 2>/dev/null || true
    if grep -qx "0::$GK_CGROUP_REL" "/proc/$GK_PID/cgroup" 2>/dev/null; then
        GK_CONTAIN="cgroup $GK_CGROUP, and a $GK_CONTAIN"
        return 0
    fi
    rmdir "$GK_CGROUP" 2>/dev/null || true
    GK_CGROUP=""
}

# gk_contain_end: kills every process the run started that is still
# there, by both nets, and removes the cgroup.
gk_contain_end() {
    local pid n
    if [[ -n "${GK_CGROUP:-}" ]]; then
        # cgroup.kill (Linux 5.14 on) kills them all at once; where the
        # kernel has none, the write is refused and the loop below works.
        echo 1 >"$GK_CGROUP/cgroup.kill" 2>/dev/null || true
        # Without cgroup.kill, or while it works: each process in it, and
        # the cgroup removed once empty (a second at most).
        for ((n = 0; n < 20; n++)); do
            while read -r pid; do
                kill -KILL "$pid" 2>/dev/null || true
            done <"$GK_CGROUP/cgroup.procs" 2>/dev/null
            rmdir "$GK_CGROUP" 2>/dev/null && break
            sleep 0.05
        done
        GK_CGROUP=""
    fi
    [[ -n "${GK_RUN_ID:-}" ]] || return 0
    for pid in $(gk_marked "GBGATE_RUN_ID=$GK_RUN_ID"); do
        kill -KILL "$pid" 2>/dev/null || true
    done
    GK_RUN_ID=""
}

# gk_marked NAME=VALUE: the pids of the processes whose environment holds
# NAME=VALUE exactly (as far as this user may read it).
gk_marked() {
    local f
    if [[ -r /proc/self/environ ]]; then
        # One NUL-separated entry equal to the mark, in one grep over every
        # process; the runner never holds it (it is set in the program's
        # environment alone).
        # shellcheck disable=SC2013 # file names of /proc, one word each
        for f in $(LC_ALL=C grep -lazxF "$1" /proc/[0-9]*/environ 2>/dev/null); do
            f="${f#/proc/}"
            echo "${f%/environ}"
        done
    else
        ps -E -ww -A -o pid= -o command= 2>/dev/null | awk -v m=" $1" 'index($0 " ", m " ") { print $1 }'
    fi
}

# gk_kill: kills the program and every process of its group (continuing
# it would let it run on; a wrapper's child stopped at a checkpoint would
# stay stopped forever), and reaps it.
gk_kill() {
    gk_kill_group
    if [[ -n "${GK_PID:-}" ]]; then
        kill -KILL "$GK_PID" 2>/dev/null || true
        # Reaped even when the group's kill got there first, or bash would
        # report the job killed on its stderr.
        wait "$GK_PID" 2>/dev/null || true
    fi
    GK_PID=
    # Then what left its group: the leader is reaped first, or the
    # containment's wait would let bash report the job killed.
    gk_contain_end
}

# gk_kill_group: kills what is left of the program's process group. Called
# while the leader is still unreaped (alive or a zombie), so the group's id
# cannot have been given to another process.
gk_kill_group() {
    if [[ -n "${GK_PGID:-}" ]]; then
        kill -KILL -- "-$GK_PGID" 2>/dev/null || true
    fi
    GK_PGID=
}

# ------------------------------------------------------------ the grammar
#
# What a program prints is data: every line of the protocol is checked
# against the grammar below before anything of it is used, and nothing of
# it ever reaches arithmetic, eval, printf's format, an array subscript or
# an unquoted expansion. A line that begins with the word "checkpoint" or
# "settled" (followed by a blank, or alone) is the protocol's: the two
# words are reserved, and such a line must be exactly
#
#   checkpoint NAME [KEY=VALUE ...]        (or: settled NAME [KEY=VALUE ...])
#
# one space between fields, at most 4096 bytes of printable ASCII; NAME of
# 1 to 64 letters, digits, ".", "_" and "-"; KEY a letter or "_" then
# letters, digits and "_" (at most 64), each key once; VALUE any printable
# characters but a space (at most 256). The figures the runner reads itself
# (GK_FIGURES: held_kib, footprint_kib) are unsigned decimal numbers of at
# most 15 digits, whole or with a fraction (what x / 1024 prints in Python
# or JavaScript), rounded to the nearest whole KiB. A line that breaks it
# is red for protocol, named, with what broke. awk reads it in the C
# locale, after tr has made a NUL byte a control character (an awk may end
# a string at a NUL), so a byte is a byte whatever the locale.
GK_FIGURES="held_kib footprint_kib"
GK_RESERVED='^(checkpoint|settled)([ \t]|$)'

# gk_protocol_lines: the program's output, NUL bytes made \001, for awk.
gk_protocol_lines() {
    LC_ALL=C tr '\000' '\001' <"$GK_OUT"
}

# gk_checkpoint_lines: how many lines of the protocol the program has
# printed: checkpoint lines and, under --settle, settled lines, each of
# which comes with a stop.
gk_checkpoint_lines() {
    gk_protocol_lines | LC_ALL=C awk -v re="$GK_RESERVED" '$0 ~ re { n++ } END { print n + 0 }'
}

# gk_line_at N: the N-th line of the protocol the program printed, checked:
# prints it and returns 0 when it keeps to the grammar; else prints what
# breaks it, naming the line and the field, and returns 1.
gk_line_at() {
    gk_protocol_lines | LC_ALL=C awk -v re="$GK_RESERVED" -v n="$1" -v figures="$GK_FIGURES" '
        function quote(s) { return "\"" (length(s) > 60 ? substr(s, 1, 60) "..." : s) "\"" }
        function bad(what) { printf "line %d of its output, the %s line of the protocol: %s", NR, nth(n), what; failed = 1; exit 1 }
        function nth(k) { return k (k % 10 == 1 && k % 100 != 11 ? "st" : k % 10 == 2 && k % 100 != 12 ? "nd" : k % 10 == 3 && k % 100 != 13 ? "rd" : "th") }
        BEGIN { split(figures, f, " "); for (i in f) figure[f[i]] = 1 }
        $0 !~ re || ++k < n { next }
        {
            line = $0
            if (length(line) > 4096)
                bad("it is " length(line) " bytes long, more than the 4096 a line may be")
            if (match(line, /[^ -~]/))
                bad("byte " RSTART " is not printable ASCII (a tab, a control character, NUL or a byte of another encoding): " quote(substr(line, 1, RSTART - 1)) " comes before it")
            if (line ~ /^[a-z]+ *$/)
                bad(quote(line) " names no checkpoint")
            if (line ~ /  /)
                bad(quote(line) " has two spaces together: fields are separated by one space")
            if (line ~ / $/)
                bad(quote(line) " has a space at its end: fields are separated by one space")
            nw = split(line, w, / /)
            if (w[2] !~ /^[A-Za-z0-9._-]+$/ || length(w[2]) > 64)
                bad("the name " quote(w[2]) " is not 1 to 64 letters, digits, \".\", \"_\" and \"-\"")
            for (i = 3; i <= nw; i++) {
                eq = index(w[i], "=")
                if (eq == 0)
                    bad("the field " quote(w[i]) " is not KEY=VALUE")
                key = substr(w[i], 1, eq - 1); val = substr(w[i], eq + 1)
                if (key !~ /^[A-Za-z_][A-Za-z0-9_]*$/ || length(key) > 64)
                    bad("the key " quote(key) " is not a letter or \"_\" followed by letters, digits and \"_\" (at most 64)")
                if (key in seen)
                    bad("the key " quote(key) " is given twice")
                seen[key] = 1
                if (length(val) > 256)
                    bad("the value of " key " is " length(val) " bytes long, more than 256")
                if ((key in figure) && (val !~ /^[0-9]+([.][0-9]+)?$/ || index(val ".", ".") > 16))
                    bad(key "=" quote(val) " is not an unsigned decimal number of at most 15 digits (KiB; a fraction is rounded)")
            }
            print line
            exit 0
        }
        END { if (!failed && k < n) { printf "line %d of the protocol is not there", n; exit 1 } }'
}

# gk_figure LINE KEY: the figure KEY of a checked line (gk_line_at), a
# whole number of KiB rounded to the nearest (half up), or nothing when
# the line has none.
gk_figure() {
    local v
    v="$(gk_field "$1" "$2")"
    [[ -n "$v" ]] || return 0
    local whole="${v%%.*}" frac=""
    [[ "$v" == *.* ]] && frac="${v#*.}"
    # Only digits reach here (gk_line_at); 10# keeps a leading zero decimal.
    whole=$((10#$whole))
    [[ "${frac:0:1}" == [5-9] ]] && whole=$((whole + 1))
    echo "$whole"
}

# gk_protocol DETAIL: the program broke the protocol: red for protocol,
# killed, never a pass.
gk_protocol() {
    GK_REASON=protocol
    GK_DETAIL="$1"
    gk_kill
    return 2
}

# gk_group_stopped: prints "<pid> <command>" of a process of the program's
# group, other than the program, that is stopped, or nothing. A program
# started through a wrapper that does not exec (sh -c 'prog; true') stops
# in a child the kit does not read: the kit says so instead of waiting for
# the guard.
gk_group_stopped() {
    ps -A -o pid= -o pgid= -o stat= -o comm= 2>/dev/null |
        awk -v g="$GK_PGID" -v p="$GK_PID" '$2 == g && $1 != p && $3 ~ /^T/ { n = $4; sub(/.*\//, "", n); print $1, n; exit }'
}

# gk_comm PID: the name of PID's program, without its folder (macOS's ps
# prints the path).
gk_comm() {
    ps -o comm= -p "$1" 2>/dev/null | awk '{ n = $0; sub(/.*\//, "", n); print n }'
}

# gk_next: waits for the next checkpoint. Returns 0 when the program
# stopped there (GK_LINE holds its line, GK_STOPS counts it, GK_READ lists
# the names read, ",a,b,"), 1 when it exited (GK_STATUS holds the status),
# 2 when the kit killed it: the guard (GK_REASON guard-rss, guard-cpu or
# guard-time) or a broken protocol (protocol), GK_DETAIL says at what.
#
# The pairing is checked, not assumed: at the n-th stop the program must
# have printed exactly n checkpoint lines, and when it ends every line it
# printed must have been read while it was stopped there. A runtime that
# stops itself with a process-directed SIGSTOP can print its next line
# before the stop lands, and two stops can merge into one; a program whose
# stdout is not flushed stops with no line. Either would put one
# checkpoint's reading under another's name, or read none at all: both are
# red for protocol.
gk_next() {
    local out stat rss lines other
    gk_guard_interval
    while :; do
        # One ps for both: each poll forks as little as it can.
        out="$(ps -o stat= -o rss= -p "$GK_PID" 2>/dev/null || true)"
        stat="" rss=""
        read -r stat rss <<<"$out" || true
        case "$stat" in
            T*)
                GK_STOPS=$((GK_STOPS + 1))
                gk_stops_read
                lines="$(gk_checkpoint_lines)"
                if ((lines < GK_STOPS)); then
                    gk_protocol "stop $GK_STOPS came with no new checkpoint line (it stopped without printing one, its stdout was not flushed, or the line went into a pipe that the program reads, as system() and popen() do: the helper, gbgate checkpoint, writes to GBGATE_OUT then)"
                    return 2
                fi
                if ((lines > GK_STOPS)); then
                    gk_protocol "at stop $GK_STOPS it had printed $lines checkpoint lines: $(gk_unread_names "$GK_STOPS") printed and not read while stopped there (a stop lost or late: a SIGSTOP sent to the process, not the thread?; or a line of its own output that begins with \"checkpoint\" or \"settled\", which the protocol reserves)"
                    return 2
                fi
                if ! GK_LINE="$(gk_line_at "$GK_STOPS")"; then
                    gk_protocol "$GK_LINE (the protocol's grammar: the kit's README.md, \"The protocol\")"
                    return 2
                fi
                GK_READ="${GK_READ:-,}$(gk_checkpoint_name "$GK_LINE"),"
                ((${rss:-0} > GK_PEAK_KIB)) && GK_PEAK_KIB=$rss
                gk_series_add "${rss:-0}" "$(gk_stop_label "$GK_LINE")"
                return 0
                ;;
            "" | Z*)
                # What is left of its group goes with it.
                gk_kill_group
                GK_STATUS=0
                wait "$GK_PID" 2>/dev/null || GK_STATUS=$?
                GK_PID=
                gk_contain_end
                lines="$(gk_checkpoint_lines)"
                if ((lines > GK_STOPS)); then
                    GK_REASON=protocol
                    GK_DETAIL="it ended with $(gk_unread_names "$GK_STOPS") printed and never read while stopped there ($lines checkpoint lines, $GK_STOPS stops read; a line of its own output that begins with \"checkpoint\" or \"settled\" is the protocol's, which reserves them)"
                    return 2
                fi
                return 1
                ;;
        esac
        # A process of its group other than itself stopped: the checkpoint
        # is in a child the kit does not read. Looked for every tenth poll
        # (half a second), as it costs a ps of every process.
        GK_POLLS=$((GK_POLLS + 1))
        if ((GK_POLLS % 10 == 0)); then
            other="$(gk_group_stopped)"
            if [[ -n "$other" ]]; then
                gk_protocol "the checkpoint stopped pid ${other%% *} (${other#* }), not the program the kit started, pid $GK_PID ($(gk_comm "$GK_PID")): a wrapper started it without exec; start the program itself, or end the wrapper with exec (sh -c 'exec prog')"
                return 2
            fi
        fi
        rss="${rss:-0}"
        ((rss > GK_PEAK_KIB)) && GK_PEAK_KIB=$rss
        # 0 is no reading: the program was ending.
        ((rss == 0)) || gk_series_add "$rss"
        gk_settle_sample "$rss"
        if ((rss > GK_GUARD_RSS_KIB)); then
            GK_REASON="guard-rss"
            GK_DETAIL="killed at $(gk_mib "$rss") resident, over the guard's $(gk_mib "$GK_GUARD_RSS_KIB")"
            gk_kill
            return 2
        fi
        gk_guard_clock "$rss" || return 2
        sleep 0.05
    done
}

# gk_cpu_ms: sets GK_CPU_MS to the CPU time, user and system, in ms, of
# the program's process group: every process of the group alive (or not
# yet reaped), with what each has reaped of its own children. On Linux it
# is read from /proc/<pid>/stat with bash's own read, no fork: the guard
# reads it while the program runs, and a process started every poll would
# take CPU from the program under measure and load a loaded machine more.
# Elsewhere (macOS) from ps, which counts no reaped child. GK_CPU_PS set
# takes the ps way on Linux too (the kit's tests). With "leader", the
# program's own alone (never more than its group's), one file read on
# Linux and nothing elsewhere: cheap enough for every poll.
gk_cpu_ms() {
    local f line ticks=0 files
    GK_CPU_MS=0
    [[ -n "${GK_PGID:-}" ]] || return 0
    if [[ -z "${GK_CPU_PS:-}" && -r /proc/self/stat ]]; then
        if [[ "${1:-}" == leader ]]; then
            files=("/proc/$GK_PID/stat")
        else
            files=(/proc/[0-9]*/stat)
        fi
        for f in "${files[@]}"; do
            read -r line 2>/dev/null <"$f" || continue
            # The fields after "pid (comm) " (comm may hold spaces and
            # parentheses): state ppid pgrp ... the 12th to the 15th are
            # utime stime cutime cstime (proc(5)'s 14 to 17).
            line="${line##*) }"
            # shellcheck disable=SC2086  # split into the fields, on purpose
            set -- $line
            [[ "${3:-}" == "$GK_PGID" ]] || continue
            ticks=$((ticks + ${12:-0} + ${13:-0} + ${14:-0} + ${15:-0}))
        done
        GK_CPU_MS=$((ticks * 1000 / GK_CLK_TCK))
    elif [[ "${1:-}" != leader ]]; then
        GK_CPU_MS="$(ps -A -o pgid= -o time= 2>/dev/null | awk -v g="$GK_PGID" '
            # [[dd-]hh:]mm:ss[.frac], BSD and procps alike.
            $1 == g {
                t = $2; d = 0
                if (index(t, "-")) { d = substr(t, 1, index(t, "-") - 1); t = substr(t, index(t, "-") + 1) }
                n = split(t, p, ":"); s = 0
                for (i = 1; i <= n; i++) s = s * 60 + p[i]
                ms += (s + d * 86400) * 1000
            }
            END { printf "%d\n", ms }')"
        GK_CPU_MS="${GK_CPU_MS:-0}"
    fi
}

# gk_seconds MS: "1.234" seconds.
gk_seconds() {
    printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
}

# gk_guard_interval: the CPU budget starts again as the program runs on
# from a checkpoint. Read by gk_continue while it is still stopped, so
# that none of the interval's CPU is taken as the base; read here (as it
# runs) only when it was continued some other way. The first interval's
# base is 0 (gk_start): all the group has used is the run's.
gk_guard_interval() {
    ((GK_CPU_BASE_AT == GK_STOPS)) && return 0
    gk_guard_base
}

# gk_guard_base: the group's CPU now is the base of the next interval.
gk_guard_base() {
    gk_cpu_ms
    GK_CPU_BASE_MS=$GK_CPU_MS
    GK_CPU_BASE_AT=$GK_STOPS
    GK_CPU_SINCE="checkpoint $(gk_checkpoint_name "$GK_LINE")"
}

# gk_guard_clock RSS: the guard's clocks, at a poll of the running
# program. Kills it and returns 2 (GK_REASON guard-cpu or guard-time, with
# the figures) when its group has used more than GK_GUARD_CPU_S seconds
# of CPU since its last checkpoint (a runaway), or the run has lasted
# GK_GUARD_S seconds on the clock (a hang: a program blocked for ever uses
# no CPU). The group's CPU is read once a second (a scan of /proc costs
# some 20 ms of CPU), the program's own at every poll.
gk_guard_clock() {
    local rss="$1" used over_time=0
    gk_tick
    ((GK_ELAPSED_US > GK_GUARD_S * 1000000)) && over_time=1
    # Every poll the program's own CPU, which is cheap; its group's once a
    # second on the clock (on a loaded machine a poll can take that long
    # itself, and a count of polls would leave the group unread for
    # minutes), as soon as its own is over the budget, and before the
    # clock's bound is called (a program past both is a runaway).
    if ((!over_time && GK_ELAPSED_US - GK_CPU_SCAN_US < 1000000)); then
        gk_cpu_ms leader
        ((GK_CPU_MS - GK_CPU_BASE_MS > GK_GUARD_CPU_S * 1000)) || return 0
    fi
    gk_cpu_ms
    GK_CPU_SCAN_US=$GK_ELAPSED_US
    used=$((GK_CPU_MS - GK_CPU_BASE_MS))
    if ((used > GK_GUARD_CPU_S * 1000)); then
        GK_REASON="guard-cpu"
        GK_DETAIL="killed after $(gk_seconds "$used") s of CPU since $GK_CPU_SINCE, over the guard's ${GK_GUARD_CPU_S} s (a runaway), $((GK_ELAPSED_US / 1000000)) s into the run, at $(gk_mib "$rss") resident"
        gk_kill
        return 2
    fi
    if ((over_time)); then
        GK_REASON="guard-time"
        # Blocked, or busy within the CPU budget: the CPU it used tells
        # which, and the verdict says it, never "a hang" for a program
        # that worked through those seconds. A blocked program uses next
        # to none; a busy one on a loaded machine may get a third of a CPU
        # or less, so the line is drawn at a twentieth.
        local what="a hang: it used almost no CPU"
        ((used * 20 < GK_GUARD_S * 1000)) || what="busy on the CPU, under the CPU guard, for longer than the run may last"
        GK_DETAIL="killed after ${GK_GUARD_S} s, the guard's bound on the clock for a run ($what): $(gk_seconds "$used") s of CPU since $GK_CPU_SINCE, at $(gk_mib "$rss") resident"
        gk_kill
        return 2
    fi
    return 0
}

# gk_unsettled CAP: after a reading over CAP without --settle, whether the
# process would have settled under it: the program is continued and its
# resident size read every 50 ms while it runs on, for GK_UNSETTLED_S
# seconds on the clock at most (2 by default), until it stops again (its
# next checkpoint) or ends. True, with GK_UNSETTLED_KIB and
# GK_UNSETTLED_US (after the continue), when a reading was at or under
# CAP and the program was still there at the window's end or at its next
# stop: a runtime that gives memory back on a thread of its own after the
# call that freed it (G1's uncommit, V8's unmapping), which the reading
# right after could not see. A program that ends in the window may have
# freed what it kept on its way out (Lua's lua_close): that is no
# settling, and the reason stays. The verdict stays red; only its reason
# changes, and on a machine too slow to see the drop in time it is the
# reason it would have had.
gk_unsettled() {
    local cap="$1" t0 out rss state
    GK_UNSETTLED_KIB="" GK_UNSETTLED_US=""
    kill -CONT "$GK_PID" 2>/dev/null || return 1
    gk_tick
    t0=$GK_ELAPSED_US
    while :; do
        sleep 0.05
        gk_tick
        # One ps for both, as gk_next reads them.
        out="$(ps -o stat= -o rss= -p "$GK_PID" 2>/dev/null || true)"
        state="" rss=""
        read -r state rss <<<"$out" || true
        [[ -n "$state" && "$state" != Z* ]] || return 1
        if ((GK_ELAPSED_US - t0 > ${GK_UNSETTLED_S:-2} * 1000000)) || [[ "$state" == T* ]]; then
            [[ -n "$GK_UNSETTLED_KIB" ]]
            return
        fi
        if [[ -z "$GK_UNSETTLED_KIB" ]] && ((rss > 0 && rss <= cap)); then
            GK_UNSETTLED_KIB=$rss GK_UNSETTLED_US=$((GK_ELAPSED_US - t0))
        fi
    done
}

# gk_unread_names N: the names of the checkpoint lines after the N-th, the
# ones printed and not read, for a protocol error.
gk_unread_names() {
    gk_protocol_lines | LC_ALL=C awk -v re="$GK_RESERVED" -v n="$1" '
        $0 ~ re && ++k > n { w = $1 " " $2; gsub(/[^ -~]/, "?", w); s = s (s == "" ? "" : ", ") w }
        END { print s }'
}

gk_continue() {
    gk_guard_base
    kill -CONT "$GK_PID"
}

# gk_checkpoint_name LINE: the name in "checkpoint <name> ...".
gk_checkpoint_name() {
    local words
    read -r -a words <<<"$1"
    echo "${words[1]:-}"
}

# gk_exit_detail: how the program ended, for a red cell: its status (and the
# signal, when the status says it died of one) and its last lines.
gk_exit_detail() {
    local s="exited with status ${GK_STATUS}"
    if ((GK_STATUS > 128 && GK_STATUS < 160)); then
        s="died of SIG$(kill -l $((GK_STATUS - 128)) 2>/dev/null || echo "$((GK_STATUS - 128))") (status ${GK_STATUS})"
    fi
    local tail_lines
    tail_lines="$(tail -n 3 "$GK_ERR" 2>/dev/null; grep -v '^checkpoint ' "$GK_OUT" 2>/dev/null | tail -n 2)"
    tail_lines="$(tr '\n' ' ' <<<"$tail_lines" | sed 's/  */ /g; s/ $//')"
    echo "$s${tail_lines:+: $tail_lines}"
}

# gk_judge CAP_KIB RSS LAZY HELD FOOTPRINT WHAT: judges one reading against
# a cap. Returns 0 when RSS is within it; otherwise sets GK_REASON to the
# reading that explains the excess and GK_DETAIL to the figures, and
# returns 1. First the pages given back lazily are taken out of RSS: what
# is left is what the process really holds (RSS less LazyFree on Linux;
# the footprint on macOS, when it is smaller). Then:
#   lazy-free       what is left is within the cap: over it only by pages
#                   given back lazily;
#   retained-below  the program said what its runtime holds (HELD, from
#                   held_kib) and what is left is more than the cap beyond
#                   that: something in the process other than the runtime's
#                   own count holds it;
#   rss             otherwise: the program itself holds it.
# Pages given back lazily are never counted as retained below: the runtime
# gave them back and the kernel has not taken them yet. A reading of 478
# MiB resident, 139 MiB of it LazyFree, 345 MiB held leaves 339 MiB, less
# than the runtime holds: rss, not retained-below.
# HELD and FOOTPRINT are empty when the checkpoint line had no such figure.
gk_judge() {
    local cap="$1" rss="$2" lazy="${3:-0}" held="$4" footprint="$5" what="$6" over kept
    ((rss <= cap)) && return 0
    over="$(gk_mib "$rss") resident"
    [[ -n "$held" ]] && over="$over, the runtime holds $(gk_mib "$held")"
    over="${what:+$what: }$over, over the cap of $(gk_mib "$cap")"
    kept=$rss
    ((lazy > 0)) && kept=$((rss - lazy))
    [[ -n "$footprint" ]] && ((footprint > 0 && footprint < kept)) && kept=$footprint
    if ((lazy > 0 && rss - lazy <= cap)); then
        GK_REASON="lazy-free"
        GK_DETAIL="$over; $(gk_mib "$lazy") of it is LazyFree (given back with MADV_FREE, still counted)"
    elif [[ -n "$footprint" ]] && ((footprint > 0 && footprint <= cap)); then
        GK_REASON="lazy-free"
        GK_DETAIL="$over; the footprint is $(gk_mib "$footprint"): the rest was given back lazily, still counted"
    elif [[ -n "$held" ]] && ((kept - held > cap)); then
        GK_REASON="retained-below"
        GK_DETAIL="$over$(gk_judge_lazy_note "$lazy" "$footprint" "$kept"): $(gk_mib $((kept - held))) beyond what the runtime holds is resident under it"
    else
        GK_REASON=rss
        GK_DETAIL="$over$(gk_judge_lazy_note "$lazy" "$footprint" "$kept")"
    fi
    return 1
}

# The reasons gk_judge gives: a reading over the cap, whatever explains it.
GK_CAP_REASONS="rss retained-below lazy-free"

# gk_judge_lazy_note LAZY FOOTPRINT KEPT: for a red reading that had pages
# given back lazily, what was taken out before it was judged; else nothing.
gk_judge_lazy_note() {
    if (($1 > 0)); then
        echo "; $(gk_mib "$1") LazyFree taken out, $(gk_mib "$3") left"
    elif [[ -n "$2" ]] && (($2 > 0 && $2 == $3)); then
        echo "; judged by the footprint, $(gk_mib "$2")"
    fi
}

# gk_growth CAP_KIB NAME=KIB...: judged CPython's way (its refleak hunter):
# the rounds grew only if every round after the first grew by more than
# the bound, so one noisy round is not a leak and a steady climb is. Fails
# with GK_REASON=growth when they did.
gk_growth() {
    local bound="$1" prev="" r grew=0 rounds=0 figures=""
    shift
    for r in "$@"; do
        figures="$figures ${r%%=*}=$(gk_mib "${r#*=}")"
        rounds=$((rounds + 1))
        if [[ -n "$prev" ]]; then
            ((${r#*=} - prev > bound)) && grew=$((grew + 1))
        fi
        prev="${r#*=}"
    done
    if ((rounds > 1 && grew == rounds - 1)); then
        GK_REASON=growth
        GK_DETAIL="every round after the first grew by more than $(gk_mib "$bound"):$figures"
        return 1
    fi
    return 0
}

# ------------------------------------------------------------ the files

# gk_table_row FILE KEY: the first row of a tab-separated FILE (comments and
# blank lines skipped) whose first field is KEY, or nothing.
gk_table_row() {
    awk -F'\t' -v k="$2" '!/^#/ && NF && $1 == k { print; exit }' "$1"
}

# gk_expand WORD: WORD with ${NAME} and $NAME replaced by the environment's
# values; fails, naming it, on a variable that is not set. No other shell
# expansion happens: a builds file is data, not a script.
gk_expand() {
    local w="$1" out="" name
    # In a variable: bash 3.2 and bash 5 read a regular expression written
    # in [[ ]] differently, and the same one from a variable alike.
    local re='^([^$]*)[$]([{]([A-Za-z_][A-Za-z0-9_]*)[}]|([A-Za-z_][A-Za-z0-9_]*))(.*)$'
    while [[ "$w" =~ $re ]]; do
        name="${BASH_REMATCH[3]}${BASH_REMATCH[4]}"
        out="$out${BASH_REMATCH[1]}"
        w="${BASH_REMATCH[5]}"
        if [[ -z "${!name+set}" ]]; then
            echo "gbgate: \$$name is not set (the builds file uses it)" >&2
            return 1
        fi
        out="$out${!name}"
    done
    echo "$out$w"
}

# gk_build_command BUILDS BUILD ROLE: sets GK_COMMAND to the command that
# runs ROLE's program in BUILD: the cell of BUILD's row (or of the "*" row,
# with {build} replaced by the build's name) under the column ROLE, split on
# spaces, each word expanded (gk_expand; a word starting with ./ or ../ is
# relative to the builds file's folder). Fails with a message when the builds file has
# no such build or role, or the cell is "-" (no such program in that build).
gk_build_command() {
    local builds="$1" build="$2" role="$3" cell w
    GK_COMMAND=()
    cell="$(awk -F'\t' -v b="$build" -v r="$role" '
        /^#/ || !NF { next }
        $1 == "build" { for (i = 2; i <= NF; i++) col[$i] = i; next }
        # exit still runs END: the one answer is printed there.
        !(r in col) { cell = "?role"; found = 1; exit }
        $1 == b { cell = $col[r]; found = 1; exit }
        $1 == "*" && star == "" { star = $col[r] }
        END { print found ? cell : star != "" ? "*" star : "?build" }' "$builds")"
    case "$cell" in
        "?role" | "") echo "gbgate: $builds has no column \"$role\" (its header row starts with \"build\")" >&2; return 1 ;;
        "?build") echo "gbgate: $builds has no row for the build \"$build\" and no \"*\" row" >&2; return 1 ;;
        "-" | "*-") echo "gbgate: $builds: the build \"$build\" has no \"$role\" program (-)" >&2; return 1 ;;
    esac
    if [[ "$cell" == "*"* ]]; then
        cell="${cell#\*}"
        cell="${cell//\{build\}/$build}"
    fi
    local words dir
    dir="$(cd "$(dirname "$builds")" && pwd)"
    read -r -a words <<<"$cell"
    for w in "${words[@]}"; do
        w="$(gk_expand "$w")" || return 1
        # ./ and ../ are the builds file's folder, wherever the gate runs
        # from; in an environment assignment too (LD_PRELOAD=./lib.so).
        case "$w" in
            ./* | ../*) w="$dir/$w" ;;
            [A-Za-z_]*=./* | [A-Za-z_]*=../*) w="${w%%=*}=$dir/${w#*=}" ;;
        esac
        GK_COMMAND+=("$w")
    done
}

# gk_option OPTIONS NAME: the value of "--NAME VALUE" in a gate's options
# (the options column of a gates file), or nothing.
gk_option() {
    local words i
    read -r -a words <<<"$1"
    for ((i = 0; i < ${#words[@]}; i++)); do
        if [[ "${words[i]}" == "--$2" ]]; then
            echo "${words[i + 1]:-}"
            return 0
        fi
    done
    return 0
}

# ------------------------------------------------- the checkpoint helper

# gbgate checkpoint NAME [KEY=VALUE ...]: the checkpoint of gbgate.h as a
# command, for a program in any language that can run one and wait for it
# (Python's subprocess.run, Node's execFileSync, Go's exec.Command().Run,
# Ruby's system, Lua's os.execute, a shell script). Under GBGATE=stop it
# prints the line on its stdout (the program's, inherited, so the line
# lands where the runner reads), stops the process the runner started
# (GBGATE_PID) and returns only once that process is stopped: the caller,
# blocked waiting for the helper, cannot run on past its line whatever
# threads its runtime has. Under GBGATE=print it only prints; otherwise it
# does nothing.
#
# The runner also exports GBGATE_STOPS_FILE, a file holding the number of
# stops it has read, written before it continues the program. The helper
# reads it before the stop and takes a higher number as proof that the
# stop happened: a runner that reads and continues the program between two
# of the helper's polls would otherwise leave the helper waiting for a
# stop that has come and gone, and the caller waiting for the helper.
gk_helper() {
    local mode="${GBGATE:-}" name="${1:-}" w rest="" pid settle
    [[ "$mode" == stop || "$mode" == print ]] || return 0
    gk_helper_valid_name "$name" ||
        gk_helper_die "the checkpoint's name \"$name\" is not a word of letters, digits and - _ . (usage: gbgate checkpoint NAME [KEY=VALUE ...])"
    shift
    for w in "$@"; do
        gk_helper_valid_pair "$w" ||
            gk_helper_die "\"$w\" (checkpoint $name) is not KEY=VALUE: the key a letter or _ then letters, digits and _ (at most 64), the value printable ASCII without spaces (at most 256)"
        rest="$rest $w"
    done
    if [[ "$mode" == print ]]; then
        printf 'checkpoint %s%s\n' "$name" "$rest"
        return 0
    fi
    pid="${GBGATE_PID:-}"
    [[ -n "$pid" ]] ||
        gk_helper_die "GBGATE=stop, but GBGATE_PID is not set: the helper stops the process the runner started, whose pid the runner exports as GBGATE_PID; run the program under gbgate run (or gate.bash), which sets both"
    [[ "$pid" == [1-9]* && "$pid" != *[!0-9]* ]] || gk_helper_die "GBGATE_PID is \"$pid\", not a process id"
    settle="$(gk_helper_settle_s)" || exit 2
    if ! gk_helper_caller_is "$pid"; then
        # The line goes out unread, so the runner's pairing calls the run
        # red for protocol whatever the program does next; the message
        # says why.
        printf 'checkpoint %s%s\n' "$name" "$rest"
        echo "gbgate checkpoint: error: $GK_HELPER_WHY" >&2
        exit 2
    fi
    gk_helper_stop "$pid" "checkpoint $name$rest" || exit 1
    # Settling: the runner has read the stop and continues the program;
    # the caller stays blocked while its runtime's other threads run, then
    # the helper stops it again for the settled reading.
    if [[ -n "$settle" ]]; then
        gk_helper_wait_running "$pid" || exit 1
        gk_helper_sleep "$settle"
        gk_helper_stop "$pid" "settled $name" || exit 1
    fi
    return 0
}

# gk_stops_read: tells the checkpoint helper that the runner has read
# stop GK_STOPS (gk_helper); one write, no process started.
gk_stops_read() {
    [[ -z "${GK_STOPS_FILE:-}" ]] || echo "$GK_STOPS" >"$GK_STOPS_FILE"
}

gk_helper_die() {
    echo "gbgate checkpoint: error: $*" >&2
    exit 2
}

# The grammar the runners read: a name and keys are words of letters,
# digits and - _ .; a value has no white space (it may be empty). The
# expressions are in variables, which bash 3.2 and 5 read alike.
gk_helper_valid_name() {
    local re='^[A-Za-z0-9._-]+$'
    [[ "$1" =~ $re && ${#1} -le 64 ]]
}

gk_helper_valid_pair() {
    local re='^[A-Za-z_][A-Za-z0-9_]*=[!-~]*$' key="${1%%=*}"
    local LC_ALL=C
    [[ "$1" =~ $re && ${#key} -le 64 && $((${#1} - ${#key} - 1)) -le 256 ]]
}

# gk_helper_settle_s: GBGATE_SETTLE_S as the runner exported it (seconds,
# possibly with a fraction), or nothing when unset or 0. Anything else is
# an error: a settle the helper silently skipped would be a missing stop.
gk_helper_settle_s() {
    local s="${GBGATE_SETTLE_S:-}" re='^[0-9]+([.][0-9]+)?$' zero='^0+([.]0+)?$'
    [[ -z "$s" ]] && return 0
    if [[ ! "$s" =~ $re ]]; then
        echo "gbgate checkpoint: error: GBGATE_SETTLE_S is \"$s\", not a number of seconds" >&2
        return 1
    fi
    [[ "$s" =~ $zero ]] && return 0
    echo "$s"
}

# gk_helper_errors: the checkpoint helper's first error in the program's
# stderr, as "; the helper said: ...", for a red verdict's detail: the
# runner sees only the pairing the error broke.
gk_helper_errors() {
    local e
    e="$(grep -m 1 '^gbgate checkpoint: error: ' "$GK_ERR" 2>/dev/null || true)"
    [[ -z "$e" ]] || echo "; the helper said: ${e#gbgate checkpoint: error: }"
}

# gk_helper_caller_is PID: the helper was run by PID itself, or by a shell
# PID started for it (Lua's os.execute, a system() or shell=True: sh -c).
# Otherwise the process the runner started and reads is a wrapper of the
# program that called the helper (sh -c 'prog; true'): stopping and reading
# the wrapper would judge the wrong process, so GK_HELPER_WHY says so and
# it fails.
gk_helper_caller_is() {
    local pid="$1" parent="$PPID" pp="" comm=""
    ((parent == pid)) && return 0
    gk_helper_parent_of "$parent"
    pp="$GK_HELPER_PARENT" comm="$GK_HELPER_COMM"
    # A shell running one command line (-c), not a script: sh checkpoint.sh
    # run by a wrapper is a program of its own.
    if [[ "$pp" == "$pid" ]] && gk_helper_is_sh_c "$parent"; then
        case "$comm" in
            sh | bash | dash | ash | ksh | mksh | zsh | busybox) return 0 ;;
        esac
    fi
    gk_helper_parent_of "$pid"
    GK_HELPER_WHY="the helper was run by pid $parent (${comm:-?}), not by the process the runner started, GBGATE_PID $pid (${GK_HELPER_COMM:-?}), nor by a shell that process started: a wrapper started the program without exec; start the program itself, or end the wrapper with exec (sh -c 'exec prog')"
    return 1
}

# gk_helper_is_sh_c PID: PID's second argument is an option with c in it
# (sh -c, sh -ec).
gk_helper_is_sh_c() {
    local a0="" a1=""
    if [[ -r "/proc/$1/cmdline" ]]; then
        { IFS= read -r -d '' a0 && IFS= read -r -d '' a1; } <"/proc/$1/cmdline" 2>/dev/null || true
    else
        read -r a0 a1 _ <<<"$(ps -o args= -p "$1" 2>/dev/null)" || true
    fi
    [[ "$a1" == -*c* ]]
}

# gk_helper_parent_of PID: GK_HELPER_PARENT and GK_HELPER_COMM are PID's
# parent and the name of its program (empty when it is gone).
gk_helper_parent_of() {
    local line="" rest
    GK_HELPER_PARENT="" GK_HELPER_COMM=""
    if [[ -d /proc/self ]]; then
        read -r line <"/proc/$1/stat" 2>/dev/null || return 0
        rest="${line##*) }"
        GK_HELPER_COMM="${line#*(}"
        GK_HELPER_COMM="${GK_HELPER_COMM%) *}"
        rest="${rest#* }"
        GK_HELPER_PARENT="${rest%% *}"
    else
        read -r GK_HELPER_PARENT GK_HELPER_COMM <<<"$(ps -o ppid= -o comm= -p "$1" 2>/dev/null)" || true
        GK_HELPER_COMM="${GK_HELPER_COMM##*/}"
    fi
}

# gk_helper_stops_read: GK_HELPER_READ is the runner's count of stops
# read, 0 without one. A variable, not output: the helper calls it at every
# poll, and a command substitution would start a process each time.
gk_helper_stops_read() {
    GK_HELPER_READ=""
    if [[ -n "${GBGATE_STOPS_FILE:-}" && -r "$GBGATE_STOPS_FILE" ]]; then
        read -r GK_HELPER_READ <"$GBGATE_STOPS_FILE" || true
    fi
    [[ -n "$GK_HELPER_READ" && "$GK_HELPER_READ" != *[!0-9]* ]] || GK_HELPER_READ=0
}

# gk_helper_stop PID LINE: prints LINE, stops PID and waits until the stop
# has happened: PID stopped, or the runner's count of stops past the one
# before the line. Fails when PID is gone.
gk_helper_stop() {
    local pid="$1" before
    gk_helper_stops_read
    before=$GK_HELPER_READ
    # Through a pipe (PHP's system(), a popen()), the line would reach the
    # capture only when the parent copies it, after the stop: written to
    # the capture file itself, where the runner reads.
    if [[ -p /dev/stdout && -n "${GBGATE_OUT:-}" && -f "$GBGATE_OUT" && -w "$GBGATE_OUT" ]]; then
        printf '%s\n' "$2" >>"$GBGATE_OUT"
    else
        printf '%s\n' "$2"
    fi
    kill -STOP "$pid" 2>/dev/null || {
        echo "gbgate checkpoint: error: cannot stop GBGATE_PID $pid (no such process, or not ours)" >&2
        return 1
    }
    gk_helper_poll_init
    while :; do
        gk_helper_state "$pid"
        case "$GK_HELPER_STATE" in
            T* | t*) return 0 ;;
            "" | Z* | X*)
                echo "gbgate checkpoint: error: the process $pid ended before it stopped" >&2
                return 1
                ;;
        esac
        gk_helper_stops_read
        ((GK_HELPER_READ > before)) && return 0
        gk_helper_pause
    done
}

# gk_helper_wait_running PID: waits until the runner has continued PID.
gk_helper_wait_running() {
    gk_helper_poll_init
    while :; do
        gk_helper_state "$1"
        case "$GK_HELPER_STATE" in
            T* | t*) gk_helper_pause ;;
            "" | Z* | X*) return 1 ;;
            *) return 0 ;;
        esac
    done
}

# gk_helper_state PID: GK_HELPER_STATE is the process's state letter(s),
# empty when it is gone. On Linux from /proc/PID/stat with bash's own read
# (the state is the word after the command's closing parenthesis), so a
# poll starts no process; elsewhere from ps.
gk_helper_state() {
    local line=""
    GK_HELPER_STATE=""
    if [[ -d /proc/self ]]; then
        [[ -r "/proc/$1/stat" ]] || return 0
        read -r line <"/proc/$1/stat" 2>/dev/null || return 0
        line="${line##*) }"
        GK_HELPER_STATE="${line%% *}"
    else
        GK_HELPER_STATE="$(ps -o stat= -p "$1" 2>/dev/null | tr -d ' ')"
    fi
}

# The helper polls without starting a process per poll where bash can
# wait a fraction of a second on its own (bash 4 and later): a read with a
# time limit on a pipe that never has data. Elsewhere, sleep.
gk_helper_poll_init() {
    [[ -n "${GK_HELPER_FD:-}" ]] && return 0
    GK_HELPER_FD=none
    if ((BASH_VERSINFO[0] >= 4)) && [[ -d /proc/self/fd ]]; then
        # The pipe opened for reading and writing never reaches its end.
        exec 9<> <(:) && GK_HELPER_FD=9
    fi
}

gk_helper_pause() {
    if [[ "$GK_HELPER_FD" == 9 ]]; then
        read -r -t 0.002 -u 9 _ || true
    else
        sleep 0.01
    fi
}

# gk_helper_sleep SECONDS: the settle, with the caller blocked.
gk_helper_sleep() {
    sleep "$1"
}

# ------------------------------------------------------------ settling

# A runtime may give memory back on threads of its own, after the call that
# freed it returns (V8 unmaps freed pages on a background thread, Go's
# scavenger returns the heap's free pages over time); a checkpoint's stop
# freezes those threads too, so the reading right after the free can be
# high for a runtime that gives everything back a second later. Under
# gbgate run --settle SECONDS the runner exports GBGATE_SETTLE_S, and every
# checkpoint, once continued, keeps its calling thread idle that long while
# the other threads run, prints "settled <name> [key=value ...]" and stops
# again. The runner reads both stops: the settled reading is the one judged,
# the one right after is reported beside it, with how long the program took
# to get under the cap, sampled while it settled.

# gk_stop_label LINE: a stop's name in the series: the checkpoint's name,
# "<name> settled" for its settled stop.
gk_stop_label() {
    local words
    read -r -a words <<<"$1"
    if [[ "${words[0]:-}" == settled ]]; then
        echo "${words[1]:-} settled"
    else
        echo "${words[1]:-}"
    fi
}

# gk_settle_pairs SETTLE PENDING LINE: checks that a stop is the one the
# protocol allows next. SETTLE is the settle in seconds (empty without
# --settle), PENDING the checkpoint read right after and not yet settled
# (empty when none). Fails with GK_DETAIL when the stop is out of turn.
gk_settle_pairs() {
    local settle="$1" pending="$2" kind name words
    read -r -a words <<<"$3"
    kind="${words[0]:-}" name="${words[1]:-}"
    if [[ -z "$settle" ]]; then
        [[ "$kind" != settled ]] && return 0
        GK_DETAIL="it stopped at \"settled $name\", and the run has no --settle: GBGATE_SETTLE_S is the runner's to set"
        return 1
    fi
    if [[ -z "$pending" ]]; then
        [[ "$kind" == checkpoint ]] && return 0
        GK_DETAIL="it stopped at \"settled $name\" with no checkpoint before it to settle"
        return 1
    fi
    [[ "$kind" == settled && "$name" == "$pending" ]] && return 0
    GK_DETAIL="checkpoint $pending did not settle: the next stop was \"$kind $name\", not \"settled $pending\" (with --settle, each checkpoint stops again after GBGATE_SETTLE_S seconds; does the program's checkpoint read it?)"
    return 1
}

# gk_settle_watch CAP_KIB RSS: the program, read right after its checkpoint
# at RSS, is about to settle: from now on the poll loop notes when it first
# reads at or under CAP_KIB (none: not watched).
gk_settle_watch() {
    gk_tick
    GK_SETTLE_T0_US=$GK_ELAPSED_US
    GK_SETTLE_CAP_KIB="$1"
    GK_SETTLE_UNDER_US=""
    GK_SETTLE_ON=1
    if [[ -n "$1" ]] && (($2 <= $1)); then
        GK_SETTLE_UNDER_US=0
    fi
}

# gk_settle_sample RSS: one reading of the guard's, while the program runs;
# the first at or under the cap, while it settles, is noted.
gk_settle_sample() {
    [[ -n "${GK_SETTLE_ON:-}" && -z "${GK_SETTLE_UNDER_US:-}" && -n "${GK_SETTLE_CAP_KIB:-}" ]] || return 0
    if (($1 > 0 && $1 <= GK_SETTLE_CAP_KIB)); then
        gk_tick
        GK_SETTLE_UNDER_US=$((GK_ELAPSED_US - GK_SETTLE_T0_US))
    fi
}

# gk_settle_done RSS: the settled stop, read at RSS. Sets GK_SETTLE_AFTER_US
# (how long it settled, from the continue to the reading) and completes
# GK_SETTLE_UNDER_US with the settled reading itself.
gk_settle_done() {
    gk_tick
    GK_SETTLE_AFTER_US=$((GK_ELAPSED_US - GK_SETTLE_T0_US))
    GK_SETTLE_ON=""
    if [[ -z "$GK_SETTLE_UNDER_US" && -n "$GK_SETTLE_CAP_KIB" ]] && (($1 <= GK_SETTLE_CAP_KIB)); then
        GK_SETTLE_UNDER_US=$GK_SETTLE_AFTER_US
    fi
}

# gk_settle_line CHECKPOINT_LINE SETTLED_LINE RIGHT_RSS RIGHT_LAZY CAP_KIB:
# the checkpoint's line as the runner reads it once settled: its name, the
# reading right after it (right_after_rss_kib, right_after_lazyfree_kib),
# how long it settled (settled_after_s) and, with a cap, when it first
# read at or under it (under_cap_after_s; never), then the program's
# figures: the checkpoint's, each replaced by the settled stop's figure of
# the same key, and the settled stop's others after them.
gk_settle_line() {
    local -a first second
    local w k out i found
    read -r -a first <<<"$1"
    read -r -a second <<<"$2"
    out="checkpoint ${first[1]:-} right_after_rss_kib=$3 right_after_lazyfree_kib=$4"
    out="$out settled_after_s=$(gk_settle_seconds "$GK_SETTLE_AFTER_US")"
    if [[ -n "$5" ]]; then
        if [[ -n "$GK_SETTLE_UNDER_US" ]]; then
            out="$out under_cap_after_s=$(gk_settle_seconds "$GK_SETTLE_UNDER_US")"
        else
            out="$out under_cap_after_s=never"
        fi
    fi
    for ((i = 2; i < ${#first[@]}; i++)); do
        w="${first[i]}" k="${first[i]%%=*}"
        for found in "${second[@]:2}"; do
            if [[ "${found%%=*}" == "$k" ]]; then
                w="$found"
                break
            fi
        done
        out="$out $w"
    done
    for ((i = 2; i < ${#second[@]}; i++)); do
        w="${second[i]}" k="${second[i]%%=*}"
        [[ " ${first[*]:2} " == *" $k="* ]] || out="$out $w"
    done
    echo "$out"
}

# gk_settle_seconds US: "1.234".
gk_settle_seconds() {
    printf '%d.%03d' $(($1 / 1000000)) $(($1 / 1000 % 1000))
}
