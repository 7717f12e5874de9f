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
#include <math.h>
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

/* The cost of the segment [t, s) alone (bb_value without the optimal cost before it). */
static double bb_cost(const double *s1, const double *s2, int64_t t, int64_t s, const double *tab,
                      double vfloor, double kconst)
{
    return bb_value(s, t, s1[s], s2[s], s1[t], s2[t], 0.0, tab, vfloor, kconst);
}

/* The unfloored variance of [t, s), as bb_value computes it, and its mean squared. */
static double bb_variance(const double *s1, const double *s2, int64_t t, int64_t s, double *mean2)
{
    double ml = (double)(s - t);
    double inv = 1.0 / ml;
    double d1 = s1[s] - s1[t];
    double d2 = s2[s] - s2[t];
    *mean2 = (d1 * inv) * (d1 * inv);
    return (d2 - d1 * d1 * inv) * inv;
}

/*
 * Skipping candidates that provably cannot win: the same optimum, far fewer cost evaluations.
 *
 * PELT cannot prune a series without changepoints (a split never raises the cost, so no start is ever
 * ruled out) and its work grows with the square of the length. But on such a series almost every start
 * t loses to the current best start a by a wide margin, and that margin can only shrink slowly. Write
 * G(x, y, z) = C(x, z) - C(x, y) - C(y, z), the cost saved by splitting [x, z) at y. For a < t < s0 < s
 * the sums telescope exactly, for any cost function:
 *     G(a, t, s) = G(a, t, s0) + G(a, s0, s) - G(t, s0, s),
 * and the value of start t minus that of start a is F[t] - F[a] - C(a, t) - G(a, t, s). Splitting never
 * raises the Gaussian cost (G >= 0, under the conditions on the variance floor below), so from an exact
 * evaluation of every start at s0,
 *     value_t(s) - value_a(s) >= value_t(s0) - value_a(s0) - G(a, s0, s),
 * and G(a, s0, s) is one number per step, the same for every t. An "epoch" starts with a full evaluation
 * at s0 and its best start a; a start t >= a + min_size whose margin over a exceeds the threshold K is
 * set aside, and each later step evaluates only the others (the starts before a, recent ones, new ones).
 * The epoch ends (and the step is done in full) when max G(a, s0, s) nears K, when the best start is no
 * longer a, or after L steps. While a stays best, a set-aside start is not pruned either: F[t] <= F[a] +
 * C(a, t) + pen and C(a, t) + C(t, s) <= C(a, s) give value_t(s) <= F[s] + pen. So the candidates kept,
 * every F[s] and every changepoint are those of the plain search, which the tests check bit for bit.
 *
 * The variance floor f (a segment's variance is taken as at least f) can break G >= 0 for segments whose
 * variance is near f, so a start is set aside only when [t, s0) and [a, t) have variances well above f
 * and above the prefix sums' rounding: then G(t, s0, s) >= 0 for any block [s0, s) up to L long (worked
 * through: it needs log(v/f) >= 1 + (s - s0)/(s0 - t)), and G(a, t, s) >= 0. The margin added to K
 * covers the rounding of the costs (they are sums of terms of that magnitude, each to a few ulps).
 */
/* Epochs start once there are this many starts; an epoch is at most L steps, L^2 ~ BB_EPOCH_FACTOR x the
 * starts (the first pass costs as many evaluations as the starts, each later step about as many as the
 * starts added since: L ~ sqrt(starts) balances the two); K = BB_K_SHARE x the penalty (on a series without
 * changepoints a start's margin is the penalty less a few units, so half of it leaves the bound room to
 * grow). These values change the work only, never the result. */
#define BB_MIN_EPOCH_CANDIDATES 64
#define BB_EPOCH_FACTOR 3
#define BB_K_SHARE 0.5

/* One start set aside for an epoch, if the variance conditions above let it be. */
static int bb_can_set_aside(const double *s1, const double *s2, int64_t a, int64_t t, int64_t s0, int64_t L,
                            int64_t min_size, double vfloor)
{
    double mean2, v_ts, v_at;
    int64_t m1 = s0 - t;
    if (t < a + min_size) {
        return 0;
    }
    v_ts = bb_variance(s1, s2, t, s0, &mean2);
    if (!(v_ts >= 1e-8 * (1.0 + mean2))) {
        return 0;
    }
    /* log(v/f) >= 1 + L/m1 with room to spare: e^2.05 < 8 for m1 >= L, e^9.05 < 8600 for m1 >= L/8. */
    if (!((m1 >= L && v_ts >= 8.0 * vfloor) || (8 * m1 >= L && v_ts >= 8600.0 * vfloor))) {
        return 0;
    }
    v_at = bb_variance(s1, s2, a, t, &mean2);
    return v_at >= 2.0 * vfloor && v_at >= 1e-8 * (1.0 + mean2);
}

int64_t bb_pelt(const double *s1, const double *s2, int64_t n, int64_t min_size, double pen, double vfloor,
                double kconst, const double *tab, double *F, int64_t *last, int64_t *cand, double *c1,
                double *c2, double *cf, double *vals, int64_t *out, int64_t want, int64_t skip, int64_t *alive,
                int64_t *aidx, int64_t *acand, double *a1, double *a2, double *af, double *avals,
                int64_t *evaluations)
{
    int64_t s, i, k, nc, na = 0, best_i, t, count, lanes, zero = 0;
    int64_t in_epoch = 0, s0 = 0, a = 0, L = 0, evals = 0, next_try = 0;
    double best, limit, K = BB_K_SHARE * pen, margin = 0.0, c_a_s0 = 0.0, max_h = 0.0;
    bb_values_fn bb_values = bb_pick(want, &lanes);

    *evaluations = 0;
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
        alive[nc] = 1;
        nc++;
    }
    s = 2 * min_size;
    while (s <= n) {
        if (in_epoch) {
            double c_a_s = bb_cost(s1, s2, a, s, tab, vfloor, kconst);
            double c_s0_s = bb_cost(s1, s2, s0, s, tab, vfloor, kconst);
            double h = c_a_s - c_a_s0 - c_s0_s;
            /* h and each start's margin at s0 are each a few roundings of sums of terms this large */
            h += 1e-9 * (fabs(c_a_s) + fabs(c_a_s0) + fabs(c_s0_s));
            max_h = h > max_h ? h : max_h;
            if (max_h < K - margin && s - s0 <= L) {
                bb_values(na, s, s1[s], s2[s], acand, a1, a2, af, tab, pen, vfloor, kconst, avals);
                evals += na;
                best_i = bb_argmin(avals, na);
                if (acand[best_i] == a) {
                    best = avals[best_i];
                    F[s] = best;
                    last[s] = a;
                    limit = best + pen;
                    k = 0;
                    for (i = 0; i < na; i++) {
                        if (avals[i] <= limit) {
                            acand[k] = acand[i];
                            aidx[k] = aidx[i];
                            a1[k] = a1[i];
                            a2[k] = a2[i];
                            af[k] = af[i];
                            k++;
                        } else {
                            alive[aidx[i]] = 0;
                        }
                    }
                    na = k;
                    t = s - min_size + 1;
                    cand[nc] = acand[na] = t;
                    c1[nc] = a1[na] = s1[t];
                    c2[nc] = a2[na] = s2[t];
                    cf[nc] = af[na] = F[t];
                    alive[nc] = 1;
                    aidx[na] = nc;
                    nc++;
                    na++;
                    s++;
                    continue;
                }
            }
            /* The epoch ends: drop the starts pruned in it, and do this step in full. */
            k = 0;
            for (i = 0; i < nc; i++) {
                if (alive[i]) {
                    cand[k] = cand[i];
                    c1[k] = c1[i];
                    c2[k] = c2[i];
                    cf[k] = cf[i];
                    alive[k] = 1;
                    k++;
                }
            }
            nc = k;
            in_epoch = 0;
        }
        bb_values(nc, s, s1[s], s2[s], cand, c1, c2, cf, tab, pen, vfloor, kconst, vals);
        evals += nc;
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
                vals[k] = vals[i];
                k++;
            }
        }
        nc = k;
        if (skip && nc >= BB_MIN_EPOCH_CANDIDATES && s >= next_try && s + 1 <= n) {
            /* A new epoch from this step's exact values: set aside what may be, keep the rest in order. */
            a = last[s];
            s0 = s;
            L = 2;
            while (L * L < BB_EPOCH_FACTOR * nc) {
                L++;
            }
            c_a_s0 = bb_cost(s1, s2, a, s0, tab, vfloor, kconst);
            margin = 1e-9 * (1.0 + 2.0 * fabs(best) + pen);
            max_h = 0.0;
            na = 0;
            for (i = 0; i < nc; i++) {
                alive[i] = 1;
                if (vals[i] - best > K + margin &&
                    bb_can_set_aside(s1, s2, a, cand[i], s0, L, min_size, vfloor)) {
                    continue;
                }
                acand[na] = cand[i];
                a1[na] = c1[i];
                a2[na] = c2[i];
                af[na] = cf[i];
                aidx[na] = i;
                na++;
            }
            in_epoch = na * 2 < nc;
            next_try = in_epoch ? 0 : s + L; /* set-aside did not pay: do not spend a pass on it each step */
        }
        t = s - min_size + 1;
        cand[nc] = t;
        c1[nc] = s1[t];
        c2[nc] = s2[t];
        cf[nc] = F[t];
        alive[nc] = 1;
        if (in_epoch) {
            acand[na] = t;
            a1[na] = s1[t];
            a2[na] = s2[t];
            af[na] = F[t];
            aidx[na] = nc;
            na++;
        }
        nc++;
        s++;
    }
    *evaluations = evals;
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
