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
int autosparse_kernel(void **restrict args, const int64_t *restrict dims, int64_t *restrict sizes, int64_t *restrict counters) {
    const int64_t i_dim = dims[0];
    const int64_t j_dim = dims[1];
    const int32_t *restrict A_pos2 = (const int32_t *)args[0];
    const int32_t *restrict A_crd2 = (const int32_t *)args[1];
    const double *restrict A_vals = (const double *)args[2];
    const double *restrict x_vals = (const double *)args[3];
    double *restrict y_vals = (double *)args[4];
    {
        #pragma omp parallel num_threads(2)
        {
            const int64_t i_work0 = 0 + A_pos2[0];
            const int64_t i_work = i_dim + A_pos2[i_dim] - i_work0;
            const int64_t i_part = omp_get_thread_num();
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
            for (int64_t i_ = i_first; i_ < i_stop; i_++) {
                {
                    double acc1 = 0;
                    int64_t A_p2 = A_pos2[i_];
                    const int64_t A_p2_end = A_pos2[i_ + 1];
                    for (; A_p2 < A_p2_end; A_p2++) {
                        const int64_t A_i2 = A_crd2[A_p2];
                        const int64_t j_ = A_i2;
                        acc1 += A_vals[A_p2] * x_vals[j_];
                    }
                    y_vals[i_] = acc1;
                }
            }
        }
    }
    return 0;
}
