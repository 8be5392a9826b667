/* malloc-back.c -- poison: region blocks come from malloc and go back to it.
 *
 * Takes out fix/block_map.c. No block is ever the runtime's own mapping,
 * so what leaves the process on leave is whatever malloc decides: macOS's
 * xzone malloc keeps it all (the article: 841 MB held after leaving a
 * 400 MB region), glibc keeps it from the second round on unless a program
 * build fixed its threshold.
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

bool gb__fix_chunk_is_mapped(size_t n)
{
    (void)n;
    return false;
}
