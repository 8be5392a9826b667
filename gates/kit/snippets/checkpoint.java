// checkpoint.java -- the kit's protocol from Java: the helper (gbgate
// checkpoint, on PATH) prints the line on this process's stdout (inheritIO;
// ProcessBuilder's default, a pipe to the JVM, makes the helper write the
// line to the run's capture file instead), stops the process, every thread
// of it, and returns once it is stopped; waitFor blocks this thread until
// then. The helper rather than a stop of its own: the JVM refuses to
// raise SIGSTOP (sun.misc.Signal). G1 gives the freed heap back on a
// background thread after System.gc() returns, so the gate reads the
// program once it has settled.
// Gate it (java runs it from its source, with a JDK):
//   gbgate run --cap 160MiB --settle 2 --at freed -- java checkpoint.java
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

class Checkpoint {
    static void checkpoint(String name, String... figures) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("gbgate", "checkpoint", name));
        cmd.addAll(List.of(figures));
        System.out.flush(); // what this program printed goes out before the line
        int rc = new ProcessBuilder(cmd).inheritIO().start().waitFor();
        if (rc != 0) {
            throw new IllegalStateException("gbgate checkpoint exited " + rc);
        }
    }

    public static void main(String[] args) throws Exception {
        byte[] data = new byte[256 << 20]; // 256 MiB, every page written
        Arrays.fill(data, (byte) 1);
        checkpoint("held", "bytes=" + data.length);
        data = null;
        System.gc(); // collect: G1 shrinks the heap and uncommits it after
        checkpoint("freed");
    }
}
