// rounds.go -- Go's runtime under the kit: does memory the program lets go
// leave the process?
//
// Three rounds: each allocates about fillMiB of the runtime's objects
// (64-byte structs linked in lists, and byte slices of 4 KiB to 2 MiB,
// every byte written so every page is resident), lets all of it go, asks
// the runtime to give it back with debug.FreeOSMemory (a full collection,
// then the scavenger returns every free page at once instead of over the
// next tens of seconds), and stops at a checkpoint, round1 ... round3.
// The poison is not in this file: it is a GODEBUG setting the builds file
// runs the same binary with (README.md).
//
// Checkpoint figures (runtime.MemStats, in KiB):
//
//	held_kib      HeapAlloc: bytes of heap objects the program still has,
//	              what the kit judges retained-below by;
//	sys_kib       Sys: all the runtime has from the OS (address space);
//	idle_kib      HeapIdle: heap spans with no object in them;
//	released_kib  HeapReleased: of those, what the runtime says it gave
//	              back to the OS (with MADV_DONTNEED or MADV_FREE alike).
//
// Argument "keep" (the gates file's failsafe): one round, never let go.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
)

// fillMiB a round: far above any cap, so what is kept cannot hide under
// it, and small enough that the matrix takes seconds.
const fillMiB = 256

type cell struct {
	next *cell
	pad  [48]byte
}

// rng is xorshift64: the same sizes on every run.
var rng uint64 = 0x9e3779b97f4a7c15

func next() uint64 {
	rng ^= rng << 13
	rng ^= rng >> 7
	rng ^= rng << 17
	return rng
}

// fill allocates half the round as cells, half as slices: the runtime's
// small size classes and its large spans both.
func fill(round int) ([]*cell, [][]byte) {
	half := fillMiB << 19
	var lists []*cell
	var head *cell
	for n := 0; n < half; n += 64 {
		c := &cell{next: head}
		c.pad[0] = byte(round)
		head = c
		if n%(1<<20) == 0 { // a list a MiB, so no list is too long to mark
			lists = append(lists, head)
			head = nil
		}
	}
	lists = append(lists, head)
	var slices [][]byte
	for n := 0; n < half; {
		e := 12 + next()%9
		size := int(1<<e + next()%(1<<e))
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(round)
		}
		slices = append(slices, b)
		n += size
	}
	return lists, slices
}

// checkpoint runs the kit's helper (gbgate checkpoint, on PATH) with this
// process's stdout, and waits: the helper prints the line and stops this
// process, all its threads, before it returns, which Go's own signals
// (process-directed) cannot promise.
func checkpoint(name string) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	cmd := exec.Command("gbgate", "checkpoint", name,
		fmt.Sprintf("held_kib=%d", m.HeapAlloc>>10),
		fmt.Sprintf("sys_kib=%d", m.Sys>>10),
		fmt.Sprintf("idle_kib=%d", m.HeapIdle>>10),
		fmt.Sprintf("released_kib=%d", m.HeapReleased>>10))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "rounds: the checkpoint failed:", err)
		os.Exit(2)
	}
}

func main() {
	rounds, keep := 3, false
	switch {
	case len(os.Args) == 2 && os.Args[1] == "keep":
		rounds, keep = 1, true
	case len(os.Args) != 1:
		fmt.Fprintln(os.Stderr, "usage: rounds [keep]")
		os.Exit(2)
	}
	var kept []interface{}
	for r := 1; r <= rounds; r++ {
		lists, slices := fill(r)
		if keep {
			kept = append(kept, lists, slices)
		}
		debug.FreeOSMemory()
		checkpoint(fmt.Sprintf("round%d", r))
	}
	runtime.KeepAlive(kept)
}
