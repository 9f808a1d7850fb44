#include <omp.h>
#define _DEFAULT_SOURCE  /* madvise under -std=c11 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <complex.h>
#include <math.h>
#include <sys/mman.h>
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
/* An array of a result, count + 1 elements (zeroed or not). Large ones are advised onto transparent huge
   pages, as numpy advises its own arrays: a fresh 24 MB result otherwise faults in 6,000 pages. */
static void *resultarray(int64_t count, size_t size, int zeroed) {
    size_t bytes = ((size_t)count + 1) * size;
    void *p = zeroed ? calloc((size_t)count + 1, size) : malloc(bytes);
#ifdef MADV_HUGEPAGE
    if (p && bytes >= ((size_t)1 << 22)) {
        uintptr_t start = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, end = (uintptr_t)p + bytes;
        if (start < end) madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    return p;
}
/* Sort n distinct coordinates ascending by rank: each one's place is the count of those below it. Its
   n^2 comparisons have no data-dependent branch and vectorize, so up to 64 entries it beats insertion
   sort's mispredicted loop exits (3.5x at 25) and the radix sort's passes over its buckets (1.8x at 64).
   Coordinates that repeat would share a place (never one outside the list): callers pass touched sets. */
static void rankcoordinates(int64_t *restrict list, int64_t n, int64_t *restrict spare) {
    if (n < 2) return;  /* sorted already; an empty list may be NULL, which memcpy must not be given */
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = list[k];
        int64_t below = 0;
        for (int64_t m = 0; m < n; m++) below += list[m] < v;
        spare[below] = v;
    }
    memcpy(list, spare, (size_t)n * sizeof(int64_t));
}
/* Insertion sort within a budget of 2n moves, the cheapest sort of a list that arrives nearly in order (a
   stencil's product row: each row of B appends columns just past those already touched; rankcoordinates'
   n^2 comparisons made SpGEMM on 3-D stencils 30% slower). Returns whether it finished: a list further out
   of order is left partly sorted, for rankcoordinates. */
static int insertcoordinates(int64_t *list, int64_t n) {
    int64_t budget = 2 * n;
    for (int64_t k = 1; k < n; k++) {
        int64_t v = list[k], m = k - 1;
        while (m >= 0 && list[m] > v) { list[m + 1] = list[m]; m--; budget--; }
        list[m + 1] = v;
        if (budget < 0) return 0;
    }
    return 1;
}
/* Sort n distinct coordinates ascending. Short lists: insertcoordinates, else (far out of order)
   rankcoordinates. Otherwise an LSD radix sort of the offsets from the smallest through `spare` (n more),
   in as many passes as the range needs (8-bit digits for short lists, 11-bit ones for long). */
static void sortcoordinates(int64_t *list, int64_t n, int64_t *spare) {
    if (n <= 64) {
        if (!insertcoordinates(list, n))
            rankcoordinates(list, n, spare);
        return;
    }
    int64_t lo = list[0], hi = list[0];
    for (int64_t k = 1; k < n; k++) {
        lo = list[k] < lo ? list[k] : lo;
        hi = list[k] > hi ? list[k] : hi;
    }
    const int digit = n < 4096 ? 8 : 11;
    const int64_t buckets = (int64_t)1 << digit, mask = buckets - 1;
    int64_t counts[2049];
    int64_t *from = list, *to = spare;
    for (int64_t k = 0; k < n; k++) list[k] -= lo;
    for (int shift = 0; shift < 64 && ((hi - lo) >> shift) > 0; shift += digit) {
        memset(counts, 0, (size_t)(buckets + 1) * sizeof(int64_t));
        for (int64_t k = 0; k < n; k++) counts[((from[k] >> shift) & mask) + 1]++;
        for (int64_t d = 0; d < buckets; d++) counts[d + 1] += counts[d];
        for (int64_t k = 0; k < n; k++) to[counts[(from[k] >> shift) & mask]++] = from[k];
        int64_t *t = from; from = to; to = t;
    }
    for (int64_t k = 0; k < n; k++) list[k] = from[k] + lo;
}
/* Put the n touched coordinates of `list` (all below `dim`) in ascending order. Lists whose range spans
   fewer summary words than entries: set their bits in a two-level bitmap (`bits`: a bit per coordinate
   below `dim`, then a bit per word of those) and read the nonzero words back in order, clearing them as
   they go. Otherwise (short lists, or few entries spread wide) sortcoordinates. */
static void ordertouched(int64_t *list, int64_t n, int64_t *spare, uint64_t *bits, int64_t dim) {
    if (n <= 32) {
        sortcoordinates(list, n, spare);
        return;
    }
    int64_t lo = list[0], hi = list[0];
    for (int64_t k = 1; k < n; k++) {
        lo = list[k] < lo ? list[k] : lo;
        hi = list[k] > hi ? list[k] : hi;
    }
    if ((hi >> 12) - (lo >> 12) >= n) {
        sortcoordinates(list, n, spare);
        return;
    }
    uint64_t *summary = bits + (dim >> 6) + 1;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = list[k];
        bits[j >> 6] |= (uint64_t)1 << (j & 63);
        summary[j >> 12] |= (uint64_t)1 << ((j >> 6) & 63);
    }
    int64_t m = 0;
    for (int64_t s = lo >> 12; s <= hi >> 12; s++) {
        uint64_t words = summary[s];
        summary[s] = 0;
        while (words) {
            int64_t at = (s << 6) + __builtin_ctzll(words);
            words &= words - 1;
            uint64_t w = bits[at];
            bits[at] = 0;
            const int64_t base = at << 6;
            list[m++] = base + __builtin_ctzll(w);
            for (w &= w - 1; w; w &= w - 1) list[m++] = base + __builtin_ctzll(w);
        }
    }
}
int autosparse_kernel(void **restrict args, const int64_t *restrict dims, int64_t *restrict sizes, int64_t *restrict counters) {
    const int64_t i_dim = dims[0];
    const int64_t j_dim = dims[1];
    const int64_t k_dim = dims[2];
    const int32_t *restrict A_pos2 = (const int32_t *)args[0];
    const int32_t *restrict A_crd2 = (const int32_t *)args[1];
    const int32_t *restrict B_pos2 = (const int32_t *)args[2];
    const int32_t *restrict B_crd2 = (const int32_t *)args[3];
    const double *restrict A_vals = (const double *)args[4];
    const double *restrict B_vals = (const double *)args[5];
    int32_t *C_pos2 = resultarray(1 * i_dim, sizeof(int32_t), 1);
    if (!C_pos2) return 1;
    int64_t C_size2 = 0;
    int32_t *C_crd2 = NULL;
    double *C_vals = NULL;
    int C_bounded = 0;
    const int threads = 2;
    int failed = 0;
    int team = 1;
    int64_t *C_size2_chunks = calloc((size_t)threads + 1, sizeof(int64_t));
    int64_t *C_size2_ends = calloc((size_t)threads + 1, sizeof(int64_t));
    if (!C_size2_chunks || !C_size2_ends) return 1;
    #pragma omp parallel num_threads(threads)
    {
        double *w_vals = malloc((size_t)j_dim * sizeof(double) + 1);
        int64_t *w_mark = calloc((size_t)j_dim + 1, sizeof(int64_t));
        int64_t *w_list = malloc(((size_t)j_dim + 1) * sizeof(int64_t));
        int64_t *w_spare = malloc(((size_t)j_dim + 1) * sizeof(int64_t));
        uint64_t *w_bits = calloc(((size_t)j_dim >> 6) + ((size_t)j_dim >> 12) + 2, sizeof(uint64_t));
        int64_t w_count = 0;
        int64_t w_gen = 1;
        if (!w_vals || !w_mark || !w_list || !w_spare || !w_bits) {
            #pragma omp atomic write
            failed = 1;
            goto allocated;
        }
        allocated:;
        const int thread = omp_get_thread_num();
        const int64_t i_work0 = 0 + A_pos2[0];
        const int64_t i_work = i_dim + A_pos2[i_dim] - i_work0;
        const int64_t i_part = thread;
        const int64_t i_parts = omp_get_num_threads();
        int64_t i_first = 0;
        {
            const int64_t goal = i_work0 + i_work * i_part / i_parts;
            int64_t high = i_dim;
            while (i_first < high) {
                const int64_t middle = i_first + (high - i_first) / 2;
                if (middle + A_pos2[middle] < goal) {
                    i_first = middle + 1;
                } else {
                    high = middle;
                }
            }
        }
        int64_t i_stop = 0;
        {
            const int64_t goal = i_work0 + i_work * (i_part + 1) / i_parts;
            int64_t high = i_dim;
            while (i_stop < high) {
                const int64_t middle = i_stop + (high - i_stop) / 2;
                if (middle + A_pos2[middle] < goal) {
                    i_stop = middle + 1;
                } else {
                    high = middle;
                }
            }
        }
        int64_t C_size2 = 0;
        int boundready;
        #pragma omp atomic read
        boundready = failed;
        #pragma omp barrier
        if (!boundready) {
            /* bound */
            {
                for (int64_t i_ = i_first; i_ < i_stop; i_++) {
                    /* produce w */
                    {
                        int64_t A_p2 = A_pos2[i_];
                        const int64_t A_p2_end = A_pos2[i_ + 1];
                        for (; A_p2 < A_p2_end; A_p2++) {
                            const int64_t A_i2 = A_crd2[A_p2];
                            const int64_t k_ = A_i2;
                            {
                                int64_t B_p2 = B_pos2[k_];
                                const int64_t B_p2_end = B_pos2[k_ + 1];
                                const int64_t trips = min64(B_p2_end - B_p2, j_dim);
                                w_count += trips;
                            }
                        }
                    }
                    /* consume w */
                    {
                        int64_t w_p1 = 0;
                        const int64_t w_p1_end = w_count;
                        const int64_t trips = min64(w_p1_end - w_p1, j_dim);
                        C_size2 += trips;
                    }
                    w_gen++;
                    w_count = 0;
                    boundnext1:;
                }
            }
            bound_end:;
        }
        C_size2_chunks[thread] = C_size2;
        #pragma omp barrier
        #pragma omp single
        {
            if (!failed) {
                team = omp_get_num_threads();
                C_size2 = 0;
                for (int t = 0; t < team; t++) {
                    const int64_t n = C_size2_chunks[t];
                    C_size2_chunks[t] = C_size2;
                    C_size2 += n;
                }
                if (C_size2 <= INT32_MAX) {
                    C_crd2 = resultarray(C_size2, sizeof(int32_t), 0);
                    C_vals = resultarray(C_size2, sizeof(double), 0);
                    C_bounded = C_crd2 && C_vals;
                    if (!C_bounded) {
                        free(C_crd2);
                        C_crd2 = NULL;
                        free(C_vals);
                        C_vals = NULL;
                    }
                }
            }
            bound_sized:;
        }
        if (!C_bounded) {
            C_size2 = 0;
            int countready;
            #pragma omp atomic read
            countready = failed;
            #pragma omp barrier
            if (!countready) {
                /* count */
                {
                    for (int64_t i_ = i_first; i_ < i_stop; i_++) {
                        /* produce w */
                        {
                            int64_t A_p2 = A_pos2[i_];
                            const int64_t A_p2_end = A_pos2[i_ + 1];
                            for (; A_p2 < A_p2_end; A_p2++) {
                                const int64_t A_i2 = A_crd2[A_p2];
                                const int64_t k_ = A_i2;
                                {
                                    int64_t B_p2 = B_pos2[k_];
                                    const int64_t B_p2_end = B_pos2[k_ + 1];
                                    for (; B_p2 < B_p2_end; B_p2++) {
                                        const int64_t B_i2 = B_crd2[B_p2];
                                        const int64_t j_ = B_i2;
                                        if (!(w_mark[j_] == w_gen)) {
                                            w_mark[j_] = w_gen;
                                            w_list[w_count++] = j_;
                                        }
                                    }
                                }
                            }
                        }
                        /* consume w */
                        {
                            int64_t w_p1 = 0;
                            const int64_t w_p1_end = w_count;
                            for (; w_p1 < w_p1_end; w_p1++) {
                                const int64_t w_i1 = w_list[w_p1];
                                const int64_t j_ = w_i1;
                                int64_t C_p2 = C_size2;
                                int C_nz2 = 0;
                                C_nz2 = 1;
                                if (C_nz2) {
                                    C_size2++;
                                }
                            }
                        }
                        w_gen++;
                        w_count = 0;
                        countnext1:;
                    }
                }
                count_end:;
            }
            C_size2_chunks[thread] = C_size2;
            #pragma omp barrier
            #pragma omp single
            {
                if (!failed) {
                    team = omp_get_num_threads();
                    C_size2 = 0;
                    for (int t = 0; t < team; t++) {
                        const int64_t n = C_size2_chunks[t];
                        C_size2_chunks[t] = C_size2;
                        C_size2 += n;
                    }
                    if (C_size2 > INT32_MAX) {
                        #pragma omp atomic write
                        failed = 2;
                        goto count_sized;
                    }
                    C_crd2 = resultarray(C_size2, sizeof(int32_t), 0);
                    if (!C_crd2) {
                        #pragma omp atomic write
                        failed = 1;
                        goto count_sized;
                    }
                    C_vals = resultarray(C_size2, sizeof(double), 0);
                    if (!C_vals) {
                        #pragma omp atomic write
                        failed = 1;
                        goto count_sized;
                    }
                }
                count_sized:;
            }
        }
        int fillready;
        #pragma omp atomic read
        fillready = failed;
        #pragma omp barrier
        if (!fillready) {
            /* fill */
            C_size2 = C_size2_chunks[thread];
            {
                for (int64_t i_ = i_first; i_ < i_stop; i_++) {
                    const int64_t C_size2_start = C_size2;
                    /* produce w */
                    {
                        int64_t A_p2 = A_pos2[i_];
                        const int64_t A_p2_end = A_pos2[i_ + 1];
                        for (; A_p2 < A_p2_end; A_p2++) {
                            const int64_t A_i2 = A_crd2[A_p2];
                            const int64_t k_ = A_i2;
                            {
                                int64_t B_p2 = B_pos2[k_];
                                const int64_t B_p2_end = B_pos2[k_ + 1];
                                for (; B_p2 < B_p2_end; B_p2++) {
                                    const int64_t B_i2 = B_crd2[B_p2];
                                    const int64_t j_ = B_i2;
                                    {
                                        const double w_v = A_vals[A_p2] * B_vals[B_p2];
                                        if (!(w_mark[j_] == w_gen)) {
                                            w_mark[j_] = w_gen;
                                            w_list[w_count++] = j_;
                                            w_vals[j_] = w_v;
                                        } else {
                                            w_vals[j_] += w_v;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    ordertouched(w_list, w_count, w_spare, w_bits, j_dim);
                    /* consume w */
                    {
                        int64_t w_p1 = 0;
                        const int64_t w_p1_end = w_count;
                        for (; w_p1 < w_p1_end; w_p1++) {
                            const int64_t w_i1 = w_list[w_p1];
                            const int64_t j_ = w_i1;
                            const int64_t C_c2 = j_;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_vals[C_p2] = w_vals[w_i1];
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_crd2[C_p2] = C_c2;
                                C_size2++;
                            }
                        }
                    }
                    w_gen++;
                    w_count = 0;
                    C_pos2[i_ + 1] += C_size2 - C_size2_start;
                    fillnext1:;
                }
            }
            fill_end:;
            C_size2_ends[thread] = C_size2;
        }
        free(w_vals);
        free(w_mark);
        free(w_list);
        free(w_spare);
        free(w_bits);
    }
    if (failed) return failed;
    C_size2 = 0;
    for (int t = 0; t < team; t++) {
        const int64_t from = C_size2_chunks[t];
        const int64_t n = C_size2_ends[t] - from;
        if (n > 0 && from != C_size2) {
            memmove(C_crd2 + C_size2 * 1 + 0, C_crd2 + from * 1 + 0, (size_t)(n * 1) * sizeof(int32_t));
            memmove(C_vals + C_size2 * 1 + 0, C_vals + from * 1 + 0, (size_t)(n * 1) * sizeof(double));
        }
        C_size2 += n;
    }
    free(C_size2_chunks);
    free(C_size2_ends);
    for (int64_t p = 0; p < 1 * i_dim; p++) {
        C_pos2[p + 1] += C_pos2[p];
    }
    if (C_bounded) {
        {
            void *trimmed = realloc(C_crd2, ((size_t)C_size2 + 1) * sizeof(int32_t));
            if (trimmed) {
                C_crd2 = trimmed;
            }
        }
        {
            void *trimmed = realloc(C_vals, ((size_t)C_size2 + 1) * sizeof(double));
            if (trimmed) {
                C_vals = trimmed;
            }
        }
    }
    args[6] = C_pos2;
    sizes[6] = 1 * i_dim + 1;
    args[7] = C_crd2;
    sizes[7] = C_size2;
    args[8] = C_vals;
    sizes[8] = C_size2;
    return 0;
}
