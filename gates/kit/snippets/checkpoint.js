// checkpoint.js -- the kit's protocol from Node: the helper (gbgate
// checkpoint, on PATH) prints the line on this process's stdout (stdio
// inherited: a pipe would swallow it), stops the process and returns once
// it is stopped; execFileSync blocks the only thread that runs JavaScript
// until then. Gate it:
//   gbgate run --cap 64MiB --at freed -- node --expose-gc checkpoint.js
"use strict";
const { execFileSync } = require("child_process");

function checkpoint(name, figures = {}) {
  const words = Object.entries(figures).map(([k, v]) => `${k}=${v}`);
  execFileSync("gbgate", ["checkpoint", name, ...words], { stdio: "inherit" });
}

let data = Buffer.alloc(128 << 20, 1); // 128 MiB outside V8's heap, every page written
checkpoint("held", { bytes: data.length });
data = null;
global.gc(); // the Buffer's memory goes when it is collected
checkpoint("freed");
