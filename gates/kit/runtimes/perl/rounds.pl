# rounds.pl -- Perl under the kit: does memory the program lets go leave
# the process?
#
# Three rounds: each makes about FILL_MIB of Perl's strings (scalars of 128
# to 1016 bytes, every byte written, in arrays of CHUNK), lets all of them
# go and stops at a checkpoint, round1 ... round3. Perl frees a scalar when
# its last reference goes (reference counting: there is no collection to
# call). It takes a string's buffer and an array's slots from the C
# library's malloc and gives them back to it at once; it takes a scalar's
# head and body from arenas of its own and keeps them, on its free lists,
# for the life of the interpreter, whatever the malloc (no setting frees
# them before its exit). So the strings are of hundreds of bytes, where the
# buffers Perl gives back outweigh the 40 bytes a scalar it keeps: measured,
# a round of 2.3 million strings of about 37 bytes leaves 94 MiB over the
# floor with jemalloc at decay 0, this round 17 MiB. Which malloc is under
# Perl, and how that gives memory back, is the builds file's choice, not
# this file's (README.md).
#
# Checkpoint figure: held_kib, the program's own count. A stock perl counts
# nothing it allocated: Devel::Peek's mstat needs perl's own malloc (this
# one has usemymalloc=n) and its DumpArenas is not in this perl, Devel::Size
# is not core, and there is no FFI in core to ask glibc (mallinfo2). So
# held_kib is the resident size the interpreter had at its start, before
# any round (VmRSS of /proc/self/status: the interpreter and this program,
# compiled), plus the bytes of the data the program still references, at
# Perl's sizes: nothing once a round is dropped. That is live data, too
# small by the kit's rule (README.md): it leaves out Perl's free arenas, so
# retained-below names those and the malloc under Perl together.
#
# Argument "keep" (the gates file's failsafe): one round, never let go.
use strict;
use warnings;

# A round, counted at Perl's sizes: far above any cap, small enough that
# the matrix takes seconds.
use constant FILL_MIB => 200;
# Strings an array: its slots, 8 KiB, are one block of malloc's, under
# glibc's mmap threshold (128 KiB), so it never moves the threshold.
use constant CHUNK => 1024;
# A string's size beyond its bytes: the scalar's head (24 bytes) and body
# (16) in Perl's arenas, its buffer's terminating byte and rounding and
# malloc's header, its slot in an array (8); measured: the resident size a
# round adds, over the bytes of its strings, per string.
use constant OVERHEAD => 72;

$| = 1; # what this program prints goes out before the helper's line

# resident_kib: the process's resident size, VmRSS of /proc/self/status.
sub resident_kib {
    open my $f, '<', '/proc/self/status' or die "rounds.pl: /proc/self/status: $!\n";
    while (<$f>) {
        return $1 if /^VmRSS:\s+(\d+) kB/;
    }
    die "rounds.pl: no VmRSS in /proc/self/status\n";
}
my $start_kib = resident_kib();

# checkpoint runs the kit's helper (gbgate checkpoint, on PATH) and waits
# for it: the helper prints the line on this process's stdout (inherited)
# and stops this process, its parent.
sub checkpoint {
    my ($name, $live) = @_;
    my $held = $start_kib + int($live / 1024);
    system('gbgate', 'checkpoint', $name, "held_kib=$held") == 0
        or die "rounds.pl: the checkpoint failed\n";
}

# fill: about FILL_MIB of strings; returns them and their size as counted.
sub fill {
    my ($round) = @_;
    my ($out, $chunk) = ([], []);
    my ($n, $i, $goal) = (0, 0, FILL_MIB << 20);
    while ($n < $goal) {
        $i++;
        push @$chunk, sprintf('%07d', $i) . chr(0x61 + $round) x (121 + ($i * 7919) % 889);
        $n += length($chunk->[-1]) + OVERHEAD;
        if (@$chunk == CHUNK) {
            push @$out, $chunk;
            $chunk = [];
        }
    }
    push @$out, $chunk;
    return ($out, $n);
}

die "usage: rounds.pl [keep]\n" if @ARGV > 1 || (@ARGV == 1 && $ARGV[0] ne 'keep');
my $keep = @ARGV == 1;
# What "keep" keeps is a package variable: perl frees the lexicals of the
# file at its exit, and the kit, reading on after a red checkpoint, would
# see that give-back as the runtime's (unsettled); a package variable
# perl leaves to the kernel, so the round stays until the process ends.
our @kept;
my $kept_bytes = 0;
for my $r (1 .. ($keep ? 1 : 3)) {
    my ($objs, $bytes) = fill($r);
    if ($keep) {
        push @kept, $objs;
        $kept_bytes += $bytes;
    }
    undef $objs;
    checkpoint("round$r", $kept_bytes);
}
