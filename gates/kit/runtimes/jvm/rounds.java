// rounds.java -- the JVM under the kit: does memory the program lets go
// leave the process?
//
// Three rounds: each makes about FILL_MIB of Java objects (small objects,
// each with an int array of 4 to 11 elements, in arrays of CHUNK), lets
// all of them go, collects with System.gc() and stops at a checkpoint,
// round1 ... round3. The JVM runs it from its source (java rounds.java),
// compiling it first in the same process. Whether the heap then shrinks,
// and when, is the collector's and the heap sizes' choice, the builds
// file's, not this file's: G1 shrinks its heap at the end of the full
// collection and gives the pages back on a background thread after
// System.gc() has returned, so the gate reads the process again once it
// has settled (gbgate run --settle; README.md).
//
// Checkpoint figures (java.lang.management, in KiB):
//   held_kib              the heap's committed size plus the committed size
//                         of the JVM's other pools (metaspace, code cache):
//                         what the JVM holds from the OS by its own count,
//                         used or not, what the kit judges retained-below by;
//   heap_committed_kib    the heap's committed size alone;
//   heap_used_kib         the heap's objects, alive or not yet collected.
//
// Argument "keep" (the gates file's failsafe): one round, never let go.
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

class Rounds {
    // A round: far above any cap, small enough that the matrix takes seconds.
    static final long FILL_MIB = 256;
    // Objects an array: an Object[1024] is 4 KiB, a small object itself.
    static final int CHUNK = 1024;

    // A small object: 12 bytes of header and three fields, 24 bytes.
    record Item(int i, int round, int[] a) {}

    // checkpoint runs the kit's helper (gbgate checkpoint, on PATH) with
    // this process's stdout (inheritIO), where the runner reads, and
    // waits: this thread is blocked in waitFor until the helper has printed
    // the line and stopped the process, every thread of it.
    static void checkpoint(String name) throws Exception {
        MemoryMXBean m = ManagementFactory.getMemoryMXBean();
        long heap = m.getHeapMemoryUsage().getCommitted();
        long other = m.getNonHeapMemoryUsage().getCommitted();
        System.out.flush();
        Process p = new ProcessBuilder("gbgate", "checkpoint", name,
                "held_kib=" + (heap + other) / 1024,
                "heap_committed_kib=" + heap / 1024,
                "heap_used_kib=" + m.getHeapMemoryUsage().getUsed() / 1024)
                .inheritIO().start();
        if (p.waitFor() != 0) {
            System.err.println("rounds.java: the checkpoint failed");
            System.exit(2);
        }
    }

    // fill: each object counted at HotSpot's sizes (compressed pointers):
    // the object 24 bytes, its array 16 and 4 an element, 8-byte aligned,
    // and its slot in the chunk 4.
    static List<Object[]> fill(int round) {
        List<Object[]> out = new ArrayList<>();
        Object[] chunk = new Object[CHUNK];
        long goal = FILL_MIB << 20;
        int k = 0;
        for (long n = 0, i = 0; n < goal; i++) {
            int[] a = new int[4 + (int) (i % 8)];
            Arrays.fill(a, round);
            chunk[k++] = new Item((int) i, round, a);
            if (k == CHUNK) {
                out.add(chunk);
                chunk = new Object[CHUNK];
                k = 0;
            }
            n += 24 + ((16 + 4L * a.length + 7) & ~7L) + 4;
        }
        out.add(chunk);
        return out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 1 || (args.length == 1 && !args[0].equals("keep"))) {
            System.err.println("usage: rounds.java [keep]");
            System.exit(2);
        }
        boolean keep = args.length == 1;
        List<Object> kept = new ArrayList<>();
        for (int r = 1; r <= (keep ? 1 : 3); r++) {
            List<Object[]> objs = fill(r);
            if (keep) kept.add(objs);
            objs = null;
            System.gc();
            checkpoint("round" + r);
        }
    }
}
