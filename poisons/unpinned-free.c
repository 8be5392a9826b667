/* unpinned-free.c -- poison: a left region is freed even though a
 * suspended stack points into it.
 *
 * Takes out fix/pin_check.c: no frozen stack is ever found pinning a
 * region, so a coroutine that resumes reads memory that was unmapped (or
 * handed to someone else). This is the fault the pin check exists for.
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

gb__frozen *gb__fix_pinner(gb__pins *p, gb_region *r)
{
    (void)p;
    (void)r;
    return NULL;
}
