// rounds.js -- Node.js (V8) under the kit: does memory the program lets go
// leave the process?
//
// Three rounds: each makes about FILL_MIB of V8's objects (small objects,
// each with an array of 8 to 31 numbers), lets all of them go, collects
// with global.gc() (node --expose-gc) and stops at a checkpoint, round1 ...
// round3. V8 unmaps the freed pages on a background thread after the
// collection, so the gate reads the process again after it has settled
// (gbgate run --settle; README.md). The poison is not in this file: it is
// a V8 option the builds file runs it with.
//
// Checkpoint figures (process.memoryUsage(), in KiB):
//   held_kib        heapUsed + external: the bytes of JavaScript objects
//                   and of the memory they own outside V8's heap that are
//                   still alive, what the kit judges retained-below by;
//   heap_total_kib  heapTotal: what V8's heap has committed, used or not;
//   external_kib    external (ArrayBuffers and the like).
//
// Argument "keep" (the gates file's failsafe): one round, never let go.
'use strict';
const { execFileSync } = require('child_process');

// A round: far above any cap, small enough that the matrix takes seconds.
const FILL_MIB = 256;

// checkpoint runs the kit's helper (gbgate checkpoint, on PATH) with this
// process's stdout and waits: execFileSync blocks the thread that runs
// JavaScript until the helper has printed the line and stopped the process.
function checkpoint(name) {
  const m = process.memoryUsage();
  const kib = (b) => Math.floor(b / 1024);
  execFileSync('gbgate', ['checkpoint', name,
    `held_kib=${kib(m.heapUsed + m.external)}`,
    `heap_total_kib=${kib(m.heapTotal)}`,
    `external_kib=${kib(m.external)}`], { stdio: 'inherit' });
}

// fill: objects of three fields and their arrays, counted at V8's sizes
// (an object 40 bytes, an array's header 16 and 8 bytes a number).
function fill(round) {
  const out = [];
  const goal = FILL_MIB << 20;
  for (let n = 0, i = 0; n < goal; i++) {
    const a = new Array(8 + (i % 24)).fill(round + i);
    out.push({ i, round, a });
    n += 40 + 16 + 8 * a.length + 8;
  }
  return out;
}

function main() {
  const args = process.argv.slice(2);
  if (args.length > 1 || (args.length === 1 && args[0] !== 'keep')) {
    console.error('usage: rounds.js [keep]');
    process.exit(2);
  }
  const keep = args[0] === 'keep';
  const kept = [];
  for (let r = 1; r <= (keep ? 1 : 3); r++) {
    let objs = fill(r);
    if (keep) kept.push(objs);
    objs = null;
    global.gc();
    checkpoint(`round${r}`);
  }
}

main();
