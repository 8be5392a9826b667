/* build_kind.c -- whether this is the program build or the library build.
 *
 * The same objects make both builds; only this constant differs. A program
 * build is the process's own runtime and may tune process-wide malloc
 * settings at init; a library build is a guest in someone else's process
 * and never does. CMake compiles this file once with GB_PROGRAM_BUILD=1 and
 * once with 0.
 */
#include "init.h"

#ifndef GB_PROGRAM_BUILD
#error "GB_PROGRAM_BUILD must be defined to 0 or 1"
#endif

const int gb__program_build = GB_PROGRAM_BUILD;
