/* Brackets around an iteration for callgrind (`bridgebench run --metric instructions`): a probe calls
 * CALLGRIND_ZERO_STATS before an iteration and CALLGRIND_DUMP_STATS after it, so callgrind writes one part an
 * iteration. Outside valgrind a client request is a few instructions that do nothing. Without valgrind's
 * header (Debian package valgrind), or with -DBB_COUNTING=0 (the tests' probe that cannot be counted), the
 * brackets compile to nothing and BB_COUNTING is 0. */
#ifndef BB_COUNT_H
#define BB_COUNT_H

#ifndef BB_COUNTING
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#define BB_COUNTING 1
#endif
#endif
#endif
#if defined(BB_COUNTING) && BB_COUNTING
#include <valgrind/callgrind.h>
#else
#undef BB_COUNTING
#define BB_COUNTING 0
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS
#endif

#endif
