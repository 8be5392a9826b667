/* config.c -- the per-process configuration: the runtime's settings,
 * from the environment or the binary's name, and the safepoint count.
 *
 * gb_init runs once per process, so the block source (GB_BLOCKS, or a
 * "map"/"heap" word in the binary's name), the growth path (GB_GROW, or
 * "copy"), where small chunks come from (GB_SMALL, or "slab"/"malloc"),
 * the block cache (GB_CACHE, or "nocache"), the stress setting
 * (GB_STRESS, or "stressN") and whether the runtime starts as shipped
 * (GB_FUZZ_DEFAULTS=1, or "defaults": no gb_init, default sizes) are
 * chosen once, before the first input; fuzz/configs.txt lists the
 * configurations the engines and ctest run in. The words of the name are
 * for ClusterFuzzLite, which runs each binary as it is, with no
 * environment of ours.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned stress; /* this process's GB_STRESS, for the safepoint sync */
static bool inited;

/* Words of the binary's name, between underscores
 * ("fuzz_runtime_map_copy_malloc_stress3"), choose what the environment
 * (GB_BLOCKS, GB_GROW, GB_SMALL, GB_CACHE, GB_STRESS, GB_FUZZ_DEFAULTS) does not:
 * ClusterFuzzLite runs each binary as it is, with no environment of ours. */
static bool name_has(const char *name, const char *word, unsigned *num)
{
    size_t w = strlen(word);
    for (const char *s = name; (s = strstr(s, word)) != NULL; s += w) {
        bool start = s == name || s[-1] == '_';
        const char *e = s + w;
        if (num) {
            if (!start || *e < '0' || *e > '9')
                continue;
            *num = (unsigned)strtoul(e, NULL, 10);
            return true;
        }
        if (start && (*e == 0 || *e == '_'))
            return true;
    }
    return false;
}

void init_process(const char *argv0)
{
    if (inited)
        return;
    inited = true;
    const char *name = "";
    if (argv0) {
        const char *slash = strrchr(argv0, '/');
        name = slash ? slash + 1 : argv0;
    }
    gb_options o;
    gb_options_init(&o);
    if (!getenv("GB_BLOCKS"))
        o.blocks = name_has(name, "heap", NULL) ? GB_BLOCKS_HEAP
                   : name_has(name, "map", NULL) ? GB_BLOCKS_MAP
                                                 : GB_BLOCKS_AUTO;
    if (!getenv("GB_GROW"))
        o.growth = name_has(name, "copy", NULL) ? GB_GROW_COPY : GB_GROW_AUTO;
    if (!getenv("GB_CACHE") && name_has(name, "nocache", NULL))
        o.cache_bytes = GB_CACHE_OFF;
    const char *env_small = getenv("GB_SMALL");
    if (!env_small)
        o.small = name_has(name, "malloc", NULL) ? GB_SMALL_MALLOC
                  : name_has(name, "slab", NULL) ? GB_SMALL_SLAB
                                                 : GB_SMALL_AUTO;
    const char *env_stress = getenv("GB_STRESS");
    if (env_stress && *env_stress)
        stress = (unsigned)strtoul(env_stress, NULL, 10);
    else if (name_has(name, "stress", &stress))
        o.stress = stress;
    const char *env_defaults = getenv("GB_FUZZ_DEFAULTS");
    bool defaults = env_defaults ? strcmp(env_defaults, "1") == 0 : name_has(name, "defaults", NULL);
    if (defaults) {
        /* As shipped: no gb_init, the first call initialises the runtime
         * with the default sizes and budget (and the environment). */
        gb_stats st;
        gb_stats_get(&st);
    } else {
        const char *env_blocks = getenv("GB_BLOCKS");
        o.first_block = FZ_FIRST_BLOCK;
        o.block_cap = FZ_BLOCK_CAP;
        if (o.blocks == GB_BLOCKS_MAP || (env_blocks && strcmp(env_blocks, "map") == 0))
            o.map_budget = FZ_MAP_BUDGET;
        gb_init(&o);
    }
    faults_install();
    const char *small = o.small == GB_SMALL_MALLOC ? "malloc"
                        : o.small == GB_SMALL_SLAB    ? "slab"
                        : env_small && *env_small     ? env_small
                                                      : "auto";
    const char *cache = o.cache_bytes == GB_CACHE_OFF ? "off"
                        : getenv("GB_CACHE")          ? getenv("GB_CACHE")
                                                      : "default";
    fprintf(stderr, "fuzz_runtime: %s build, blocks=%s, growth=%s, small=%s, cache=%s, stress=%u, %s\n",
            gb_build_kind(), gb_blocks_name(), gb_growth_name(), small, cache, stress,
            defaults ? "default sizes (lazy init)" : "small blocks (gb_init)");
}

/* With stress N, every N-th safepoint sweeps; the count carries over from
 * input to input. Bring it to zero so that an input does the same thing
 * alone as after any other. */
void sync_safepoints(void)
{
    if (!stress)
        return;
    uint64_t sweeps = stats().sweeps;
    for (unsigned i = 0; i < stress && stats().sweeps == sweeps; i++)
        gb_safepoint();
}
