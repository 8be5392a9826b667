<?php
// rounds.php -- PHP under the kit: does memory the program lets go leave
// the process?
//
// Three rounds: each makes about FILL_MIB of PHP's values (an array of
// three values, one of them a new string, in arrays of CHUNK), lets all of
// them go, collects with gc_collect_cycles() and, unless the argument says
// otherwise, gc_mem_caches(), and stops at a checkpoint, round1 ... round3.
// PHP frees a value when its last reference goes, into its own allocator,
// the Zend memory manager, which takes memory from the OS in chunks of
// 2 MiB and serves small values from runs of pages in them. A run whose
// values are all freed stays in its chunk, on the allocator's free lists,
// until gc_mem_caches() (the Zend MM's own collection) frees the runs and
// gives the emptied chunks back (README.md).
//
// Checkpoint figures: held_kib, memory_get_usage(true): the Zend MM's real
// size, the chunks it holds from the OS, used or not, what the kit judges
// retained-below by; used_kib, memory_get_usage(): its live values.
//
// Arguments: "no-mem-caches" (the builds file's poison): the same rounds
// without gc_mem_caches(); "keep" (the gates file's failsafe): one round,
// never let go.

// A round, counted by the Zend MM: far above any cap, small enough that
// the matrix takes seconds.
const FILL_MIB = 256;
// Values an array: its elements (16 bytes a slot) are a block of 16 KiB,
// pages in a chunk like the values themselves, not a mapping of its own
// (the Zend MM maps each block over 2 MiB on its own).
const CHUNK = 1024;

// checkpoint runs the kit's helper (gbgate checkpoint, on PATH) through
// system(), which runs it with sh -c and waits: the helper stops this
// process (its shell's parent) and returns once it is stopped. system()
// reads the helper's stdout through a pipe; the helper, seeing the pipe,
// writes its line to the run's capture file (GBGATE_OUT) instead.
function checkpoint(string $name): void
{
    $line = sprintf('gbgate checkpoint %s held_kib=%d used_kib=%d', $name,
        intdiv(memory_get_usage(true), 1024), intdiv(memory_get_usage(), 1024));
    system($line, $rc);
    if ($rc !== 0) {
        fwrite(STDERR, "rounds.php: the checkpoint failed\n");
        exit(2);
    }
}

// fill: a value of three elements is an array of 56 bytes and its packed
// elements (8 slots, 136 bytes), the string about 32; with the outer
// arrays' slots about 270 bytes a value, a million of them a round.
function fill(int $round): array
{
    $out = [];
    $base = memory_get_usage();
    $goal = FILL_MIB << 20;
    for ($i = 0; memory_get_usage() - $base < $goal;) {
        $chunk = [];
        for ($k = 0; $k < CHUNK; $k++, $i++) {
            $chunk[] = [$i, $round, "s$i"];
        }
        $out[] = $chunk;
    }
    return $out;
}

$args = array_slice($argv, 1);
if (array_diff($args, ['keep', 'no-mem-caches']) !== []) {
    fwrite(STDERR, "usage: rounds.php [no-mem-caches] [keep]\n");
    exit(2);
}
$keep = in_array('keep', $args, true);
$caches = !in_array('no-mem-caches', $args, true);
$kept = [];
for ($r = 1; $r <= ($keep ? 1 : 3); $r++) {
    $objs = fill($r);
    if ($keep) {
        $kept[] = $objs;
    }
    $objs = null;
    gc_collect_cycles();
    if ($caches) {
        gc_mem_caches();
    }
    checkpoint("round$r");
}
