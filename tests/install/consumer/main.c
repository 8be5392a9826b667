/* main.c -- the smallest real use of the installed library. */
#include <giveback.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    gb_region *r = gb_enter();
    char *s = gb_alloc(64);
    strcpy(s, "giveback");
    printf("%s %d.%d.%d %s\n", s, GB_VERSION_MAJOR, GB_VERSION_MINOR, GB_VERSION_PATCH, gb_build_kind());
    gb_leave(r);
    gb_stats st;
    gb_stats_get(&st);
    return st.bytes_heap + st.bytes_mapped == 0 ? 0 : 1;
}
