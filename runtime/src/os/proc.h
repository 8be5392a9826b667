/* proc.h -- the resident size as Linux's /proc tells it. */
#ifndef GB_OS_PROC_H
#define GB_OS_PROC_H

#include "giveback.h"

/* Fills, in bytes, the resident size from /proc/self/statm (in the
 * machine's pages), its peak (VmHWM), LazyFree and AnonHugePages; a figure
 * a file does not give stays 0. Returns 0, or -1 when statm cannot be read. */
int gb__proc_resident(gb_resident *out);

#endif
