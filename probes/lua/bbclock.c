/* A wall clock for the Lua probe: PUC Lua's os.clock is CPU time and os.time has 1 s resolution,
 * so the probe needs clock_gettime; and the process's CPU clock, for the disturbance audit. Builds against the 5.1 API (LuaJIT loads it too) or 5.2+.
 * It also brackets each iteration for callgrind (`run --metric instructions`): count_start zeroes the
 * instruction counters, count_stop dumps them, so each dump is one iteration. Outside valgrind a client
 * request is a few instructions that do nothing; without valgrind's header they are not compiled at all,
 * and `counting` says so. */
#define _POSIX_C_SOURCE 199309L
#include <time.h>
#include "lua.h"
#include "lauxlib.h"

#include "../c/bbcount.h"

#ifdef CLOCK_MONOTONIC_RAW
#define BB_CLOCK CLOCK_MONOTONIC_RAW
#define BB_CLOCK_NAME "CLOCK_MONOTONIC_RAW"
#else
#define BB_CLOCK CLOCK_MONOTONIC
#define BB_CLOCK_NAME "CLOCK_MONOTONIC"
#endif

/* Seconds since an arbitrary epoch, as a double: ~0.1 ns resolution at uptimes of days. */
static int bb_now(lua_State *L) {
    struct timespec ts;
    if (clock_gettime(BB_CLOCK, &ts) != 0) return luaL_error(L, "clock_gettime failed");
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* CPU seconds this process has used (user + system): wall time well above it is time the machine took
 * away. Read outside the timed region. */
static int bb_cpu(lua_State *L) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return luaL_error(L, "clock_gettime failed");
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

static int bb_resolution(lua_State *L) {
    struct timespec ts;
    if (clock_getres(BB_CLOCK, &ts) != 0) return luaL_error(L, "clock_getres failed");
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

static int bb_count_start(lua_State *L) {
    (void)L;
    CALLGRIND_ZERO_STATS;
    return 0;
}

static int bb_count_stop(lua_State *L) {
    (void)L;
    CALLGRIND_DUMP_STATS;
    return 0;
}

static const luaL_Reg bb_functions[] = {
    {"now", bb_now},
    {"cpu", bb_cpu},
    {"resolution", bb_resolution},
    {"count_start", bb_count_start},
    {"count_stop", bb_count_stop},
    {NULL, NULL}
};

int luaopen_bbclock(lua_State *L) {
#if LUA_VERSION_NUM >= 502
    luaL_newlib(L, bb_functions);
#else
    luaL_register(L, "bbclock", bb_functions);
#endif
    lua_pushstring(L, BB_CLOCK_NAME);
    lua_setfield(L, -2, "name");
    lua_pushboolean(L, BB_COUNTING);
    lua_setfield(L, -2, "counting");
    return 1;
}
