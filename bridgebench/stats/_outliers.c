/* warmup_stats's sliding-window outlier rule (see outliers.py) with the window kept sorted as it slides,
   instead of sorting every window anew: the same values in the same order, so the same percentiles, bit
   for bit, computed as outliers.py's _percentile_sorted computes them. Build with -ffp-contract=off. */
#include <stdint.h>
#include <string.h>

static double percentile(const double *sorted, int64_t count, double q) {
    double pos = (double)(count - 1) * (q / 100.0);
    int64_t below = (int64_t)pos; /* pos >= 0: truncation is floor */
    int64_t above = (pos > (double)below) ? below + 1 : below;
    if (below == above) return sorted[below];
    double frac = pos - (double)below;
    return sorted[below] * (1.0 - frac) + sorted[above] * frac;
}

/* First index in sorted[0, count) whose value is not below v. */
static int64_t lower_bound(const double *sorted, int64_t count, double v) {
    int64_t lo = 0, hi = count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static void insert(double *sorted, int64_t *count, double v) {
    int64_t at = lower_bound(sorted, *count, v);
    memmove(sorted + at + 1, sorted + at, (size_t)(*count - at) * sizeof(double));
    sorted[at] = v;
    (*count)++;
}

static void erase(double *sorted, int64_t *count, double v) {
    int64_t at = lower_bound(sorted, *count, v); /* v is in the window: sorted[at] == v */
    memmove(sorted + at, sorted + at + 1, (size_t)(*count - at - 1) * sizeof(double));
    (*count)--;
}

/* mask[i] = 1 where x[i] is an outlier of the window [i - w/2, i + w/2) clipped to [0, n); windows cut
   short by the start of the series are not judged. work holds at least w doubles. */
void bb_outliers(const double *x, int64_t n, int64_t w, double *work, uint8_t *mask) {
    int64_t h = w / 2, lo = 0, hi = 0, count = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t want_lo = i - h > 0 ? i - h : 0;
        int64_t want_hi = i + h < n ? i + h : n;
        while (hi < want_hi) insert(work, &count, x[hi++]);
        while (lo < want_lo) erase(work, &count, x[lo++]);
        mask[i] = 0;
        if (want_lo == 0 && want_hi - want_lo < w) continue;
        double p10 = percentile(work, count, 10.0);
        double p50 = percentile(work, count, 50.0);
        double p90 = percentile(work, count, 90.0);
        double band = 3.0 * (p90 - p10);
        mask[i] = (x[i] > p50 + band) || (x[i] < p50 - band);
    }
}
