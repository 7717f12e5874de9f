/*
 * PELT (optimal partitioning with pruning) for the Gaussian mean-and-variance cost.
 *
 * This is the compiled twin of _pelt_numpy() in changepoints.py. The two must give bit-identical
 * results, so every floating-point operation here is done in the same order as there, the logarithm
 * is our own (bit fields, a 256-entry table and a polynomial, in plain IEEE operations; libm's log and
 * numpy's differ in the last bit now and then), and the file is compiled with -ffp-contract=off so that
 * no multiply-add gets fused.
 *
 * Inputs are prefix sums of the (normalised) data: s1[k] = sum of x[0..k), s2[k] = sum of x[0..k)^2,
 * k = 0..n. Segment [t, s) costs m * (log(v) + kconst) with m = s - t, v its variance (divided by m),
 * floored at vfloor, and kconst = log(2 pi) + 1. tab: 256 pairs (log c, 1/c) from the caller, see bb_log.
 *
 * Work buffers are owned by the caller, each with room for n + 1 values: F, last, and the candidate arrays
 * cand, c1, c2, cf, vals (each candidate's data is kept contiguous so that the cost loop streams).
 * The changepoints (segment starts, ascending) are written to out (room for n); their count is returned.
 * want: 0 = the fastest variant of the cost loop this CPU runs, 2 = the portable one (for testing).
 */
#include <stdint.h>
#include <string.h>

#define BB_LN2 0x1.62e42fefa39efp-1
#define BB_MANT UINT64_C(0x000fffffffffffff)
#define BB_ONE UINT64_C(0x3ff0000000000000)
#define BB_CELL UINT64_C(0x000ff00000000000) /* the top 8 bits of the mantissa: 256 cells */
#define BB_HALF_CELL (UINT64_C(1) << 43)
#define BB_MAGIC UINT64_C(0x4330000000000000) /* (bits of 2^52) | k, read as a double, is 2^52 + k */

/* Natural log of a positive normal double v = m * 2^(E - 1023), m in [1, 2):
 * log(v) = (E - 1023) log 2 + log(c) + log1p(u), where c is the centre of the 1/256-wide cell holding m
 * (m's top 8 mantissa bits, then a 1 bit), u = (m - c) / c with |u| < 1/512, and log1p(u) is its Taylor
 * polynomial to u^5 (error < 1e-17), evaluated as (u - u^2/2) + u^3 ((1/3 - u/4) + u^2/5) to keep the
 * dependency chain short. j = the cell's number; the table (tab[2j] = log(c), tab[2j + 1] = 1/c) comes
 * from the caller, so both backends use the same numbers. m - c is exact, and so are the integer to
 * double conversions (the 2^52 trick); no libm. */
static inline double bb_log(double v, const double *tab)
{
    uint64_t bits, b;
    double m, c, e, u, u2;
    memcpy(&bits, &v, sizeof bits);
    int64_t j = (int64_t)((bits & BB_CELL) >> 44);
    b = (bits >> 52) | BB_MAGIC;
    memcpy(&e, &b, sizeof e);
    e = (e - 0x1p52) - 1023.0;
    b = (bits & BB_MANT) | BB_ONE;
    memcpy(&m, &b, sizeof m);
    b = (bits & BB_CELL) | BB_ONE | BB_HALF_CELL;
    memcpy(&c, &b, sizeof c);
    u = (m - c) * tab[2 * j + 1];
    u2 = u * u;
    return e * BB_LN2 + (tab[2 * j] + ((u - u2 * 0.5) + (u2 * u) * ((1.0 / 3.0 - u * 0.25) + u2 * 0.2)));
}

/* cf + cost of the segment [t, s), from prefix sums. */
static inline double bb_value(int64_t s, int64_t t, double s1s, double s2s, double c1, double c2, double cf,
                              const double *tab, double vfloor, double kconst)
{
    double ml = (double)(s - t);
    double inv = 1.0 / ml;
    double d1 = s1s - c1;
    double d2 = s2s - c2;
    double v = (d2 - d1 * d1 * inv) * inv;
    v = v < vfloor ? vfloor : v;
    return cf + ml * (bb_log(v, tab) + kconst);
}

/* bb_values(): vals[i] = cf[i] + cost([cand[i], s)) + pen for all nc candidates, whose data (prefix sums
 * c1, c2 and the optimal cost cf before them) is kept in arrays of their own so that access is contiguous.
 * It is written once, as a macro over the compiler's generic vector types, W candidates at a time, and
 * instantiated for 2 lanes (SSE2, NEON, or plain scalar code, as the target allows) and, on x86-64, for
 * 4 lanes with AVX2, chosen at run time. Lane by lane these are the same IEEE operations as bb_value()
 * (which does the last nc mod W candidates), so every variant gives identical results. */
typedef double bb_v2d __attribute__((vector_size(16)));
typedef int64_t bb_v2i __attribute__((vector_size(16)));
typedef uint64_t bb_v2u __attribute__((vector_size(16)));

#define BB_DEFINE_VALUES(NAME, ATTR, VD, VI, VU, W)                                                        \
    ATTR static void NAME(int64_t nc, int64_t s, double s1s, double s2s, const int64_t *cand,              \
                          const double *c1, const double *c2, const double *cf, const double *tab,         \
                          double pen, double vfloor, double kconst, double *vals)                          \
    {                                                                                                      \
        int64_t i = 0;                                                                                     \
        for (; i + (W) <= nc; i += (W)) {                                                                  \
            VI t, len, mask;                                                                               \
            VU bits, b, j;                                                                                 \
            VD a1, a2, af, ml, il, d1, d2, v, e, m, c, u, u2, lc, ic, fl, r;                               \
            memcpy(&t, cand + i, sizeof t);                                                                \
            memcpy(&a1, c1 + i, sizeof a1);                                                                \
            memcpy(&a2, c2 + i, sizeof a2);                                                                \
            memcpy(&af, cf + i, sizeof af);                                                                \
            len = s - t;                                                                                   \
            b = (VU)len | BB_MAGIC;                                                                        \
            ml = (VD)b - 0x1p52;                                                                           \
            il = 1.0 / ml;                                                                                 \
            d1 = s1s - a1;                                                                                 \
            d2 = s2s - a2;                                                                                 \
            v = (d2 - d1 * d1 * il) * il;                                                                  \
            fl = (VD){0} + vfloor;                                                                         \
            mask = v < fl;                                                                                 \
            v = (VD)(((VI)fl & mask) | ((VI)v & ~mask));                                                   \
            bits = (VU)v;                                                                                  \
            j = (bits & BB_CELL) >> 44;                                                                    \
            b = (bits >> 52) | BB_MAGIC;                                                                   \
            e = ((VD)b - 0x1p52) - 1023.0;                                                                 \
            m = (VD)((bits & BB_MANT) | BB_ONE);                                                           \
            c = (VD)((bits & BB_CELL) | BB_ONE | BB_HALF_CELL);                                            \
            for (int k = 0; k < (W); k++) {                                                                \
                lc[k] = tab[2 * j[k]];                                                                     \
                ic[k] = tab[2 * j[k] + 1];                                                                 \
            }                                                                                              \
            u = (m - c) * ic;                                                                              \
            u2 = u * u;                                                                                    \
            r = af + ml * ((e * BB_LN2 + (lc + ((u - u2 * 0.5) + (u2 * u) * ((1.0 / 3.0 - u * 0.25) + u2 * 0.2)))) \
                           + kconst);                                                                      \
            r = r + pen;                                                                                   \
            memcpy(vals + i, &r, sizeof r);                                                                \
        }                                                                                                  \
        for (; i < nc; i++) {                                                                              \
            vals[i] = bb_value(s, cand[i], s1s, s2s, c1[i], c2[i], cf[i], tab, vfloor, kconst) + pen;      \
        }                                                                                                  \
    }

BB_DEFINE_VALUES(bb_values_2, , bb_v2d, bb_v2i, bb_v2u, 2)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BB_HAVE_AVX2_PATH 1
typedef double bb_v4d __attribute__((vector_size(32)));
typedef int64_t bb_v4i __attribute__((vector_size(32)));
typedef uint64_t bb_v4u __attribute__((vector_size(32)));
BB_DEFINE_VALUES(bb_values_4, __attribute__((target("avx2"))), bb_v4d, bb_v4i, bb_v4u, 4)
#endif

/* The first index of the smallest value (no NaNs here). Four running minima, then a scan for the first
 * equal value: the same answer as a plain left-to-right scan, without its long dependency chain. */
static int64_t bb_argmin(const double *vals, int64_t nc)
{
    double m0 = vals[0], m1 = vals[0], m2 = vals[0], m3 = vals[0];
    int64_t i = 0;
    for (; i + 4 <= nc; i += 4) {
        m0 = vals[i] < m0 ? vals[i] : m0;
        m1 = vals[i + 1] < m1 ? vals[i + 1] : m1;
        m2 = vals[i + 2] < m2 ? vals[i + 2] : m2;
        m3 = vals[i + 3] < m3 ? vals[i + 3] : m3;
    }
    for (; i < nc; i++) {
        m0 = vals[i] < m0 ? vals[i] : m0;
    }
    m0 = m1 < m0 ? m1 : m0;
    m0 = m2 < m0 ? m2 : m0;
    m0 = m3 < m0 ? m3 : m0;
    for (i = 0; i < nc; i++) {
        if (vals[i] == m0) {
            return i;
        }
    }
    return 0;
}

typedef void (*bb_values_fn)(int64_t, int64_t, double, double, const int64_t *, const double *,
                             const double *, const double *, const double *, double, double, double, double *);

/* Which bb_values() to use: 4 = the AVX2 one, 2 = the portable one. want = 0 picks the best this CPU has. */
static bb_values_fn bb_pick(int64_t want, int64_t *lanes)
{
#ifdef BB_HAVE_AVX2_PATH
    if (want != 2) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2")) {
            *lanes = 4;
            return bb_values_4;
        }
    }
#endif
    (void)want;
    *lanes = 2;
    return bb_values_2;
}

int64_t bb_lanes(int64_t want)
{
    int64_t lanes;
    bb_pick(want, &lanes);
    return lanes;
}

int64_t bb_pelt(const double *s1, const double *s2, int64_t n, int64_t min_size, double pen, double vfloor,
                double kconst, const double *tab, double *F, int64_t *last, int64_t *cand, double *c1,
                double *c2, double *cf, double *vals, int64_t *out, int64_t want)
{
    int64_t s, i, k, nc, best_i, t, count, lanes, zero = 0;
    double best, limit;
    bb_values_fn bb_values = bb_pick(want, &lanes);

    if (min_size < 1 || n < 2 * min_size) {
        return 0;
    }
    F[0] = -pen;
    last[0] = 0;
    for (s = min_size; s < 2 * min_size; s++) {
        bb_values(1, s, s1[s], s2[s], &zero, s1, s2, F, tab, pen, vfloor, kconst, vals);
        F[s] = vals[0];
        last[s] = 0;
    }
    nc = 0;
    for (t = 0; t <= min_size; t += min_size) {
        cand[nc] = t;
        c1[nc] = s1[t];
        c2[nc] = s2[t];
        cf[nc] = F[t];
        nc++;
    }
    for (s = 2 * min_size; s <= n; s++) {
        bb_values(nc, s, s1[s], s2[s], cand, c1, c2, cf, tab, pen, vfloor, kconst, vals);
        best_i = bb_argmin(vals, nc);
        best = vals[best_i];
        F[s] = best;
        last[s] = cand[best_i];
        /* PELT's pruning: a start that cannot beat the optimum even with a free changepoint is dropped. */
        limit = best + pen;
        k = 0;
        while (k < nc && vals[k] <= limit) { /* usually nothing is dropped: skip the copying */
            k++;
        }
        for (i = k; i < nc; i++) {
            if (vals[i] <= limit) {
                cand[k] = cand[i];
                c1[k] = c1[i];
                c2[k] = c2[i];
                cf[k] = cf[i];
                k++;
            }
        }
        t = s - min_size + 1;
        cand[k] = t;
        c1[k] = s1[t];
        c2[k] = s2[t];
        cf[k] = F[t];
        nc = k + 1;
    }
    /* Walk back from n; the segment starts come out in descending order. */
    count = 0;
    t = last[n];
    while (t > 0) {
        out[count] = t;
        count++;
        t = last[t];
    }
    for (i = 0; i < count / 2; i++) {
        int64_t tmp = out[i];
        out[i] = out[count - 1 - i];
        out[count - 1 - i] = tmp;
    }
    return count;
}
