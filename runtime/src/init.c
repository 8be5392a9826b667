/* init.c -- options, environment and the one-time initialisation.
 *
 * The runtime settles its configuration once per process: the OS table, the
 * block source, the growth path, the mapping budget and, in a program build
 * on glibc, malloc's mmap threshold. An explicit option wins; an AUTO option
 * defers to the environment (GB_BLOCKS, GB_GROW, GB_STRESS), so that an
 * unchanged program can be run under every choice; a malformed variable
 * stops the process rather than being ignored.
 */
/* dladdr is a GNU extension in glibc's dlfcn.h. */
#if defined(GB_HAVE_DLADDR) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "abi.h"
#include "seam_mem.h"
#include "init.h"
#include "os/os.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef GB_HAVE_DLADDR
#include <dlfcn.h>
#endif

gb__config gb__cfg;
atomic_int gb__inited; /* 0 none, 1 in progress, 2 done */

/* Who settled gb__cfg, for the message that stops a later gb_init asking
 * for other settings: a library and its host may both initialise, and the
 * one that comes second needs to know which one came first. Written once,
 * before gb__inited becomes 2. */
static char origin[320];

void gb_options_init_sized(gb_options *o, size_t size)
{
    gb_options d;
    memset(&d, 0, sizeof d);
    gb__copy_out("gb_options_init", o, size, &d, sizeof d, GB__OPTIONS_LEAST);
}

/* The environment's choices, one table: a variable, the words it takes
 * and the value each word means (the first word, like an unset or empty
 * variable, is "auto"). A word it does not know stops the process naming
 * the words it does. */
typedef struct env_choice {
    const char *var;
    const char *words[3];
    int values[3];
} env_choice;

static const env_choice ENV_BLOCKS = {"GB_BLOCKS", {"auto", "map", "heap"},
                                      {GB_BLOCKS_AUTO, GB_BLOCKS_MAP, GB_BLOCKS_HEAP}};
static const env_choice ENV_GROW = {"GB_GROW", {"auto", "remap", "copy"},
                                    {GB_GROW_AUTO, GB_GROW_REMAP, GB_GROW_COPY}};
static const env_choice ENV_HUGE = {"GB_HUGE", {"auto", "on", "off"}, {GB_HUGE_AUTO, GB_HUGE_ON, GB_HUGE_OFF}};
static const env_choice ENV_POPULATE = {"GB_POPULATE", {"auto", "on", "off"},
                                        {GB_POPULATE_AUTO, GB_POPULATE_ON, GB_POPULATE_OFF}};
static const env_choice ENV_SMALL = {"GB_SMALL", {"auto", "slab", "malloc"},
                                     {GB_SMALL_AUTO, GB_SMALL_SLAB, GB_SMALL_MALLOC}};

static int env_word(const env_choice *c)
{
    const char *v = getenv(c->var);
    if (!v || !*v)
        return c->values[0];
    for (int i = 0; i < 3; i++)
        if (strcmp(v, c->words[i]) == 0)
            return c->values[i];
    gb__die("%s=%s: expected %s, %s or %s", c->var, v, c->words[1], c->words[2], c->words[0]);
}

/* A whole number from the environment, at most max; 0 when unset or empty.
 * `what` says what it counts, for the message. */
static unsigned long long env_number(const char *var, unsigned long long max, const char *what)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || v[0] == '-' || n > max)
        gb__die("%s=%s: expected %s", var, v, what);
    return n;
}

/* The block cache bound: the option, else GB_CACHE in KiB or "off". */
static size_t cache_from(size_t opt)
{
    if (opt == GB_CACHE_OFF)
        return 0;
    if (opt)
        return opt;
    const char *v = getenv("GB_CACHE");
    if (!v || !*v)
        return GB_CACHE_DEFAULT;
    if (strcmp(v, "off") == 0)
        return 0;
    return (size_t)env_number("GB_CACHE", SIZE_MAX >> 10, "a size in KiB or off") * 1024;
}

/* The budget leaves the host an eighth of the OS limit, and at least 1024
 * mappings, for its own libraries, threads and malloc. */
static size_t default_budget(size_t limit)
{
    if (limit == 0)
        return SIZE_MAX / 2;
    size_t reserve = limit / 8 > 1024 ? limit / 8 : 1024;
    return limit > reserve * 2 ? limit - reserve : limit / 2;
}

/* The settings o asks for, with the environment and the OS's defaults
 * filled in: what gb__cfg would be. Reads the OS table; changes nothing. */
static void resolve(const gb_options *o, gb__config *out)
{
    gb__config c = {0};

    c.blocks = o->blocks != GB_BLOCKS_AUTO ? o->blocks : (gb_blocks)env_word(&ENV_BLOCKS);
    /* The default is the runtime's own mappings in every build on every
     * OS: it is the faster source here (the README's block-source table)
     * and the only one whose small blocks leave too; from malloc, glibc
     * keeps a small block whenever anything allocated after it is live. */
    if (c.blocks == GB_BLOCKS_AUTO)
        c.blocks = GB_BLOCKS_MAP;
    else if (c.blocks != GB_BLOCKS_MAP && c.blocks != GB_BLOCKS_HEAP)
        gb__die("gb_init: blocks=%d is not a gb_blocks value", (int)c.blocks);

    c.growth = o->growth != GB_GROW_AUTO ? o->growth : (gb_growth)env_word(&ENV_GROW);
    if (c.growth == GB_GROW_AUTO)
        c.growth = gb__os.remap ? GB_GROW_REMAP : GB_GROW_COPY;
    else if (c.growth != GB_GROW_REMAP && c.growth != GB_GROW_COPY)
        gb__die("gb_init: growth=%d is not a gb_growth value", (int)c.growth);
    if (c.growth == GB_GROW_REMAP && !gb__os.remap)
        gb__die("growth path remap asked for, but %s has no mremap (use copy)", gb__os.name);

    c.map_min = gb__os.page_size > GB__MAP_MIN ? gb__os.page_size : GB__MAP_MIN;
    c.map_budget = o->map_budget ? o->map_budget : default_budget(gb__os.map_limit);

    /* Huge pages pay where a block is mostly written: a fault then fills
     * 2 MiB for little more than the cost of zeroing it, about a tenth of
     * what 512 faults of 4 KiB cost (churn_bench's physics). They apply
     * to mapped blocks only, and only past a huge page, so a small region
     * is not made to fault in 2 MiB. */
    gb_huge huge = o->huge != GB_HUGE_AUTO ? o->huge : (gb_huge)env_word(&ENV_HUGE);
    if (huge != GB_HUGE_AUTO && huge != GB_HUGE_ON && huge != GB_HUGE_OFF)
        gb__die("gb_init: huge=%d is not a gb_huge value", (int)huge);
    bool can = gb__os.huge_page && gb__os.advise_huge && c.blocks == GB_BLOCKS_MAP;
    if (huge == GB_HUGE_ON && !can)
        gb__die("huge pages asked for, but %s", c.blocks != GB_BLOCKS_MAP
                                                    ? "the heap block source takes every block from malloc"
                                                    : gb__os.huge_page == 0 && strcmp(gb__os.huge_mode, "none") != 0
                                                          ? "transparent huge pages are \"never\" on this machine"
                                                          : "this OS has no transparent huge pages");
    c.huge = huge != GB_HUGE_OFF && can ? gb__os.huge_page : 0;

    /* Populating a fresh block makes its pages resident in one call
     * instead of a fault each: in 4 KiB pages a fault costs a few
     * microseconds a page (churn_bench's physics). A region populates a
     * block in steps just ahead of its bump pointer (region.c), so what
     * is populated and never written is one step, not the rest of the
     * block: AUTO populates both kinds of page, as ON does. Only the map
     * source maps blocks. An OS without the call populates nothing,
     * whatever was asked: a populate that cannot be had is the faults it
     * would have saved, not an error. */
    gb_populate pop = o->populate != GB_POPULATE_AUTO ? o->populate : (gb_populate)env_word(&ENV_POPULATE);
    if (pop != GB_POPULATE_AUTO && pop != GB_POPULATE_ON && pop != GB_POPULATE_OFF)
        gb__die("gb_init: populate=%d is not a gb_populate value", (int)pop);
    bool can_pop = gb__os.populate && c.blocks == GB_BLOCKS_MAP;
    c.populate_4k = can_pop && pop != GB_POPULATE_OFF;
    c.populate_huge = c.populate_4k && c.huge;

    /* Whether huge pages pay is the host's to say: one host faulted 10M
     * small objects in at 64 ns each in 4 KiB pages and 216 ns in huge
     * pages, another at 299 and 153 (a huge page's fault may first have
     * to compact memory to find 2 MiB). Under AUTO the runtime measures
     * it, by timing its own populate steps of each kind (map.c); with
     * nothing populated there is nothing to time, and AUTO takes huge
     * pages wherever the OS gives them. */
    c.huge_learn = huge == GB_HUGE_AUTO && c.populate_huge;

    c.first_block = o->first_block ? o->first_block : 4 * GB__KIB;
    c.block_cap = o->block_cap ? o->block_cap : c.huge ? 64 * GB__MIB : GB__MIB;
    if (c.first_block < 256 || c.block_cap < c.first_block)
        gb__die("gb_init: first_block (%zu) must be at least 256 and at most block_cap (%zu)",
                c.first_block, c.block_cap);
    c.stress = o->stress ? o->stress
                         : (unsigned)env_number("GB_STRESS", 1000000000ull,
                                                "a whole number of safepoints (0 turns it off)");
    /* With the map source, chunks too small for a mapping of their own
     * come from the runtime's slabs, so they leave too; GB_SMALL=malloc
     * (or the option) puts them back in malloc, for comparison. */
    gb_small small = o->small != GB_SMALL_AUTO ? o->small : (gb_small)env_word(&ENV_SMALL);
    if (small != GB_SMALL_AUTO && small != GB_SMALL_SLAB && small != GB_SMALL_MALLOC)
        gb__die("gb_init: small=%d is not a gb_small value", (int)small);
    c.small_slabs = c.blocks == GB_BLOCKS_MAP && small != GB_SMALL_MALLOC;
    c.cache_bytes = cache_from(o->cache_bytes);
    *out = c;
}

static void configure(const gb_options *o)
{
    gb__os_init();
    gb__config c;
    resolve(o, &c);

    /* A program build fixes glibc's threshold whatever the block source:
     * with the map source the runtime's blocks never reach malloc, but the
     * rest of the process (its libraries' buffers, the heap source when
     * chosen) is then served large blocks that go back on free. A library
     * build is a guest: it must not change a process-wide malloc setting
     * behind its host's back. */
    if (gb__program_build && gb__os.malloc_threshold_tunable)
        c.threshold_fixed = gb__fix_malloc_threshold();

    gb__cfg = c;
}

/* The word for which fresh blocks a configuration populates. */
static const char *populate_word(const gb__config *c)
{
    return c->populate_huge ? "all" : c->populate_4k ? "4k" : "off";
}

/* The word for a configuration's huge pages: "auto" where each huge-size
 * block's kind is measured, "on" where every one is advised, or "off". */
static const char *huge_word(const gb__config *c)
{
    return !c->huge ? "off" : c->huge_learn ? "auto" : "on";
}

/* Appends "name=value" for one setting to buf, comma-separated. */
static void describe_one(char *buf, size_t size, const char *name, const char *word, size_t n)
{
    size_t len = strlen(buf);
    if (len >= size)
        return;
    if (word)
        snprintf(buf + len, size - len, "%s%s=%s", len ? ", " : "", name, word);
    else
        snprintf(buf + len, size - len, "%s%s=%zu", len ? ", " : "", name, n);
}

/* Appends, to in_force and asked (empty strings the caller gives), each
 * setting on which a and b differ, and returns how many do.
 * threshold_fixed is an effect of the first init, not a setting, and is
 * not compared. */
static int differences(const gb__config *a, const gb__config *b, char *in_force, char *asked, size_t size)
{
    int n = 0;
#define GB__DIFF(cond, name, wa, na, wb, nb)                                 \
    if (cond) {                                                              \
        describe_one(in_force, size, name, wa, na);                          \
        describe_one(asked, size, name, wb, nb);                             \
        n++;                                                                 \
    }
#define GB__DIFF_N(field) GB__DIFF(a->field != b->field, #field, NULL, (size_t)a->field, NULL, (size_t)b->field)
#define GB__WORD(c, field, yes, no) ((c)->field ? (yes) : (no))
    GB__DIFF(a->blocks != b->blocks, "blocks", GB__WORD(a, blocks == GB_BLOCKS_MAP, "map", "heap"), 0,
             GB__WORD(b, blocks == GB_BLOCKS_MAP, "map", "heap"), 0)
    GB__DIFF(a->growth != b->growth, "growth", GB__WORD(a, growth == GB_GROW_REMAP, "remap", "copy"), 0,
             GB__WORD(b, growth == GB_GROW_REMAP, "remap", "copy"), 0)
    GB__DIFF(a->small_slabs != b->small_slabs, "small", GB__WORD(a, small_slabs, "slab", "malloc"), 0,
             GB__WORD(b, small_slabs, "slab", "malloc"), 0)
    GB__DIFF(a->huge != b->huge || a->huge_learn != b->huge_learn, "huge", huge_word(a), 0, huge_word(b), 0)
    GB__DIFF(a->populate_4k != b->populate_4k || a->populate_huge != b->populate_huge, "populate",
             populate_word(a), 0, populate_word(b), 0)
    GB__DIFF_N(map_budget)
    GB__DIFF_N(first_block)
    GB__DIFF_N(block_cap)
    GB__DIFF_N(cache_bytes)
    GB__DIFF_N(stress)
#undef GB__WORD
#undef GB__DIFF_N
#undef GB__DIFF
    return n;
}

/* Names the code at addr: the file (the program or a shared library) it
 * was loaded from, where the C library can say. */
static void name_caller(const void *addr, char *buf, size_t size)
{
#ifdef GB_HAVE_DLADDR
    /* Zeroed: dladdr leaves it unwritten when it finds nothing. */
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (addr && dladdr(addr, &info) && info.dli_fname && *info.dli_fname) {
        snprintf(buf, size, "gb_init called from %s", info.dli_fname);
        return;
    }
#endif
    snprintf(buf, size, "gb_init called from %p", addr);
}

/* caller is the return address of gb_init, or NULL at a first use. */
static void init_with(const gb_options *o, const void *caller)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&gb__inited, &expected, 1)) {
        if (caller)
            name_caller(caller, origin, sizeof origin);
        else
            snprintf(origin, sizeof origin, "the first call into the runtime, with the defaults and the environment");
        configure(o);
        atomic_store_explicit(&gb__inited, 2, memory_order_release);
        return;
    }
    /* Another thread may be initialising: wait for it to publish. */
    while (atomic_load_explicit(&gb__inited, memory_order_acquire) != 2)
        sched_yield();
    if (!caller)
        return;
    /* A second gb_init, from a library and its host both built on
     * giveback, or one call after the runtime's first use: asking for the
     * settings in force is no mistake, and returns; asking for others
     * would silently do nothing, so it stops, naming both. */
    gb__config asked;
    resolve(o, &asked);
    char in_force_s[256] = "", asked_s[256] = "", who[sizeof origin];
    if (differences(&gb__cfg, &asked, in_force_s, asked_s, sizeof in_force_s) == 0)
        return;
    name_caller(caller, who, sizeof who);
    gb__die("gb_init: the runtime is already initialised with %s (set first by %s); "
            "this call (%s) asks for %s. Initialise once, or ask for the settings in force",
            in_force_s, origin, who, asked_s);
}

void gb__init_slow(void)
{
    gb_options o;
    gb_options_init(&o);
    init_with(&o, NULL);
}

/* The caller's options are `size` bytes: fields its header did not have
 * yet keep their defaults (zero), and fields it has that this library
 * does not know are not read. */
void gb_init_sized(const gb_options *o, size_t size)
{
    gb_options d;
    memset(&d, 0, sizeof d);
    if (o) {
        if (size < GB__OPTIONS_LEAST)
            gb__die("gb_init: options of %zu bytes are smaller than the %zu of their first ABI "
                    "(call through the macro, or pass sizeof of the struct)",
                    size, (size_t)GB__OPTIONS_LEAST);
        memcpy(&d, o, size < sizeof d ? size : sizeof d);
    }
    init_with(&d, __builtin_return_address(0));
}

const char *gb_build_kind(void)
{
    return gb__program_build ? "program" : "library";
}

const char *gb_blocks_name(void)
{
    gb__ensure_init();
    return gb__cfg.blocks == GB_BLOCKS_MAP ? "map" : "heap";
}

const char *gb_growth_name(void)
{
    gb__ensure_init();
    return gb__cfg.growth == GB_GROW_REMAP ? "remap" : "copy";
}

size_t gb_huge_page(void)
{
    gb__ensure_init();
    return gb__cfg.huge;
}

const char *gb_populate_name(void)
{
    gb__ensure_init();
    return populate_word(&gb__cfg);
}
