/* list.h -- the runtime's one intrusive doubly linked list.
 *
 * Every list the runtime keeps links structs that already exist (retired
 * regions, frozen coroutines, a region's arenas, descriptor pages, slabs)
 * and must take one of them out in constant time from wherever it is, with
 * no allocation on the way. A gb__list is both a list's head and the link
 * inside each member; the lists are circular through the head, so pushing
 * at either end and removing are a few stores with no branch, and a member
 * need not know which list it is on.
 *
 * A head must be initialised (gb__list_init, or GB__LIST_INIT for a static
 * one) before use; a link is on no list while both its pointers are NULL,
 * which is how a zeroed or removed link starts.
 */
#ifndef GB_LIST_H
#define GB_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gb__list {
    struct gb__list *next, *prev;
} gb__list;

#define GB__LIST_INIT(head) {&(head), &(head)}

/* The struct of type `type` whose member `member` is link l. */
#define GB__LIST_ENTRY(l, type, member) ((type *)(void *)((char *)(l) - offsetof(type, member)))

/* Visits every link of list h, first to last; the body may remove the
 * link it is given (the next one is read before the body runs) but no
 * other. */
#define GB__LIST_EACH(l, h)                                                                          \
    for (gb__list *l = (h)->next, *l##_next_ = l->next; l != (h); l = l##_next_, l##_next_ = l->next)

static inline void gb__list_init(gb__list *h)
{
    h->next = h->prev = h;
}

static inline bool gb__list_empty(const gb__list *h)
{
    return h->next == h;
}

/* Whether link l is on a list (every link that is not is zeroed). */
static inline bool gb__list_linked(const gb__list *l)
{
    return l->next != NULL;
}

static inline void gb__list_insert_after(gb__list *at, gb__list *l)
{
    l->prev = at;
    l->next = at->next;
    at->next->prev = l;
    at->next = l;
}

/* l becomes the first link of h. */
static inline void gb__list_push(gb__list *h, gb__list *l)
{
    gb__list_insert_after(h, l);
}

/* l becomes the last link of h. */
static inline void gb__list_push_tail(gb__list *h, gb__list *l)
{
    gb__list_insert_after(h->prev, l);
}

/* Moves every link of `from` to `to`, in order; `from` is left empty and
 * whatever `to` held is dropped (it must be empty). */
static inline void gb__list_move(gb__list *from, gb__list *to)
{
    if (from->next == from) {
        to->next = to->prev = to;
        return;
    }
    to->next = from->next;
    to->prev = from->prev;
    to->next->prev = to;
    to->prev->next = to;
    from->next = from->prev = from;
}

/* Takes l off the list it is on. */
static inline void gb__list_remove(gb__list *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->next = l->prev = NULL;
}

#endif /* GB_LIST_H */
