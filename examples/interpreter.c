/* interpreter.c -- an embedded interpreter whose memory lives in one region.
 *
 * Interpreters such as Lua take all their memory through one callback,
 * alloc(ud, ptr, osize, nsize). Bound to a region of its own (ud), that
 * callback puts the whole interpreter in it, and closing the interpreter is
 * one gb_leave. The host meanwhile keeps its own temporaries in scratch
 * regions around its calls; the callback names the interpreter's region
 * (gb_alloc_in, gb_realloc_in) so that nothing of the interpreter lands in
 * a scratch region, which is the innermost one while the host works.
 */
#include <giveback.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double MiB = 1024.0 * 1024.0;
static bool ok = true; /* every check passed */

static void check(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "interpreter: %s\n", what);
        ok = false;
    }
}

/* ---- the interpreter: it knows nothing of regions, only its callback. */

typedef void *(*alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

typedef struct value { char *s; size_t n; } value; /* a string, its length */

typedef struct interp {
    alloc_fn alloc;
    void *ud;
    value *stack; /* its value stack, grown through the callback */
    size_t top, cap;
} interp;

/* A new slot on top of the value stack, which grows through the callback. */
static value *push(interp *I)
{
    if (I->top == I->cap) {
        size_t cap = I->cap ? 2 * I->cap : 8;
        I->stack = I->alloc(I->ud, I->stack, I->cap * sizeof(value), cap * sizeof(value));
        I->cap = cap;
    }
    return &I->stack[I->top++];
}

/* Pushes a copy of s: the interpreter owns what is on its stack. */
static void push_string(interp *I, const char *s, size_t n)
{
    char *copy = I->alloc(I->ud, NULL, 0, n + 1);
    memcpy(copy, s, n);
    copy[n] = '\0';
    *push(I) = (value){copy, n};
}

static void pop(interp *I)
{
    value v = I->stack[--I->top];
    I->alloc(I->ud, v.s, v.n + 1, 0);
}

/* ---- the host: the callback, bound to the interpreter's region. */

static size_t region_frees, malloc_frees;

static void *region_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    gb_region *r = ud;
    /* Region memory has no free of its own, but the interpreter may also own
     * memory the host gave it from malloc: gb_region_of tells the two apart.
     * It walks the thread's blocks, so its cost grows with them: fine with
     * the few blocks here, while an interpreter with a large heap that frees
     * at every collection would rather mark the memory it adopts. */
    if (ptr != NULL && gb_region_of(ptr) == NULL) {
        if (nsize > 0)
            return realloc(ptr, nsize);
        malloc_frees++;
        free(ptr);
        return NULL;
    }
    if (nsize == 0) {
        region_frees += ptr != NULL; /* given back with the region, at once */
        return NULL;
    }
    /* Lua passes a type tag in osize when ptr is NULL; it is not a size. */
    if (ptr == NULL)
        return gb_alloc_in(r, nsize);
    return gb_realloc_in(r, ptr, osize, nsize);
}

/* A host function, as the interpreter calls it: it builds a greeting in a
 * scratch region of its own, so that its temporaries go back as it returns,
 * and hands the interpreter a copy. Each call's greeting differs, so a copy
 * overwritten by a later call's temporaries would show. */
static void host_greet(interp *I, gb_region *ir, int call)
{
    gb_region *scratch = gb_enter();
    char p[32];
    size_t plen = (size_t)snprintf(p, sizeof p, "hello %d! ", call);
    size_t n = 1 + call % 300, cap = 16, len = 0;
    char *tmp = gb_alloc(cap);
    for (size_t i = 0; i < n; i++) {
        while (len + plen > cap) {
            tmp = gb_realloc(tmp, cap, 2 * cap); /* in scratch, the innermost */
            cap *= 2;
        }
        memcpy(tmp + len, p, plen);
        len += plen;
    }
    push_string(I, tmp, len);
    check(gb_region_of(tmp) == scratch, "the temporary is not in scratch");
    check(gb_region_of(I->stack[I->top - 1].s) == ir, "the copy is not the interpreter's");
    check(gb_region_of(I->stack) == ir, "the value stack is not in the interpreter's region");
    gb_leave(scratch);
    gb_region_info info;
    gb_region_info_get(scratch, &info);
    check(info.state == GB_REGION_FREED, "the scratch region was not given back at its leave");
}

int main(void)
{
    /* A misuse stops the process with abort(), which drops buffered output:
     * line buffering keeps what was printed before it, even into a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    enum { CALLS = 5000 };
    gb_region *ir = gb_enter();
    interp I = {region_alloc, ir, NULL, 0, 0};

    /* The interpreter takes ownership of a chunk of source the host read
     * into malloc'd memory; its free goes through the callback like any. */
    const char *source = "print(greet(3))";
    char *chunk = malloc(strlen(source) + 1);
    strcpy(chunk, source);
    *push(&I) = (value){chunk, strlen(source)};
    for (int call = 0; call < CALLS; call++)
        host_greet(&I, ir, call);

    /* Every copy reads back intact, long after its scratch region is gone
     * and others have come and gone in its place. */
    for (int call = 0; call < CALLS; call++) {
        const value *v = &I.stack[1 + call];
        char p[32];
        size_t plen = (size_t)snprintf(p, sizeof p, "hello %d! ", call), n = 1 + call % 300;
        bool intact = v->n == n * plen;
        for (size_t k = 0; intact && k < n; k++)
            intact = memcmp(v->s + k * plen, p, plen) == 0;
        check(intact, "a copy handed to the interpreter changed");
    }
    check(strcmp(I.stack[0].s, source) == 0, "the adopted chunk changed");
    printf("interpreter: %zu values, its region %.1f MiB\n", I.top, gb_region_bytes(ir) / MiB);

    /* Closing the interpreter frees each value through the callback (Lua's
     * lua_close does the same); only the adopted chunk goes to free. */
    while (I.top > 0)
        pop(&I);
    I.alloc(I.ud, I.stack, I.cap * sizeof(value), 0);
    check(malloc_frees == 1, "the free hook did not pass the malloc'd chunk to free");
    printf("frees through the callback: %zu of region memory (nothing to do), %zu of malloc "
           "memory (freed)\n", region_frees, malloc_frees);
    gb_leave(ir);
    gb_sweep();
    gb_resident res;
    gb_resident_get(&res);
    printf("resident after leave and sweep: %.1f MiB (peak %.1f MiB)\n", res.rss / MiB,
           res.peak / MiB);
    printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
