<?php
// checkpoint.php -- the kit's protocol from PHP: system() runs the helper
// (gbgate checkpoint, on PATH) through sh -c and waits for it; the helper
// stops this process (its shell's parent) and returns once it is stopped.
// system() reads the helper's stdout through a pipe and copies it out only
// once the helper has returned, after the stop: the helper, seeing the
// pipe, writes its line to the run's capture file (GBGATE_OUT) instead.
// Gate it: gbgate run --cap 32MiB --at freed -- php checkpoint.php
function checkpoint(string $name, array $figures = []): void
{
    $words = ['gbgate', 'checkpoint', $name];
    foreach ($figures as $k => $v) {
        $words[] = "$k=$v";
    }
    flush(); // what this program printed goes out before the line
    system(implode(' ', array_map('escapeshellarg', $words)), $rc);
    if ($rc !== 0) {
        fwrite(STDERR, "checkpoint: gbgate checkpoint exited $rc\n");
        exit(1);
    }
}

$data = str_repeat('x', 64 << 20); // 64 MiB, every page written
checkpoint('held', ['bytes' => strlen($data)]);
// A string over 2 MiB is a mapping of its own, unmapped when it is freed;
// small values stay in the Zend MM's chunks until gc_mem_caches().
$data = null;
checkpoint('freed');
