/* owner-frees.c -- poison: a region handed over to another thread is
 * freed by the thread that entered it, when that thread next runs.
 *
 * Takes out fix/handoff_free.c. The thread that leaves a region it
 * attached hands the region back to the thread whose page holds its
 * descriptor, as a cross-thread free list does, and that thread frees it
 * at its next gb_enter, gb_sweep or exit. While it enters regions the
 * memory goes back a round late; once it is idle (a producer waiting for
 * work, an I/O thread blocked on a socket) the last region handed over
 * stays resident, counted by the runtime as live. The fault a handoff
 * design is likeliest to have: the memory of a region belongs to the
 * thread that made it. Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

#include <pthread.h>

static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;
static gb__list handed = {&handed, &handed}; /* regions handed back, through wlink */

void gb__fix_free_lent(gb_region *r)
{
    gb__mem *o = r->page->owner;
    if (!o || o == r->home) {
        gb__region_free(r);
        gb__handle_free(r);
        return;
    }
    gb__region_index(r->home, r, false);
    r->home = NULL;
    pthread_mutex_lock(&handed_lock);
    gb__list_push(&handed, &r->wlink);
    pthread_mutex_unlock(&handed_lock);
    atomic_store_explicit(&o->dpending, true, memory_order_relaxed);
}

void gb__fix_collect(gb__mem *m)
{
    gb__handle_collect(m);
    gb__list mine;
    gb__list_init(&mine);
    pthread_mutex_lock(&handed_lock);
    for (gb__list *l = handed.next, *next; l != &handed; l = next) {
        next = l->next;
        if (GB__LIST_ENTRY(l, gb_region, wlink)->page->owner == m) {
            gb__list_remove(l);
            gb__list_push(&mine, l);
        }
    }
    pthread_mutex_unlock(&handed_lock);
    while (!gb__list_empty(&mine)) {
        gb_region *r = GB__LIST_ENTRY(mine.next, gb_region, wlink);
        gb__list_remove(&r->wlink);
        r->home = m;
        gb__region_index(m, r, true);
        gb__region_free(r);
        gb__handle_free(r);
    }
}
