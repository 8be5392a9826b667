/* lua_state.c -- a real Lua 5.4 state whose allocator is bound to a region.
 *
 * The host gives each Lua state a region of its own, with a memory limit,
 * and serves "requests" (chunks of Lua) on it:
 *   1. a script that grows a table past the limit gets LUA_ERRMEM ("not
 *      enough memory") from lua_pcall, as with malloc, and the same state
 *      serves the next request;
 *   2. a host function with a scratch region entered raises a Lua error,
 *      which longjmps past its gb_leave; gb_leave_to unwinds it after
 *      lua_pcall;
 *   3. in a child under RLIMIT_AS, with no region limit, the OS itself runs
 *      out: LUA_ERRMEM again, and the next request is served;
 *   4. after lua_close and the leave, a child's resident size is read from
 *      outside (ps) while it waits, stopped.
 * Lua's allocator contract (manual, lua_Alloc): return NULL when a request
 * cannot be met, never fail a shrink, and free when nsize is 0. A region
 * frees nothing until it is left, so the state's memory goes back at
 * lua_close + gb_leave, all at once.
 */
#include <giveback.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1024 * 1024)

static bool ok = true;

static void check(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "lua_state: %s\n", what);
        ok = false;
    }
}

/* Lua's allocator, bound to a region. A region frees nothing until it is
 * left, and Lua frees all the time (its collector, every resized table),
 * so a state that lives for many requests keeps what Lua frees, inside
 * the region, and hands it out again: blocks of up to 64 KiB on a list
 * per size class, larger ones on one list, which, when the region can
 * give no more, are cut up for whatever Lua asks for. After a script ran
 * out of memory and its garbage was collected, the next request is served
 * from there. Everything still goes back to the OS at once, at the leave. */
#define CLASSES 48

typedef struct big_block {
    struct big_block *next;
    size_t size;
} big_block;

typedef struct lua_heap {
    gb_region *r;
    void *free[CLASSES]; /* freed blocks of each class, linked through their first word */
    big_block *big;      /* freed blocks larger than the last class */
    char *carve, *carve_end; /* a big block being cut up */
} lua_heap;

/* The class of an n-byte block, and the size it is given: multiples of 16
 * up to 256 bytes, then four per doubling up to 64 KiB; -1 past that. */
static int class_of(size_t n, size_t *size)
{
    if (n <= 256) {
        *size = (n + 15) & ~(size_t)15;
        return (int)(*size / 16) - 1; /* 0..15 */
    }
    int k = 16;
    for (size_t octave = 256; k < CLASSES; octave *= 2)
        for (size_t q = 1; q <= 4 && k < CLASSES; q++, k++)
            if (n <= octave + q * (octave / 4)) {
                *size = octave + q * (octave / 4);
                return k;
            }
    *size = (n + 15) & ~(size_t)15;
    return -1;
}

static void heap_free(lua_heap *h, void *p, size_t n)
{
    size_t size;
    int k = class_of(n, &size);
    if (k < 0) {
        big_block *b = p;
        *b = (big_block){h->big, size};
        h->big = b;
        return;
    }
    *(void **)p = h->free[k];
    h->free[k] = p;
}

/* A block of `size` bytes cut from what was freed; NULL when nothing was
 * freed that holds it. */
static void *from_freed(lua_heap *h, int k, size_t size)
{
    if ((size_t)(h->carve_end - h->carve) >= size) {
        void *p = h->carve;
        h->carve += size;
        return p;
    }
    for (int j = k < 0 ? CLASSES : k + 1; j < CLASSES; j++)
        if (h->free[j]) {
            void *p = h->free[j];
            h->free[j] = *(void **)p;
            return p;
        }
    for (big_block **pp = &h->big; *pp; pp = &(*pp)->next) {
        big_block *b = *pp;
        if (b->size < size)
            continue;
        *pp = b->next;
        if (k < 0)
            return b; /* a large request takes it whole */
        /* A small one cuts it up; what is left of the last one is lost
         * until the leave. */
        h->carve = (char *)b + size;
        h->carve_end = (char *)b + b->size;
        return b;
    }
    return NULL;
}

static void *heap_alloc(lua_heap *h, size_t n)
{
    size_t size;
    int k = class_of(n, &size);
    if (k >= 0 && h->free[k]) {
        void *p = h->free[k];
        h->free[k] = *(void **)p;
        return p;
    }
    void *p = gb_try_alloc_in(h->r, size);
    /* NULL from the region: its limit, or the OS, says no. What Lua freed
     * serves, if it holds the request; if not, Lua collects in full (which
     * may free more) and asks again, and raises LUA_ERRMEM if that fails
     * too. */
    return p ? p : from_freed(h, k, size);
}

static void *region_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    lua_heap *h = ud;
    if (nsize == 0) {
        if (ptr)
            heap_free(h, ptr, osize);
        return NULL;
    }
    if (!ptr)
        return heap_alloc(h, nsize);
    size_t osz, nsz;
    int ok_class = class_of(osize, &osz), nk = class_of(nsize, &nsz);
    if (ok_class >= 0 && ok_class == nk)
        return ptr; /* the same class: the block holds it already */
    if (ok_class < 0 && nk < 0)
        return gb_try_realloc_in(h->r, ptr, osize, nsize); /* large: grows in place where it can */
    void *q = heap_alloc(h, nsize);
    if (!q)
        /* A shrink must not fail: the block it has holds it already. */
        return nsize <= osize ? ptr : NULL;
    memcpy(q, ptr, osize < nsize ? osize : nsize);
    heap_free(h, ptr, osize);
    return q;
}

/* Runs one request: a chunk of Lua in protected mode. Whatever regions a
 * host function entered and did not leave (an error longjmped past its
 * gb_leave) are left after it. Returns lua_pcall's status and, in *msg,
 * the error message or the result as a string. */
static int serve(lua_State *L, const char *code, char *msg, size_t size, size_t *unwound)
{
    gb_region *saved = gb_current();
    int rc = luaL_loadstring(L, code);
    if (rc == LUA_OK)
        rc = lua_pcall(L, 0, 1, 0);
    size_t n = gb_leave_to(saved);
    if (unwound)
        *unwound = n;
    const char *s = lua_tostring(L, -1);
    snprintf(msg, size, "%s", s ? s : "(no value)");
    lua_pop(L, 1);
    return rc;
}

/* A host function that works in a scratch region and fails: the error
 * longjmps out of it with the scratch region still entered. */
static int host_parse(lua_State *L)
{
    gb_enter();
    char *buf = gb_alloc(64 * 1024);
    snprintf(buf, 64 * 1024, "cannot parse '%s'", luaL_checkstring(L, 1));
    return luaL_error(L, "%s", buf); /* never returns: gb_leave is skipped */
}

static const char *GROW = "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 64) .. i end return #t";
static const char *SMALL = "local s = 0 for i = 1, 1000 do s = s + i end return s";

/* A Lua state whose every byte is in r, its free lists with it. */
static lua_State *new_state(gb_region *r)
{
    lua_heap *h = gb_alloc_in(r, sizeof *h);
    memset(h, 0, sizeof *h);
    h->r = r;
    lua_State *L = lua_newstate(region_alloc, h);
    if (!L) {
        fprintf(stderr, "lua_state: lua_newstate failed\n");
        exit(1);
    }
    luaL_openlibs(L);
    lua_register(L, "host_parse", host_parse);
    return L;
}

/* 1 and 2: a state under a region limit. */
static void under_a_limit(void)
{
    gb_region *r = gb_enter();
    gb_region_limit(r, 32 * MIB);
    lua_State *L = new_state(r);
    char msg[256];
    size_t unwound;
    int rc = serve(L, GROW, msg, sizeof msg, &unwound);
    gb_stats s;
    gb_stats_get(&s);
    printf("limit 32 MiB: the growing script ended with %s (\"%s\"); the region holds %.1f MiB; %llu "
           "refusal(s)\n",
           rc == LUA_ERRMEM ? "LUA_ERRMEM" : "another status", msg, gb_region_bytes(r) / (double)MIB,
           (unsigned long long)s.refusals);
    check(rc == LUA_ERRMEM, "the script past the limit did not get LUA_ERRMEM");
    check(gb_region_bytes(r) <= 32 * MIB, "the region passed its limit");
    rc = serve(L, SMALL, msg, sizeof msg, &unwound);
    printf("the next request on the same state: %s\n", msg);
    check(rc == LUA_OK && strcmp(msg, "500500") == 0, "the next request was not served");

    rc = serve(L, "return host_parse('1 +* 2')", msg, sizeof msg, &unwound);
    printf("a host function's error: \"%s\"; %zu scratch region(s) unwound by gb_leave_to\n", msg, unwound);
    check(rc == LUA_ERRRUN && strstr(msg, "cannot parse") != NULL, "the host function's error was lost");
    check(unwound == 1, "gb_leave_to did not leave the scratch region");
    check(gb_current() == r, "the interpreter's region is not innermost after the unwind");
    rc = serve(L, SMALL, msg, sizeof msg, NULL);
    check(rc == LUA_OK, "the state did not serve after the host function's error");

    lua_close(L);
    gb_leave(r); /* the innermost again: no "not the innermost region" */
}

/* 3: the OS runs out, in a child under RLIMIT_AS. */
static int vm_size_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (!f)
        return -1;
    int got = fscanf(f, "%llu", &pages);
    fclose(f);
    return got == 1 ? (int)(pages * (unsigned long long)sysconf(_SC_PAGESIZE) / MIB) : -1;
}

static int under_rlimit_as(void)
{
    int vm = vm_size_mib();
    if (vm < 0)
        return 77;
    rlim_t room = (rlim_t)(vm + 512) * MIB;
    struct rlimit rl = {room, room};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return 2;
    gb_region *r = gb_enter();
    lua_State *L = new_state(r);
    char msg[256];
    int rc = serve(L, GROW, msg, sizeof msg, NULL);
    printf("under RLIMIT_AS (512 MiB of address space to spare at the start): the growing script ended "
           "with %s; the region held %.1f MiB\n", rc == LUA_ERRMEM ? "LUA_ERRMEM" : "another status", gb_region_bytes(r) / (double)MIB);
    int bad = rc != LUA_ERRMEM;
    rc = serve(L, SMALL, msg, sizeof msg, NULL);
    printf("under RLIMIT_AS, the next request: %s\n", msg);
    bad |= rc != LUA_OK;
    lua_close(L);
    gb_leave(r);
    fflush(stdout);
    return bad;
}

/* 4: the resident size after lua_close and the leave, read from outside:
 * the child stops itself, the parent reads it with ps, and lets it go. */
static long rss_kib_of(pid_t pid)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "ps -o rss= -p %d", (int)pid);
    FILE *p = popen(cmd, "r");
    long kib = -1;
    if (p) {
        if (fscanf(p, "%ld", &kib) != 1)
            kib = -1;
        pclose(p);
    }
    return kib;
}

static void big_state_then_stop(void)
{
    gb_region *r = gb_enter();
    lua_State *L = new_state(r);
    char msg[64];
    serve(L, "local t = {} for i = 1, 2e6 do t[i] = 'v' .. i end return #t", msg, sizeof msg, NULL);
    printf("a state of %.1f MiB of blocks served a 2,000,000-entry table\n", gb_region_bytes(r) / (double)MIB);
    fflush(stdout);
    raise(SIGSTOP); /* read here: the state at its largest */
    lua_close(L);
    gb_leave(r);
    gb_sweep();
    raise(SIGSTOP); /* and here: after lua_close and the leave */
}

static void read_from_outside(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        big_state_then_stop();
        _exit(0);
    }
    long kib[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        int status;
        if (waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status)) {
            check(false, "the child did not stop at its checkpoint");
            return;
        }
        kib[i] = rss_kib_of(pid);
        kill(pid, SIGCONT);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("resident, read with ps from outside: %.1f MiB with the state, %.1f MiB after lua_close and "
           "gb_leave\n",
           kib[0] / 1024.0, kib[1] / 1024.0);
    check(kib[0] > 0 && kib[1] > 0, "ps could not read the child");
    check(kib[1] < kib[0] / 4, "the state's memory stayed resident after lua_close and gb_leave");
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    under_a_limit();

    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(under_rlimit_as());
    int status;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        printf("under RLIMIT_AS: not run (no /proc/self/statm to size the address space with)\n");
    else
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "under RLIMIT_AS the state did not get LUA_ERRMEM, or did not serve the next request");

    read_from_outside();

    gb_stats s;
    gb_stats_get(&s);
    check(s.regions_live == 0 && s.blocks_live == 0, "a region or a block is still held");
    printf("%s\n", ok ? "lua_state: every check passed" : "lua_state: a check failed");
    return ok ? 0 : 1;
}
