# rounds.tcl -- Tcl under the kit: does memory the program lets go leave
# the process?
#
# Three rounds: each makes about FILL_MIB of Tcl strings (values of 16 to
# 112 KiB, every byte written, in one list), lets all of them go and stops
# at a checkpoint, round1 ... round3. Tcl frees a value when its last
# reference goes (reference counting: there is no collection to call).
# Why strings of 16 KiB and more, not small ones: the threaded Tcl Debian
# ships allocates every Tcl_Obj, and every block of 16 KiB or less, from
# its own allocator (zippy, tclThreadAlloc.c), which keeps what it freed
# on its free lists for the life of the process, whatever the malloc (no
# setting turns it off: it is chosen when Tcl is built); measured, two
# million strings of about 35 bytes, dropped, leave 262 MiB resident with
# jemalloc at decay 0 (218 to 234 with glibc's). What Tcl gives back
# to the C library's malloc are the blocks over that bound; which malloc
# that is, and how it gives memory back, is the builds file's choice, not
# this file's (README.md).
#
# Checkpoint figure: held_kib, the program's own count. Tcl counts what it
# allocated only when built with TCL_MEM_DEBUG (the memory command, absent
# from this tclsh), and it has no FFI to ask glibc (mallinfo2). So held_kib
# is the resident size the interpreter had at its start, before any round
# (VmRSS of /proc/self/status), plus the bytes of the data the program
# still references, at Tcl's sizes: nothing once a round is dropped. That
# is live data, too small by the kit's rule (README.md): it leaves out
# zippy's free lists, so retained-below names those and the malloc under
# Tcl together.
#
# Argument "keep" (the gates file's failsafe): one round, never let go.

# A round, counted at Tcl's sizes: far above any cap, small enough that the
# matrix takes seconds.
set FILL_MIB 200
# A string's size beyond its bytes: its Tcl_Obj (48 bytes), its slot in the
# list (8), its terminating byte and malloc's header.
set OVERHEAD 72

# resident_kib: the process's resident size, VmRSS of /proc/self/status.
proc resident_kib {} {
    set f [open /proc/self/status]
    set status [read $f]
    close $f
    if {![regexp -line {^VmRSS:\s+(\d+) kB} $status -> kib]} {
        puts stderr "rounds.tcl: no VmRSS in /proc/self/status"
        exit 2
    }
    return $kib
}
set start_kib [resident_kib]

# checkpoint runs the kit's helper (gbgate checkpoint, on PATH) and waits
# for it: >@stdout gives it this process's stdout, where it prints the line
# (without it exec reads the helper's stdout through a pipe, and the line
# reaches the runner only because the helper then writes it to the capture
# file itself, GBGATE_OUT), and it stops this process, its parent.
proc checkpoint {name live} {
    global start_kib
    flush stdout
    set held [expr {$start_kib + $live / 1024}]
    if {[catch {exec gbgate checkpoint $name held_kib=$held >@stdout 2>@stderr} err]} {
        puts stderr "rounds.tcl: the checkpoint failed: $err"
        exit 2
    }
}

# fill: about FILL_MIB of strings, as a list; sets bytesVar to their size
# as counted.
proc fill {round bytesVar} {
    global FILL_MIB OVERHEAD
    upvar 1 $bytesVar n
    set out {}
    set n 0
    for {set i 1} {$n < $FILL_MIB << 20} {incr i} {
        set len [expr {16384 + ($i * 7919) % 98304}]
        set s [string repeat [format %06d%d $i $round] [expr {$len / 7 + 1}]]
        lappend out $s
        incr n [expr {[string length $s] + $OVERHEAD}]
    }
    return $out
}

if {$argc > 1 || ($argc == 1 && [lindex $argv 0] ne "keep")} {
    puts stderr "usage: rounds.tcl \[keep\]"
    exit 2
}
set keep [expr {$argc == 1}]
# What "keep" keeps stays until the process ends: tclsh leaves its
# variables to the kernel at exit, so the kit, reading on after a red
# checkpoint, sees no give-back.
set kept {}
set kept_bytes 0
for {set r 1} {$r <= ($keep ? 1 : 3)} {incr r} {
    set objs [fill $r bytes]
    if {$keep} {
        lappend kept $objs
        incr kept_bytes $bytes
    }
    unset objs
    checkpoint round$r $kept_bytes
}
