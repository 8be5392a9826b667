/* init_guest.c -- a library built on giveback, loaded by a host that uses
 * giveback too (tests/init.c): both initialise the one runtime of the
 * process, each with the settings it was written for. */
#include "init_guest.h"

#include <string.h>

bool gbt_guest_start(size_t cache_bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = cache_bytes;
    gb_init(&o);
    gb_region *r = gb_enter();
    char *p = gb_alloc(100);
    memset(p, 'g', 100);
    bool ok = p[0] == 'g' && p[99] == 'g';
    gb_leave(r);
    return ok;
}
