/* handoff_free.c -- fix: a region handed over to another thread is freed
 * by the thread that leaves it, there and then.
 *
 * The thread that leaves a region it attached gives its blocks back at
 * once: within the process's cache bound to the cache of the thread that
 * entered the region, the likeliest to want them again (a producer of
 * regions a consumer leaves would otherwise map and fault every block
 * afresh, while the consumer's cache filled the bound with blocks it never
 * reuses), and the rest to the OS (gb__handle_give_block); and it lends
 * the descriptor's slot back to the page it lives on (gb__handle_free).
 * What leaves the process at the leave does so whatever the thread that
 * entered the region does meanwhile. The poison
 * owner-frees hands the whole region back to the thread that entered it
 * instead, the way a cross-thread free list does, and an idle producer
 * then keeps everything its consumers left.
 */
#include "fix.h"

void gb__fix_free_lent(gb_region *r)
{
    for (gb__block *b = gb__region_unhook(r), *next; b; b = next) {
        next = b->next;
        gb__handle_give_block(r, b->chunk);
    }
    gb__handle_free(r);
}

void gb__fix_collect(gb__mem *m)
{
    gb__handle_collect(m);
}
