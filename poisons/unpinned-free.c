/* unpinned-free.c -- poison: a left region is freed even though a
 * suspended stack points into it.
 *
 * Takes out fix/pin_check.c: no frozen stack is ever found pinning a
 * region, so a coroutine that resumes reads memory that was unmapped (or
 * handed to someone else). This is the fault the pin check exists for.
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

gb_coro *gb__fix_pinner(gb__thread *t, gb_region *r)
{
    (void)t;
    (void)r;
    return NULL;
}
