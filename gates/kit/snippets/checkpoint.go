// checkpoint.go -- the kit's protocol from Go: the helper (gbgate
// checkpoint, on PATH) prints the line on this process's stdout (given to
// it as the file itself: left nil, it would go to /dev/null), stops the
// process and returns once it is stopped; Run waits for it, so this
// goroutine cannot run past the line. The helper rather than a
// syscall.Kill of its own: Go's signals are process-directed, and the
// goroutine may be on a thread the stop reaches last. Gate it:
//   go build -o checkpoint checkpoint.go && gbgate run --cap 24MiB --at freed -- ./checkpoint
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
)

func checkpoint(name string, figures ...string) {
	cmd := exec.Command("gbgate", append([]string{"checkpoint", name}, figures...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "checkpoint:", err)
		os.Exit(1)
	}
}

func main() {
	data := make([]byte, 64<<20) // 64 MiB, every page written
	for i := range data {
		data[i] = 1
	}
	checkpoint("held", fmt.Sprintf("bytes=%d", len(data)))
	data = nil
	debug.FreeOSMemory() // collect, and give the heap's free pages back now
	checkpoint("freed")
}
