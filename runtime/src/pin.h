/* pin.h -- retiring left regions that frozen stacks point into (pin.c).
 *
 * Pinning knows stacks, not coroutines: what it reads of a stack is a
 * frozen-stack record (gb__frozen, below), which a coroutine's descriptor
 * embeds (coro.h), and what it keeps of a thread is the thread's pinning
 * slice (gb__pins), which the thread's state embeds (thread.h), as
 * mimalloc's segment layer takes its slice of the thread-local data. So
 * pin.c sits below both coroutines and threads, and its callers hand it
 * the record and the slice.
 *
 * What the rest of the runtime tells pin.c: a region was left (it decides:
 * freed or retired), a stack froze, thawed or is gone (its witnessed
 * regions need a try), retired regions may be tried. The bookkeeping of
 * every switch is inline: a resume and yield round trip is a few dozen
 * nanoseconds, calls included. What the fixes use of pin.c is in seam_pin.h.
 */
#ifndef GB_PIN_H
#define GB_PIN_H

#include "list.h"
#include "region.h"

/* A stack as pinning sees it: the frozen state of one coroutine.
 *   - sp is the saved stack pointer whenever the stack is not the running
 *     one, and hi its top: the words of [sp, hi) are the whole frozen
 *     state, saved registers included (switch/switch.h). sp comes first,
 *     where the switch path stores it;
 *   - frozen says whether the stack is frozen (below); flink is on its
 *     thread's frozen list while it is, and may stay there after it thaws
 *     (the list work is done when the list is read);
 *   - summary holds the sorted distinct words of [sp, hi) at or above
 *     GB__LOWEST_POINTER when summary_valid, built at most once between two
 *     runs (fix/retry.c); summary_valid is set only on a frozen stack, and
 *     while it is clear nsummary is 0; summary_cap words are allocated;
 *   - witnessed lists the retired regions whose witness it is (through
 *     gb_region.wlink). */
struct gb__frozen {
    void *sp;
    char *hi;
    gb__list flink;
    gb__list witnessed;
    uintptr_t *summary;
    size_t nsummary, summary_cap;
    bool summary_valid;
    bool frozen;
};

/* A thread's pinning slice.
 *   - frozen lists every frozen stack of the thread (suspended, or waiting
 *     on one it resumed), most recently frozen first (through
 *     gb__frozen.flink): exactly the stacks a pin check must consider.
 *     Stacks thawed since the list was last read may still be on it
 *     (gb__pin_frozen_sync takes them off), in their places: the frozen
 *     ones among them keep that order;
 *   - a retired region of the thread is on retired_pinned while it has a
 *     witness (npinned counts them) and on retired_dirty while it needs a
 *     try (through gb_region.rlink). */
typedef struct gb__pins {
    gb__list frozen;
    gb__list retired_pinned, retired_dirty;
    size_t npinned;
} gb__pins;

/* Makes p's lists empty (a new thread's). */
static inline void gb__pin_init(gb__pins *p)
{
    gb__list_init(&p->frozen);
    gb__list_init(&p->retired_pinned);
    gb__list_init(&p->retired_dirty);
}

/* Makes f, zeroed, the record of a stack whose top is hi; the caller sets
 * its sp before it is read. */
static inline void gb__pin_frozen_init(gb__frozen *f, char *hi)
{
    f->hi = hi;
    gb__list_init(&f->witnessed);
}

/* In the functions below, p is the thread's slice, and run the record of
 * the stack the thread runs on, or NULL while it runs on its own stack:
 * a try asks that stack's live frames too (pin.c, gb__pin_try). While a
 * resumer lands (coro.c, gb__coro_resumer_lands), run is the resumer's,
 * still frozen: the frames below its saved sp are the landing's own. */

/* r, a region of p's thread, was just popped off its stack: it is freed
 * now, or retired while a frozen stack points into it. Then the retired
 * regions that need a try get one. */
void gb__pin_release(gb__pins *p, gb__frozen *run, gb_region *r);

/* Leaves the innermost region of s, a region stack of p's thread, which
 * must have one: pops it (gb__region_pop) and releases it. gb_leave, a
 * finished or freed coroutine, and thread exit all leave through here. */
void gb__pin_pop(gb__pins *p, gb__frozen *run, gb__rstack *s);

/* The frozen stack of p's thread that points into r (the pin check,
 * fix/pin_check.c), or NULL when none does. */
gb__frozen *gb__pin_find(gb__pins *p, gb_region *r);

/* Retires r, which is on no stack, with witness as the stack found
 * pointing into it: a region left, or the contents of a region reset. */
void gb__pin_retire_with(gb__pins *p, gb_region *r, gb__frozen *witness);

/* Tries the retired regions of p's thread that need it (fix/retry.c
 * chooses which). */
void gb__pin_retry(gb__pins *p, gb__frozen *run);

/* Frees every retired region of p's thread, whatever pins it: at thread
 * exit, when the stacks pinning them can never run again. */
void gb__pin_free_all(gb__pins *p);

#if GB_CHECK
/* f's summary against its stack as it is now (the invariants at struct
 * gb__frozen): a clear summary is empty, a valid one belongs to a frozen
 * stack and holds exactly the sorted distinct words of [sp, hi) at or
 * above GB__LOWEST_POINTER, within summary_cap. Stops the process naming
 * the first that does not hold. Called by check.c's gb__pin_check over
 * every frozen stack, and at the boundary where a stack freezes. */
void gb__pin_summary_check(const gb__frozen *f);
#endif

void gb__pin_witness_gone_slow(gb__pins *p, gb__frozen *f);

/* f's stack changed or is gone: what it witnessed needs another try. */
static inline void gb__pin_witness_gone(gb__pins *p, gb__frozen *f)
{
    if (GB__UNLIKELY(!gb__list_empty(&f->witnessed)))
        gb__pin_witness_gone_slow(p, f);
}

/* f runs again: its summary is stale. It keeps its witnessed regions: a
 * live frame may still hold the pointer that pinned them; they are tried
 * again once it is frozen again, finishes or is freed. */
static inline void gb__pin_thawed(gb__frozen *f)
{
    f->summary_valid = false;
    f->nsummary = 0;
}

/* Freezing and thawing are a mark on every switch; the frozen list is
 * brought up to date when it is read (gb__pin_frozen_sync): a stack that
 * thaws stays where it is on the list, and one that freezes at the head
 * of the list (the common case: it was the last to freeze before it ran)
 * stays there too, so a resume and yield round trip moves no link while
 * the list keeps its frozen stacks most recently frozen first. */
static inline bool gb__pin_is_frozen(const gb__frozen *f)
{
    return f->frozen;
}

/* True when freezing f hands regions over for a try (it is not frozen
 * and witnessed some): the one part of gb__pin_frozen_push that calls out
 * of line. */
static inline bool gb__pin_freeze_hands_over(const gb__frozen *f)
{
    return !gb__pin_is_frozen(f) && !gb__list_empty(&f->witnessed);
}

/* gb__pin_frozen_push where it hands nothing over: f marked frozen and
 * put at the head of p's frozen list, in a few stores and no call (the
 * coroutine switch's fast path, coro_path.h). */
static inline void gb__pin_frozen_mark(gb__pins *p, gb__frozen *f)
{
    GB__ASSERT(!gb__pin_freeze_hands_over(f));
    if (gb__pin_is_frozen(f))
        return;
    f->frozen = true;
    GB__CHECK_AT(gb__pin_summary_check(f));
    if (GB__LIKELY(p->frozen.next == &f->flink))
        return;
    if (gb__list_linked(&f->flink))
        gb__list_remove(&f->flink);
    gb__list_push(&p->frozen, &f->flink);
}

/* f's stack stops changing: it is the head of p's frozen list. Its stack
 * changed since it was last frozen, so what it witnessed needs another try
 * against the stack as it is now. */
static inline void gb__pin_frozen_push(gb__pins *p, gb__frozen *f)
{
    if (gb__pin_is_frozen(f))
        return;
    gb__pin_witness_gone(p, f);
    gb__pin_frozen_mark(p, f);
}

/* f is about to run: its stack is no longer frozen. It stays on the list
 * until the list is read. */
static inline void gb__pin_frozen_remove(gb__frozen *f)
{
    f->frozen = false;
}

/* f's stack is freed: off the frozen list at once. */
static inline void gb__pin_frozen_unlink(gb__frozen *f)
{
    f->frozen = false;
    if (gb__list_linked(&f->flink))
        gb__list_remove(&f->flink);
}

/* Takes the stacks that thawed since the last read off p's frozen list,
 * which then holds exactly the frozen ones: before anything walks it (the
 * pin check). */
void gb__pin_frozen_sync(gb__pins *p);

#endif /* GB_PIN_H */
