/* init.c -- options, environment and the one-time initialisation.
 *
 * The runtime settles its configuration once per process: the OS table, the
 * block source, the growth path, the mapping budget and, in a program build
 * on glibc, malloc's mmap threshold. An explicit option wins; an AUTO (or
 * 0) option defers to its environment variable, so that an unchanged
 * program can be run under every choice; a malformed variable stops the
 * process rather than being ignored. Every option is written once, in the
 * table gb__options, which the parsing, the check of gb_init's options
 * and the comparison of a second gb_init's settings all read.
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

/* The options, in the order gb_init's message and the README list them. */
enum {
    OPT_BLOCKS,
    OPT_GROWTH,
    OPT_SMALL,
    OPT_HUGE,
    OPT_POPULATE,
    OPT_MAP_BUDGET,
    OPT_FIRST_BLOCK,
    OPT_BLOCK_CAP,
    OPT_CACHE,
    OPT_STRESS,
    OPT_COUNT
};

static const char *blocks_word(const gb__config *c)
{
    return c->blocks == GB_BLOCKS_MAP ? "map" : "heap";
}

static const char *growth_word(const gb__config *c)
{
    return c->growth == GB_GROW_REMAP ? "remap" : "copy";
}

static const char *small_word(const gb__config *c)
{
    return c->small_slabs ? "slab" : "malloc";
}

/* The word for a configuration's huge pages: "auto" where each huge-size
 * block's kind is measured, "on" where every one is advised, or "off". */
static const char *huge_word(const gb__config *c)
{
    return !c->huge ? "off" : c->huge_learn ? "auto" : "on";
}

/* The word for which fresh blocks a configuration populates. */
static const char *populate_word(const gb__config *c)
{
    return c->populate_huge ? "all" : c->populate_4k ? "4k" : "off";
}

/* A member of gb_options, named once: its name, where it is, its size. A
 * number's setting in force is the gb__config member of the same name. */
#define GB__FIELD(f) .field = #f, .offset = offsetof(gb_options, f), .size = sizeof(((gb_options *)0)->f)
#define GB__NUMBER(f)                                                                                        \
    GB__FIELD(f), .cfg_offset = offsetof(gb__config, f), .cfg_size = sizeof(((gb__config *)0)->f)

/* Every option, once. ci/options.sh reads the lines of this table (a
 * GB__FIELD or GB__NUMBER line, and the .env, .words, .takes, .dflt and
 * .about lines) to make the README's list, so each of those stays on one
 * line, its strings without a double quote or a bar. */
const gb__option gb__options[OPT_COUNT] = {
    [OPT_BLOCKS] = {
        GB__FIELD(blocks),
        .env = "GB_BLOCKS",
        .type = "gb_blocks",
        .words = {"auto", "map", "heap"},
        .values = {GB_BLOCKS_AUTO, GB_BLOCKS_MAP, GB_BLOCKS_HEAP},
        .in_force = blocks_word,
        .dflt = "`map`, in every build on every OS",
        .about = "where region blocks come from: the runtime's own mappings, or malloc",
    },
    [OPT_GROWTH] = {
        GB__FIELD(growth),
        .env = "GB_GROW",
        .type = "gb_growth",
        .words = {"auto", "remap", "copy"},
        .values = {GB_GROW_AUTO, GB_GROW_REMAP, GB_GROW_COPY},
        .in_force = growth_word,
        .dflt = "`remap` where the OS has mremap, else `copy`",
        .about = "how a mapped block grows: mremap, or map a new one, copy and unmap",
    },
    [OPT_SMALL] = {
        GB__FIELD(small),
        .env = "GB_SMALL",
        .type = "gb_small",
        .words = {"auto", "slab", "malloc"},
        .values = {GB_SMALL_AUTO, GB_SMALL_SLAB, GB_SMALL_MALLOC},
        .in_force = small_word,
        .dflt = "`slab`",
        .about = "where chunks too small for a mapping of their own come from, with the map source",
    },
    [OPT_HUGE] = {
        GB__FIELD(huge),
        .env = "GB_HUGE",
        .type = "gb_huge",
        .words = {"auto", "on", "off"},
        .values = {GB_HUGE_AUTO, GB_HUGE_ON, GB_HUGE_OFF},
        .in_force = huge_word,
        .dflt = "`auto`: where the OS gives huge pages, each block of huge size takes the kind its timed steps favour",
        .about = "whether mapped blocks of a huge page or more are advised for transparent huge pages",
    },
    [OPT_POPULATE] = {
        GB__FIELD(populate),
        .env = "GB_POPULATE",
        .type = "gb_populate",
        .words = {"auto", "on", "off"},
        .values = {GB_POPULATE_AUTO, GB_POPULATE_ON, GB_POPULATE_OFF},
        .in_force = populate_word,
        .dflt = "`auto`: as `on`, where the OS has the call",
        .about = "whether a region's freshly mapped blocks are made resident in steps ahead of its writes",
    },
    [OPT_MAP_BUDGET] = {
        GB__NUMBER(map_budget),
        .takes = "a number of mappings",
        .dflt = "`vm.max_map_count` less an eighth, at least 1024 below it; no bound where the OS sets none",
        .about = "the most mappings the runtime keeps at once; past it blocks come from malloc",
    },
    [OPT_FIRST_BLOCK] = {
        GB__NUMBER(first_block),
        .takes = "bytes, at least 256",
        .dflt = "4 KiB",
        .about = "a region's first block",
    },
    [OPT_BLOCK_CAP] = {
        GB__NUMBER(block_cap),
        .takes = "bytes, at least first_block",
        .dflt = "64 MiB with huge pages, else 1 MiB",
        .about = "the largest block of a region's chain; a larger allocation gets a block of its own",
    },
    [OPT_CACHE] = {
        GB__NUMBER(cache_bytes),
        .env = "GB_CACHE",
        .takes = "a size in KiB or off",
        .unit = GB__KIB,
        .most = SIZE_MAX >> 10,
        .off_word = "off",
        .off = GB_CACHE_OFF,
        .dflt = "8 MiB (`GB_CACHE_DEFAULT`)",
        .about = "the bytes of given-back mapped blocks all threads keep, resident, for their next regions",
    },
    [OPT_STRESS] = {
        GB__NUMBER(stress),
        .env = "GB_STRESS",
        .takes = "a whole number of safepoints (0 turns it off)",
        .unit = 1,
        .most = 1000000000,
        .dflt = "0: never",
        .about = "a sweep every N calls of gb_safepoint",
    },
};
const int gb__options_count = OPT_COUNT;

#undef GB__NUMBER
#undef GB__FIELD

/* The value of option t's member in o. */
static size_t field_of(const gb_options *o, const gb__option *t)
{
    const char *p = (const char *)o + t->offset;
    if (t->type) {
        int v;
        memcpy(&v, p, sizeof v);
        return (size_t)(unsigned)v;
    }
    if (t->size == sizeof(unsigned)) {
        unsigned v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    size_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The value o asks for option t: its member when that is not 0, else its
 * environment variable's, else 0, which leaves it to its default. An
 * enum's value is one of its type, a number's is in units of the
 * gb_options member; the word that turns a number off, or 0, asks for the
 * member's off value. A value outside its enum, a word the variable does
 * not take and a malformed number stop the process, naming the option and
 * what it takes. */
static size_t asked(const gb_options *o, const gb__option *t)
{
    size_t v = field_of(o, t);
    if (v) {
        if (t->type && (int)v != t->values[1] && (int)v != t->values[2])
            gb__die("gb_init: %s=%d is not a %s value", t->field, (int)v, t->type);
        return v;
    }
    const char *s = t->env ? getenv(t->env) : NULL;
    if (!s || !*s)
        return 0;
    if (t->type) {
        for (int i = 0; i < 3; i++)
            if (strcmp(s, t->words[i]) == 0)
                return (size_t)(unsigned)t->values[i];
        gb__die("%s=%s: expected %s, %s or %s", t->env, s, t->words[1], t->words[2], t->words[0]);
    }
    if (t->off_word && strcmp(s, t->off_word) == 0)
        return t->off;
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    if (*end || s[0] == '-' || n > t->most)
        gb__die("%s=%s: expected %s", t->env, s, t->takes);
    return n ? (size_t)(n * t->unit) : t->off;
}

void gb__option_in_force(const gb__option *t, const gb__config *c, char *buf, size_t size)
{
    if (t->in_force) {
        snprintf(buf, size, "%s", t->in_force(c));
        return;
    }
    const char *p = (const char *)c + t->cfg_offset;
    size_t n;
    if (t->cfg_size == sizeof(unsigned)) {
        unsigned u;
        memcpy(&u, p, sizeof u);
        n = u;
    } else {
        memcpy(&n, p, sizeof n);
    }
    snprintf(buf, size, "%zu", n);
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

    c.blocks = (gb_blocks)asked(o, &gb__options[OPT_BLOCKS]);
    /* The default is the runtime's own mappings in every build on every
     * OS: it is the faster source here (the README's block-source table)
     * and the only one whose small blocks leave too; from malloc, glibc
     * keeps a small block whenever anything allocated after it is live. */
    if (c.blocks == GB_BLOCKS_AUTO)
        c.blocks = GB_BLOCKS_MAP;

    c.growth = (gb_growth)asked(o, &gb__options[OPT_GROWTH]);
    if (c.growth == GB_GROW_AUTO)
        c.growth = gb__os.remap ? GB_GROW_REMAP : GB_GROW_COPY;
    if (c.growth == GB_GROW_REMAP && !gb__os.remap)
        gb__die("growth path remap asked for, but %s has no mremap (use copy)", gb__os.name);

    c.map_min = gb__os.page_size > GB__MAP_MIN ? gb__os.page_size : GB__MAP_MIN;
    c.map_budget = asked(o, &gb__options[OPT_MAP_BUDGET]);
    if (!c.map_budget)
        c.map_budget = default_budget(gb__os.map_limit);

    /* Huge pages pay where a block is mostly written: a fault then fills
     * 2 MiB for little more than the cost of zeroing it, about a tenth of
     * what 512 faults of 4 KiB cost (churn_bench's physics). They apply
     * to mapped blocks only, and only past a huge page, so a small region
     * is not made to fault in 2 MiB. */
    gb_huge huge = (gb_huge)asked(o, &gb__options[OPT_HUGE]);
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
    gb_populate pop = (gb_populate)asked(o, &gb__options[OPT_POPULATE]);
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

    c.first_block = asked(o, &gb__options[OPT_FIRST_BLOCK]);
    if (!c.first_block)
        c.first_block = 4 * GB__KIB;
    c.block_cap = asked(o, &gb__options[OPT_BLOCK_CAP]);
    if (!c.block_cap)
        c.block_cap = c.huge ? 64 * GB__MIB : GB__MIB;
    if (c.first_block < 256 || c.block_cap < c.first_block)
        gb__die("gb_init: first_block (%zu) must be at least 256 and at most block_cap (%zu)",
                c.first_block, c.block_cap);
    c.stress = (unsigned)asked(o, &gb__options[OPT_STRESS]);
    /* With the map source, chunks too small for a mapping of their own
     * come from the runtime's slabs, so they leave too; GB_SMALL=malloc
     * (or the option) puts them back in malloc, for comparison. */
    gb_small small = (gb_small)asked(o, &gb__options[OPT_SMALL]);
    c.small_slabs = c.blocks == GB_BLOCKS_MAP && small != GB_SMALL_MALLOC;
    /* The block cache bound: 0 asks for the default, GB_CACHE_OFF for none. */
    size_t cache = asked(o, &gb__options[OPT_CACHE]);
    c.cache_bytes = cache == GB_CACHE_OFF ? 0 : cache ? cache : GB_CACHE_DEFAULT;
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

/* Appends "name=value" for one setting to buf, comma-separated. */
static void describe_one(char *buf, size_t size, const char *name, const char *value)
{
    size_t len = strlen(buf);
    if (len >= size)
        return;
    snprintf(buf + len, size - len, "%s%s=%s", len ? ", " : "", name, value);
}

/* Appends, to in_force and asked (empty strings the caller gives), each
 * option on which a and b differ, with its setting in each, and returns
 * how many do. threshold_fixed is an effect of the first init, not an
 * option, and is not compared. */
static int differences(const gb__config *a, const gb__config *b, char *in_force, char *asked_s, size_t size)
{
    int n = 0;
    for (int i = 0; i < OPT_COUNT; i++) {
        char va[32], vb[32];
        gb__option_in_force(&gb__options[i], a, va, sizeof va);
        gb__option_in_force(&gb__options[i], b, vb, sizeof vb);
        if (strcmp(va, vb) != 0) {
            describe_one(in_force, size, gb__options[i].field, va);
            describe_one(asked_s, size, gb__options[i].field, vb);
            n++;
        }
    }
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
    gb__config want;
    resolve(o, &want);
    char in_force_s[256] = "", asked_s[256] = "", who[sizeof origin];
    if (differences(&gb__cfg, &want, in_force_s, asked_s, sizeof in_force_s) == 0)
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
    return blocks_word(&gb__cfg);
}

const char *gb_growth_name(void)
{
    gb__ensure_init();
    return growth_word(&gb__cfg);
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
