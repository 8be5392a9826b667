/* pin.h -- retiring left regions that frozen stacks point into (pin.c).
 *
 * What the rest of the runtime tells pin.c: a region was left (it decides:
 * freed or retired), a coroutine froze, thawed or is gone (its witnessed
 * regions need a try), retired regions may be tried. The bookkeeping of
 * every switch is inline: a resume and yield round trip is a few dozen
 * nanoseconds, calls included. What the fixes use of pin.c is in seam_pin.h.
 */
#ifndef GB_PIN_H
#define GB_PIN_H

#include "coro.h"
#include "thread.h"

/* r, a region of t, was just popped off its stack: it is freed now, or
 * retired while a frozen stack points into it. Then the retired regions
 * that need a try get one. */
void gb__pin_release(gb__thread *t, gb_region *r);

/* Leaves the innermost region of s, a region stack of t, which must have
 * one: pops it (gb__region_pop) and releases it. gb_leave, a finished or
 * freed coroutine, and thread exit all leave through here. */
void gb__pin_leave(gb__thread *t, gb__rstack *s);

/* The frozen coroutine of t whose stack points into r (the pin check,
 * fix/pin_check.c), or NULL when none does. */
gb_coro *gb__pin_pinner(gb__thread *t, gb_region *r);

/* Retires r, which is on no stack, with witness as the coroutine found
 * pointing into it: a region left, or the contents of a region reset. */
void gb__pin_retire(gb__thread *t, gb_region *r, gb_coro *witness);

/* Tries the retired regions of t that need it (fix/retry.c chooses which). */
void gb__pin_retry(gb__thread *t);

/* Frees every retired region of t, whatever pins it: at thread exit, when
 * the coroutines pinning them can never run again. */
void gb__pin_free_all(gb__thread *t);

void gb__pin_witness_gone_slow(gb_coro *c);

/* c's stack changed or is gone: what it witnessed needs another try. */
static inline void gb__pin_witness_gone(gb_coro *c)
{
    if (GB__UNLIKELY(!gb__list_empty(&c->witnessed)))
        gb__pin_witness_gone_slow(c);
}

/* c runs again: its summary is stale. It keeps its witnessed regions: a
 * live frame may still hold the pointer that pinned them; they are tried
 * again once it is frozen again, finishes or is freed. */
static inline void gb__pin_thawed(gb_coro *c)
{
    c->summary_valid = false;
    c->nsummary = 0;
}

/* Freezing and thawing are a mark on every switch; the frozen list is
 * brought up to date when it is read (gb__pin_frozen_sync): a coroutine
 * that thaws stays where it is on the list, and one that freezes at the
 * head of the list (the common case: it was the last to freeze before it
 * ran) stays there too, so a resume and yield round trip moves no link
 * while the list keeps its frozen coroutines most recently frozen first. */
static inline bool gb__pin_is_frozen(const gb_coro *c)
{
    return c->frozen;
}

/* c's stack stops changing: it is the head of t's frozen list. Its stack
 * changed since it was last frozen, so what it witnessed needs another try
 * against the stack as it is now. */
static inline void gb__pin_frozen_push(gb__thread *t, gb_coro *c)
{
    if (gb__pin_is_frozen(c))
        return;
    gb__pin_witness_gone(c);
    c->frozen = true;
    if (GB__LIKELY(t->frozen.next == &c->flink))
        return;
    if (gb__list_linked(&c->flink))
        gb__list_remove(&c->flink);
    gb__list_push(&t->frozen, &c->flink);
}

/* c is about to run: its stack is no longer frozen. It stays on the list
 * until the list is read. */
static inline void gb__pin_frozen_remove(gb_coro *c)
{
    c->frozen = false;
}

/* c is freed: off the frozen list at once. */
static inline void gb__pin_frozen_unlink(gb_coro *c)
{
    c->frozen = false;
    if (gb__list_linked(&c->flink))
        gb__list_remove(&c->flink);
}

/* Takes the coroutines that thawed since the last read off t's frozen
 * list, which then holds exactly the frozen ones: before anything walks
 * it (the pin check). */
void gb__pin_frozen_sync(gb__thread *t);

#endif /* GB_PIN_H */
