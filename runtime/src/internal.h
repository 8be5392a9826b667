/* internal.h -- every internal header of the runtime, for the tests and
 * fuzzers that reach inside it.
 *
 * The runtime's own files include the module headers they use, so that the
 * include lines say what a file depends on; runtime/README.md maps the
 * files. Tests and fuzzers fake the OS table, read the settings and check
 * the counters, and include this one header for all of it.
 */
#ifndef GB_INTERNAL_H
#define GB_INTERNAL_H

#include "arena.h"
#include "base.h"
#include "check.h"
#include "chunk.h"
#include "coro.h"
#include "fix/fix.h"
#include "handle.h"
#include "index.h"
#include "init.h"
#include "list.h"
#include "map.h"
#include "os/os.h"
#include "overflow.h"
#include "pin.h"
#include "region.h"
#include "small.h"
#include "stack.h"
#include "stats.h"
#include "thread.h"

#endif /* GB_INTERNAL_H */
