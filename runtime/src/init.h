/* init.h -- the settings the runtime runs with, settled once (init.c).
 *
 * Options come from gb_init, else from the environment, else from defaults
 * measured for this OS; gb__options below is their one list (the README's
 * list of options is made from it by ci/options.sh). Every entry point
 * calls gb__ensure_init first, so a program that never calls gb_init gets
 * the defaults on first use.
 */
#ifndef GB_INIT_H
#define GB_INIT_H

#include "base.h"

/* The smallest block worth a mapping of its own: 16 KiB, the page size on
 * Apple Silicon, or the page size if larger. Mapping smaller blocks one at a
 * time would round each up to a page. */
#define GB__MAP_MIN (16 * GB__KIB)

/* The glibc mmap threshold a program build fixes (the article's 64 KiB). */
#define GB__FIXED_THRESHOLD (64 * GB__KIB)

/* Settled at init and read-only afterwards. */
typedef struct gb__config {
    gb_blocks blocks;     /* MAP or HEAP, never AUTO after init */
    gb_growth growth;     /* REMAP or COPY, never AUTO after init */
    size_t map_min;       /* smallest mapped block: max(GB__MAP_MIN, page) */
    size_t map_budget;
    size_t first_block;
    size_t block_cap;
    size_t huge;          /* huge page size chunks from it up are advised for; 0 off */
    bool populate_4k;     /* populate fresh chained blocks in 4 KiB pages (gb_populate) */
    bool populate_huge;   /* populate fresh chained blocks advised for huge pages */
    bool huge_learn;      /* GB_HUGE=auto: each huge-size block's kind is chosen by the
                             measured cost of the populate steps of each (map.c) */
    unsigned stress;
    bool small_slabs;     /* chunks under map_min from slabs (map source) */
    size_t cache_bytes;   /* the process's block cache bound; 0 when off */
    bool threshold_fixed; /* this init called mallopt */
} gb__config;

extern gb__config gb__cfg;

/* One option: its gb_options field, its environment variable, how a value
 * of it is read, its default and what it is for. The table of them,
 * gb__options (init.c), drives reading the environment, checking gb_init's
 * options and the comparison that stops a second gb_init asking for other
 * settings; the tests walk it, and ci/options.sh reads it as text, so
 * every entry keeps one member a line and each string on its line. */
typedef struct gb__option {
    const char *field;  /* gb_options's member; gb_init's messages name the option by it */
    size_t offset;      /* where the member is in gb_options */
    size_t size;        /* its size: an int for an enum, else a size_t or an unsigned */
    const char *env;    /* the environment variable read when the member is 0; NULL: none */
    /* An enum: its type's name, its words ("auto", the zero value, first)
     * and the value each means. NULL type: a number. */
    const char *type;
    const char *words[3];
    int values[3];
    /* A number from the environment: what the message says it must be,
     * its unit (1, or 1024 for KiB), the largest it takes, and the word
     * that, like 0, turns it off, with the gb_options value that means. */
    const char *takes;
    unsigned long long unit, most;
    const char *off_word;
    size_t off;
    /* The setting in force, for gb_init's comparison and its message:
     * the word of a configuration, or where a number is in gb__config. */
    const char *(*in_force)(const gb__config *c);
    size_t cfg_offset, cfg_size;
    const char *dflt;  /* the default, as the README says it */
    const char *about; /* one line: what it chooses */
} gb__option;

extern const gb__option gb__options[];
extern const int gb__options_count;

/* Writes the setting of option t in c as gb_init's message shows it (a
 * word, or a number) into buf. */
void gb__option_in_force(const gb__option *t, const gb__config *c, char *buf, size_t size);
extern const int gb__program_build; /* 1 in the program build, 0 in the library (build_kind.c) */

/* Initialises on first use; cheap once done. gb__inited is 0 before, 1
 * while one thread initialises, 2 after. */
void gb__init_slow(void);
extern atomic_int gb__inited;
static inline void gb__ensure_init(void)
{
    if (GB__UNLIKELY(atomic_load_explicit(&gb__inited, memory_order_acquire) != 2))
        gb__init_slow();
}

#endif /* GB_INIT_H */
