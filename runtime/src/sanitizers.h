/* sanitizers.h -- telling AddressSanitizer, ThreadSanitizer and Valgrind
 * about stack switches and about memory given back but kept mapped.
 *
 * Each tool tracks one stack per thread; a coroutine switch moves the stack
 * pointer to memory they think is the heap. ASan must be told at every
 * switch (the fiber-switch annotations), or it reports false errors and
 * loses its fake stacks; TSan keeps a shadow call stack per thread, which a
 * coroutine that is dropped without finishing would leave frames on for
 * good (its CHECK on a 64K-frame trace stops the process), so each
 * coroutine is a TSan fiber of its own; Valgrind must know each stack's
 * range, or Memcheck takes every switch for a wild stack access. Memory the
 * runtime keeps mapped after giving it back (a cached block, a slab's
 * freed units) is poisoned for ASan, so a touch is reported as one of a
 * freed heap block would be. Without the tools these are empty.
 */
#ifndef GB_SANITIZERS_H
#define GB_SANITIZERS_H

#include <stddef.h>

/* Which tools this translation unit is built under, written once for the
 * runtime, its tests, benchmarks and fuzzers: GB__ASAN, GB__TSAN and
 * GB__UBSAN are defined (as 1) under ASan, TSan and UBSan. gcc says so with
 * __SANITIZE_*__ (UBSan: not at all before gcc 13, hence GB_UBSAN, which
 * CMake defines under -fsanitize=undefined), clang with __has_feature. */
#if defined(__SANITIZE_ADDRESS__)
#define GB__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GB__ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define GB__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GB__TSAN 1
#endif
#endif

#if defined(__SANITIZE_UNDEFINED__) || defined(GB_UBSAN)
#define GB__UBSAN 1
#elif defined(__has_feature)
#if __has_feature(undefined_behavior_sanitizer)
#define GB__UBSAN 1
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

/* TSan: a fiber per coroutine; the switch to it is announced right before
 * the stack switch, with no code that TSan instruments in between. The
 * fibers are kept in the coroutine (c->tsan_fiber, c->tsan_caller) only
 * under TSan: elsewhere these take the coroutine and name no field, so
 * the descriptor and the switch carry nothing for them. */
#if defined(GB__TSAN)
#include <sanitizer/tsan_interface.h>
#define gb__tsan_create(c) ((c)->tsan_fiber = __tsan_create_fiber(0))
#define gb__tsan_destroy(c) __tsan_destroy_fiber((c)->tsan_fiber)
#define gb__tsan_enter(c) ((c)->tsan_caller = __tsan_get_current_fiber(), __tsan_switch_to_fiber((c)->tsan_fiber, 0))
#define gb__tsan_leave(c) __tsan_switch_to_fiber((c)->tsan_caller, 0)
#else
#define gb__tsan_create(c) ((void)(c))
#define gb__tsan_destroy(c) ((void)(c))
#define gb__tsan_enter(c) ((void)(c))
#define gb__tsan_leave(c) ((void)(c))
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
