/* tools.h -- telling AddressSanitizer and Valgrind about stack switches.
 *
 * Both tools track one stack per thread; a coroutine switch moves the stack
 * pointer to memory they think is the heap. ASan must be told at every
 * switch (the fiber-switch annotations), or it reports false errors and
 * loses its fake stacks; Valgrind must know each stack's range, or Memcheck
 * takes every switch for a wild stack access. Without either tool these
 * are empty.
 */
#ifndef GB_TOOLS_H
#define GB_TOOLS_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define GB__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GB__ASAN 1
#endif
#endif

#if defined(GB__ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GB__NO_ASAN __attribute__((no_sanitize("address")))
#define gb__asan_start(fake, lo, size) __sanitizer_start_switch_fiber((fake), (lo), (size))
#define gb__asan_finish(fake, lo, size) __sanitizer_finish_switch_fiber((fake), (lo), (size))
#define gb__asan_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define gb__asan_poison(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#else
#define GB__NO_ASAN
#define gb__asan_start(fake, lo, size) ((void)(fake), (void)(lo), (void)(size))
#define gb__asan_finish(fake, lo, size) ((void)(fake), (void)(lo), (void)(size))
#define gb__asan_unpoison(p, n) ((void)(p), (void)(n))
#define gb__asan_poison(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define GB__VALGRIND 1
#endif
#endif

/* A conservative scan reads stack words that were never written (padding,
 * dead slots); Memcheck is told they are defined so it does not report the
 * scan's comparisons, as garbage collectors that scan stacks do. */
#if defined(GB__VALGRIND)
#include <valgrind/memcheck.h>
#define gb__vg_register(lo, hi) VALGRIND_STACK_REGISTER((lo), (hi))
#define gb__vg_deregister(id) VALGRIND_STACK_DEREGISTER(id)
#define gb__vg_make_defined(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#else
#define gb__vg_register(lo, hi) ((void)(lo), (void)(hi), 0u)
#define gb__vg_deregister(id) ((void)(id))
#define gb__vg_make_defined(p, n) ((void)(p), (void)(n))
#endif

#endif
