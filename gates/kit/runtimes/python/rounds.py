"""rounds.py -- CPython under the kit: does memory the program lets go
leave the process?

Three rounds: each makes about FILL_MIB of small objects (bytes of 16 to
480 bytes, the sizes pymalloc serves, every byte written), lets all of them
go, collects with gc.collect() and stops at a checkpoint, round1 ... round3.
The poison is not in this file: it is the PYTHONMALLOC setting the builds
file runs it with (README.md).

Checkpoint figures, in KiB:
  held_kib      what the interpreter still has allocated in its two
                allocators: pymalloc's bytes in allocated blocks (from
                sys._debugmallocstats) plus glibc malloc's bytes in use
                (mallinfo2: uordblks + hblkhd), what the kit judges
                retained-below by;
  pymalloc_kib  the first of the two;
  malloc_kib    the second;
  os_kib        what glibc malloc has from the system (arena + hblkhd);
                pymalloc's arenas are mappings of their own, not in it.

Argument "keep" (the gates file's failsafe): one round, never let go.
"""
import ctypes
import gc
import os
import subprocess
import sys
import tempfile

# A round: far above any cap, small enough that the matrix takes seconds.
FILL_MIB = 256

# Objects a list: its array of pointers, 8 KiB, is a block glibc's heap
# takes back whole (over tcache's largest, 1032 bytes; under the mmap
# threshold, 128 KiB, so it never moves that threshold).
CHUNK = 1024


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (glibc 2.33 and later)."""
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                 "fsmblks", "uordblks", "fordblks", "keepcost")]


LIBC = ctypes.CDLL(None)
LIBC.mallinfo2.restype = MallInfo2


def pymalloc_bytes():
    """pymalloc's bytes in allocated blocks. sys._debugmallocstats is the
    only place CPython says it, and it writes to the C stderr, so fd 2 goes
    to a file while it runs. It says nothing when pymalloc is off."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode()
    for line in text.splitlines():
        if line.startswith("# bytes in allocated blocks"):
            return int(line.split("=")[1].replace(",", ""))
    return 0


def checkpoint(name):
    """Runs the kit's helper (gbgate checkpoint, on PATH) and waits: it
    prints the line on this process's stdout and stops the process."""
    mi = LIBC.mallinfo2()
    pym = pymalloc_bytes()
    mal = mi.uordblks + mi.hblkhd
    sys.stdout.flush()
    subprocess.run(["gbgate", "checkpoint", name,
                    "held_kib=%d" % ((pym + mal) // 1024),
                    "pymalloc_kib=%d" % (pym // 1024),
                    "malloc_kib=%d" % (mal // 1024),
                    "os_kib=%d" % ((mi.arena + mi.hblkhd) // 1024)], check=True)


def fill(rnd):
    """About FILL_MIB of bytes objects, sizes spread over 16 to 480 bytes
    (a step prime to the span, so every size comes up), counted with their
    33-byte header. They are kept in lists of CHUNK, not in one list: one
    list's array of a million pointers would be a block of megabytes in
    glibc's heap, realloc'd as it grows, and what glibc keeps of that is
    not what this gate is about (measured: 7.5 MiB more resident every
    round with a single list)."""
    out = []
    chunk = []
    n = 0
    i = 0
    goal = FILL_MIB << 20
    fill_byte = bytes([rnd])
    while n < goal:
        size = 16 + (i * 97) % 465
        chunk.append(fill_byte * size)
        if len(chunk) == CHUNK:
            out.append(chunk)
            chunk = []
        n += size + 33
        i += 1
    out.append(chunk)
    return out


def main():
    if sys.argv[1:] not in ([], ["keep"]):
        sys.exit("usage: rounds.py [keep]")
    keep = sys.argv[1:] == ["keep"]
    kept = []
    for rnd in range(1, 2 if keep else 4):
        objs = fill(rnd)
        if keep:
            kept.append(objs)
        del objs
        gc.collect()
        checkpoint("round%d" % rnd)


main()
