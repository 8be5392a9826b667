/* reader.c -- the kit's C reader (gbgate_reader.h) on the test program.
 *
 * Runs "prog frees MIB 2" and "prog keeps MIB 2" as children, reads them
 * from outside at each checkpoint and prints one line per reading,
 * "<mode> <checkpoint> <rss_kib>", then "stops <mode> <n> status <s>", for
 * kit.bats to check: the reader must see both stops, and tell the child
 * that gave its memory back from the one that kept it.
 *
 * Usage: reader PROG [MIB]
 */
#include "gbgate_reader.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: reader PROG [MIB]\n", stderr);
        return 2;
    }
    const char *modes[] = {"frees", "keeps"};
    for (int m = 0; m < 2; m++) {
        char *args[] = {argv[1], (char *)modes[m], argc > 2 ? argv[2] : "64", "2", NULL};
        gbgate_child c;
        int rc = gbgate_run(&c, NULL, NULL, argv[1], args, NULL);
        const char *names[] = {"round-1", "round-2"};
        for (int i = 0; i < 2; i++) {
            const gbgate_mem *mem = gbgate_mem_at(&c, names[i]);
            printf("%s %s %ld\n", modes[m], names[i], mem ? mem->rss_kib : -1L);
        }
        printf("stops %s %d status %d\n", modes[m], c.stops, c.status);
        gbgate_child_free(&c);
        if (rc != 0)
            return 1;
    }
    return 0;
}
