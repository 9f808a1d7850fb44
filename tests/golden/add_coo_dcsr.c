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
    const int32_t *restrict A_pos1 = (const int32_t *)args[0];
    const int32_t *restrict A_crd1 = (const int32_t *)args[1];
    const int32_t *restrict A_crd2 = (const int32_t *)args[2];
    const int32_t *restrict B_pos1 = (const int32_t *)args[3];
    const int32_t *restrict B_crd1 = (const int32_t *)args[4];
    const int32_t *restrict B_pos2 = (const int32_t *)args[5];
    const int32_t *restrict B_crd2 = (const int32_t *)args[6];
    const double *restrict A_vals = (const double *)args[7];
    const double *restrict B_vals = (const double *)args[8];
    int32_t *C_pos1 = resultarray(1, sizeof(int32_t), 1);
    if (!C_pos1) return 1;
    int64_t C_size1 = 0;
    int64_t C_size2 = 0;
    int32_t *C_crd1 = NULL;
    int32_t *C_pos2 = NULL;
    int32_t *C_crd2 = NULL;
    double *C_vals = NULL;
    int C_bounded = 0;
    /* bound */
    {
        int64_t A_p1 = A_pos1[0];
        const int64_t A_p1_end = A_pos1[0 + 1];
        int64_t B_p1 = B_pos1[0];
        const int64_t B_p1_end = B_pos1[0 + 1];
        while (A_p1 < A_p1_end && B_p1 < B_p1_end) {
            const int64_t A_i1 = A_crd1[A_p1];
            int64_t A_p1_seg = A_p1 + (A_i1 == A_i1);
            if (A_i1 == A_i1) {
                while (A_p1_seg < A_p1_end && A_crd1[A_p1_seg] == A_i1) {
                    A_p1_seg++;
                }
            }
            const int64_t B_i1 = B_crd1[B_p1];
            const int64_t i_ = B_i1 < A_i1 ? B_i1 : A_i1;
            if (A_i1 != i_) {
                A_p1_seg = A_p1;
            }
            if (A_i1 == i_ && B_i1 == i_) {
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                {
                    int64_t A_p2 = A_p1;
                    const int64_t A_p2_end = A_p1_seg;
                    int64_t B_p2 = B_pos2[B_p1];
                    const int64_t B_p2_end = B_pos2[B_p1 + 1];
                    const int64_t trips = min64(A_p2_end - A_p2 + (B_p2_end - B_p2), j_dim);
                    C_size2 += trips;
                    if (trips) {
                        C_nz1 = 1;
                    }
                }
                if (C_nz1) {
                    C_size1++;
                }
                B_p1++;
            } else if (A_i1 == i_) {
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                {
                    int64_t A_p2 = A_p1;
                    const int64_t A_p2_end = A_p1_seg;
                    const int64_t trips = min64(A_p2_end - A_p2, j_dim);
                    C_size2 += trips;
                    if (trips) {
                        C_nz1 = 1;
                    }
                }
                if (C_nz1) {
                    C_size1++;
                }
            } else if (B_i1 == i_) {
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                {
                    int64_t B_p2 = B_pos2[B_p1];
                    const int64_t B_p2_end = B_pos2[B_p1 + 1];
                    const int64_t trips = min64(B_p2_end - B_p2, j_dim);
                    C_size2 += trips;
                    if (trips) {
                        C_nz1 = 1;
                    }
                }
                if (C_nz1) {
                    C_size1++;
                }
                B_p1++;
            }
            A_p1 = A_p1_seg;
        }
        while (A_p1 < A_p1_end) {
            const int64_t A_i1 = A_crd1[A_p1];
            int64_t A_p1_seg = A_p1 + (A_i1 == A_i1);
            if (A_i1 == A_i1) {
                while (A_p1_seg < A_p1_end && A_crd1[A_p1_seg] == A_i1) {
                    A_p1_seg++;
                }
            }
            const int64_t i_ = A_i1;
            int64_t C_p1 = C_size1;
            int C_nz1 = 0;
            {
                int64_t A_p2 = A_p1;
                const int64_t A_p2_end = A_p1_seg;
                const int64_t trips = min64(A_p2_end - A_p2, j_dim);
                C_size2 += trips;
                if (trips) {
                    C_nz1 = 1;
                }
            }
            if (C_nz1) {
                C_size1++;
            }
            A_p1 = A_p1_seg;
        }
        for (; B_p1 < B_p1_end; B_p1++) {
            const int64_t B_i1 = B_crd1[B_p1];
            const int64_t i_ = B_i1;
            int64_t C_p1 = C_size1;
            int C_nz1 = 0;
            {
                int64_t B_p2 = B_pos2[B_p1];
                const int64_t B_p2_end = B_pos2[B_p1 + 1];
                const int64_t trips = min64(B_p2_end - B_p2, j_dim);
                C_size2 += trips;
                if (trips) {
                    C_nz1 = 1;
                }
            }
            if (C_nz1) {
                C_size1++;
            }
        }
    }
    if (C_size1 <= INT32_MAX && C_size2 <= INT32_MAX) {
        C_crd1 = resultarray(C_size1, sizeof(int32_t), 0);
        C_pos2 = resultarray(C_size1 + 1, sizeof(int32_t), 1);
        C_crd2 = resultarray(C_size2, sizeof(int32_t), 0);
        C_vals = resultarray(C_size2, sizeof(double), 0);
        C_bounded = C_crd1 && C_pos2 && C_crd2 && C_vals;
        if (!C_bounded) {
            free(C_crd1);
            C_crd1 = NULL;
            free(C_pos2);
            C_pos2 = NULL;
            free(C_crd2);
            C_crd2 = NULL;
            free(C_vals);
            C_vals = NULL;
        }
    }
    if (!C_bounded) {
        C_size1 = 0;
        C_size2 = 0;
        /* count */
        {
            int64_t A_p1 = A_pos1[0];
            const int64_t A_p1_end = A_pos1[0 + 1];
            int64_t B_p1 = B_pos1[0];
            const int64_t B_p1_end = B_pos1[0 + 1];
            while (A_p1 < A_p1_end && B_p1 < B_p1_end) {
                const int64_t A_i1 = A_crd1[A_p1];
                int64_t A_p1_seg = A_p1 + (A_i1 == A_i1);
                if (A_i1 == A_i1) {
                    while (A_p1_seg < A_p1_end && A_crd1[A_p1_seg] == A_i1) {
                        A_p1_seg++;
                    }
                }
                const int64_t B_i1 = B_crd1[B_p1];
                const int64_t i_ = B_i1 < A_i1 ? B_i1 : A_i1;
                if (A_i1 != i_) {
                    A_p1_seg = A_p1;
                }
                if (A_i1 == i_ && B_i1 == i_) {
                    int64_t C_p1 = C_size1;
                    int C_nz1 = 0;
                    {
                        int64_t A_p2 = A_p1;
                        const int64_t A_p2_end = A_p1_seg;
                        int64_t B_p2 = B_pos2[B_p1];
                        const int64_t B_p2_end = B_pos2[B_p1 + 1];
                        while (A_p2 < A_p2_end && B_p2 < B_p2_end) {
                            const int64_t A_i2 = A_crd2[A_p2];
                            const int64_t B_i2 = B_crd2[B_p2];
                            const int64_t j_ = B_i2 < A_i2 ? B_i2 : A_i2;
                            if (A_i2 == j_ && B_i2 == j_) {
                                int64_t C_p2 = C_size2;
                                int C_nz2 = 0;
                                C_nz2 = 1;
                                if (C_nz2) {
                                    C_size2++;
                                    C_nz1 = 1;
                                }
                                A_p2++;
                                B_p2++;
                            } else if (A_i2 == j_) {
                                int64_t C_p2 = C_size2;
                                int C_nz2 = 0;
                                C_nz2 = 1;
                                if (C_nz2) {
                                    C_size2++;
                                    C_nz1 = 1;
                                }
                                A_p2++;
                            } else if (B_i2 == j_) {
                                int64_t C_p2 = C_size2;
                                int C_nz2 = 0;
                                C_nz2 = 1;
                                if (C_nz2) {
                                    C_size2++;
                                    C_nz1 = 1;
                                }
                                B_p2++;
                            }
                        }
                        for (; A_p2 < A_p2_end; A_p2++) {
                            const int64_t A_i2 = A_crd2[A_p2];
                            const int64_t j_ = A_i2;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_size2++;
                                C_nz1 = 1;
                            }
                        }
                        for (; B_p2 < B_p2_end; B_p2++) {
                            const int64_t B_i2 = B_crd2[B_p2];
                            const int64_t j_ = B_i2;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_size2++;
                                C_nz1 = 1;
                            }
                        }
                    }
                    if (C_nz1) {
                        C_size1++;
                    }
                    B_p1++;
                } else if (A_i1 == i_) {
                    int64_t C_p1 = C_size1;
                    int C_nz1 = 0;
                    {
                        int64_t A_p2 = A_p1;
                        const int64_t A_p2_end = A_p1_seg;
                        for (; A_p2 < A_p2_end; A_p2++) {
                            const int64_t A_i2 = A_crd2[A_p2];
                            const int64_t j_ = A_i2;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_size2++;
                                C_nz1 = 1;
                            }
                        }
                    }
                    if (C_nz1) {
                        C_size1++;
                    }
                } else if (B_i1 == i_) {
                    int64_t C_p1 = C_size1;
                    int C_nz1 = 0;
                    {
                        int64_t B_p2 = B_pos2[B_p1];
                        const int64_t B_p2_end = B_pos2[B_p1 + 1];
                        for (; B_p2 < B_p2_end; B_p2++) {
                            const int64_t B_i2 = B_crd2[B_p2];
                            const int64_t j_ = B_i2;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_size2++;
                                C_nz1 = 1;
                            }
                        }
                    }
                    if (C_nz1) {
                        C_size1++;
                    }
                    B_p1++;
                }
                A_p1 = A_p1_seg;
            }
            while (A_p1 < A_p1_end) {
                const int64_t A_i1 = A_crd1[A_p1];
                int64_t A_p1_seg = A_p1 + (A_i1 == A_i1);
                if (A_i1 == A_i1) {
                    while (A_p1_seg < A_p1_end && A_crd1[A_p1_seg] == A_i1) {
                        A_p1_seg++;
                    }
                }
                const int64_t i_ = A_i1;
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                {
                    int64_t A_p2 = A_p1;
                    const int64_t A_p2_end = A_p1_seg;
                    for (; A_p2 < A_p2_end; A_p2++) {
                        const int64_t A_i2 = A_crd2[A_p2];
                        const int64_t j_ = A_i2;
                        int64_t C_p2 = C_size2;
                        int C_nz2 = 0;
                        C_nz2 = 1;
                        if (C_nz2) {
                            C_size2++;
                            C_nz1 = 1;
                        }
                    }
                }
                if (C_nz1) {
                    C_size1++;
                }
                A_p1 = A_p1_seg;
            }
            for (; B_p1 < B_p1_end; B_p1++) {
                const int64_t B_i1 = B_crd1[B_p1];
                const int64_t i_ = B_i1;
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                {
                    int64_t B_p2 = B_pos2[B_p1];
                    const int64_t B_p2_end = B_pos2[B_p1 + 1];
                    for (; B_p2 < B_p2_end; B_p2++) {
                        const int64_t B_i2 = B_crd2[B_p2];
                        const int64_t j_ = B_i2;
                        int64_t C_p2 = C_size2;
                        int C_nz2 = 0;
                        C_nz2 = 1;
                        if (C_nz2) {
                            C_size2++;
                            C_nz1 = 1;
                        }
                    }
                }
                if (C_nz1) {
                    C_size1++;
                }
            }
        }
        if (C_size1 > INT32_MAX) return 2;
        if (C_size2 > INT32_MAX) return 2;
        C_crd1 = resultarray(C_size1, sizeof(int32_t), 0);
        if (!C_crd1) return 1;
        C_pos2 = resultarray(C_size1 + 1, sizeof(int32_t), 1);
        if (!C_pos2) return 1;
        C_crd2 = resultarray(C_size2, sizeof(int32_t), 0);
        if (!C_crd2) return 1;
        C_vals = resultarray(C_size2, sizeof(double), 0);
        if (!C_vals) return 1;
    }
    C_size1 = 0;
    C_size2 = 0;
    /* fill */
    {
        int64_t A_p1 = A_pos1[0];
        const int64_t A_p1_end = A_pos1[0 + 1];
        int64_t B_p1 = B_pos1[0];
        const int64_t B_p1_end = B_pos1[0 + 1];
        while (A_p1 < A_p1_end && B_p1 < B_p1_end) {
            const int64_t A_i1 = A_crd1[A_p1];
            int64_t A_p1_seg = A_p1 + (A_i1 == A_i1);
            if (A_i1 == A_i1) {
                while (A_p1_seg < A_p1_end && A_crd1[A_p1_seg] == A_i1) {
                    A_p1_seg++;
                }
            }
            const int64_t B_i1 = B_crd1[B_p1];
            const int64_t i_ = B_i1 < A_i1 ? B_i1 : A_i1;
            if (A_i1 != i_) {
                A_p1_seg = A_p1;
            }
            if (A_i1 == i_ && B_i1 == i_) {
                const int64_t C_c1 = i_;
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                const int64_t C_size2_start = C_size2;
                {
                    int64_t A_p2 = A_p1;
                    const int64_t A_p2_end = A_p1_seg;
                    int64_t B_p2 = B_pos2[B_p1];
                    const int64_t B_p2_end = B_pos2[B_p1 + 1];
                    while (A_p2 < A_p2_end && B_p2 < B_p2_end) {
                        const int64_t A_i2 = A_crd2[A_p2];
                        const int64_t B_i2 = B_crd2[B_p2];
                        const int64_t j_ = B_i2 < A_i2 ? B_i2 : A_i2;
                        if (A_i2 == j_ && B_i2 == j_) {
                            const int64_t C_c2 = j_;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_vals[C_p2] = A_vals[A_p2] + B_vals[B_p2];
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_crd2[C_p2] = C_c2;
                                C_size2++;
                                C_nz1 = 1;
                            }
                            A_p2++;
                            B_p2++;
                        } else if (A_i2 == j_) {
                            const int64_t C_c2 = j_;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_vals[C_p2] = A_vals[A_p2];
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_crd2[C_p2] = C_c2;
                                C_size2++;
                                C_nz1 = 1;
                            }
                            A_p2++;
                        } else if (B_i2 == j_) {
                            const int64_t C_c2 = j_;
                            int64_t C_p2 = C_size2;
                            int C_nz2 = 0;
                            C_vals[C_p2] = B_vals[B_p2];
                            C_nz2 = 1;
                            if (C_nz2) {
                                C_crd2[C_p2] = C_c2;
                                C_size2++;
                                C_nz1 = 1;
                            }
                            B_p2++;
                        }
                    }
                    for (; A_p2 < A_p2_end; A_p2++) {
                        const int64_t A_i2 = A_crd2[A_p2];
                        const int64_t j_ = A_i2;
                        const int64_t C_c2 = j_;
                        int64_t C_p2 = C_size2;
                        int C_nz2 = 0;
                        C_vals[C_p2] = A_vals[A_p2];
                        C_nz2 = 1;
                        if (C_nz2) {
                            C_crd2[C_p2] = C_c2;
                            C_size2++;
                            C_nz1 = 1;
                        }
                    }
                    for (; B_p2 < B_p2_end; B_p2++) {
                        const int64_t B_i2 = B_crd2[B_p2];
                        const int64_t j_ = B_i2;
                        const int64_t C_c2 = j_;
                        int64_t C_p2 = C_size2;
                        int C_nz2 = 0;
                        C_vals[C_p2] = B_vals[B_p2];
                        C_nz2 = 1;
                        if (C_nz2) {
                            C_crd2[C_p2] = C_c2;
                            C_size2++;
                            C_nz1 = 1;
                        }
                    }
                }
                if (C_nz1) {
                    C_crd1[C_p1] = C_c1;
                    C_pos2[C_p1 + 1] += C_size2 - C_size2_start;
                    C_size1++;
                }
                B_p1++;
            } else if (A_i1 == i_) {
                const int64_t C_c1 = i_;
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                const int64_t C_size2_start = C_size2;
                {
                    int64_t A_p2 = A_p1;
                    const int64_t A_p2_end = A_p1_seg;
                    for (; A_p2 < A_p2_end; A_p2++) {
                        const int64_t A_i2 = A_crd2[A_p2];
                        const int64_t j_ = A_i2;
                        const int64_t C_c2 = j_;
                        int64_t C_p2 = C_size2;
                        int C_nz2 = 0;
                        C_vals[C_p2] = A_vals[A_p2];
                        C_nz2 = 1;
                        if (C_nz2) {
                            C_crd2[C_p2] = C_c2;
                            C_size2++;
                            C_nz1 = 1;
                        }
                    }
                }
                if (C_nz1) {
                    C_crd1[C_p1] = C_c1;
                    C_pos2[C_p1 + 1] += C_size2 - C_size2_start;
                    C_size1++;
                }
            } else if (B_i1 == i_) {
                const int64_t C_c1 = i_;
                int64_t C_p1 = C_size1;
                int C_nz1 = 0;
                const int64_t C_size2_start = C_size2;
                {
                    int64_t B_p2 = B_pos2[B_p1];
                    const int64_t B_p2_end = B_pos2[B_p1 + 1];
                    for (; B_p2 < B_p2_end; B_p2++) {
                        const int64_t B_i2 = B_crd2[B_p2];
                        const int64_t j_ = B_i2;
                        const int64_t C_c2 = j_;
                        int64_t C_p2 = C_size2;
                        int C_nz2 = 0;
                        C_vals[C_p2] = B_vals[B_p2];
                        C_nz2 = 1;
                        if (C_nz2) {
                            C_crd2[C_p2] = C_c2;
                            C_size2++;
                            C_nz1 = 1;
                        }
                    }
                }
                if (C_nz1) {
                    C_crd1[C_p1] = C_c1;
                    C_pos2[C_p1 + 1] += C_size2 - C_size2_start;
                    C_size1++;
                }
                B_p1++;
            }
            A_p1 = A_p1_seg;
        }
        while (A_p1 < A_p1_end) {
            const int64_t A_i1 = A_crd1[A_p1];
            int64_t A_p1_seg = A_p1 + (A_i1 == A_i1);
            if (A_i1 == A_i1) {
                while (A_p1_seg < A_p1_end && A_crd1[A_p1_seg] == A_i1) {
                    A_p1_seg++;
                }
            }
            const int64_t i_ = A_i1;
            const int64_t C_c1 = i_;
            int64_t C_p1 = C_size1;
            int C_nz1 = 0;
            const int64_t C_size2_start = C_size2;
            {
                int64_t A_p2 = A_p1;
                const int64_t A_p2_end = A_p1_seg;
                for (; A_p2 < A_p2_end; A_p2++) {
                    const int64_t A_i2 = A_crd2[A_p2];
                    const int64_t j_ = A_i2;
                    const int64_t C_c2 = j_;
                    int64_t C_p2 = C_size2;
                    int C_nz2 = 0;
                    C_vals[C_p2] = A_vals[A_p2];
                    C_nz2 = 1;
                    if (C_nz2) {
                        C_crd2[C_p2] = C_c2;
                        C_size2++;
                        C_nz1 = 1;
                    }
                }
            }
            if (C_nz1) {
                C_crd1[C_p1] = C_c1;
                C_pos2[C_p1 + 1] += C_size2 - C_size2_start;
                C_size1++;
            }
            A_p1 = A_p1_seg;
        }
        for (; B_p1 < B_p1_end; B_p1++) {
            const int64_t B_i1 = B_crd1[B_p1];
            const int64_t i_ = B_i1;
            const int64_t C_c1 = i_;
            int64_t C_p1 = C_size1;
            int C_nz1 = 0;
            const int64_t C_size2_start = C_size2;
            {
                int64_t B_p2 = B_pos2[B_p1];
                const int64_t B_p2_end = B_pos2[B_p1 + 1];
                for (; B_p2 < B_p2_end; B_p2++) {
                    const int64_t B_i2 = B_crd2[B_p2];
                    const int64_t j_ = B_i2;
                    const int64_t C_c2 = j_;
                    int64_t C_p2 = C_size2;
                    int C_nz2 = 0;
                    C_vals[C_p2] = B_vals[B_p2];
                    C_nz2 = 1;
                    if (C_nz2) {
                        C_crd2[C_p2] = C_c2;
                        C_size2++;
                        C_nz1 = 1;
                    }
                }
            }
            if (C_nz1) {
                C_crd1[C_p1] = C_c1;
                C_pos2[C_p1 + 1] += C_size2 - C_size2_start;
                C_size1++;
            }
        }
    }
    C_pos1[1] = C_size1;
    for (int64_t p = 0; p < 1; p++) {
        C_pos1[p + 1] += C_pos1[p];
    }
    for (int64_t p = 0; p < C_size1; p++) {
        C_pos2[p + 1] += C_pos2[p];
    }
    if (C_bounded) {
        {
            void *trimmed = realloc(C_crd1, ((size_t)C_size1 + 1) * sizeof(int32_t));
            if (trimmed) {
                C_crd1 = trimmed;
            }
        }
        {
            void *trimmed = realloc(C_pos2, ((size_t)(C_size1 + 1) + 1) * sizeof(int32_t));
            if (trimmed) {
                C_pos2 = trimmed;
            }
        }
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
    args[9] = C_pos1;
    sizes[9] = 1 + 1;
    args[10] = C_crd1;
    sizes[10] = C_size1;
    args[11] = C_pos2;
    sizes[11] = C_size1 + 1;
    args[12] = C_crd2;
    sizes[12] = C_size2;
    args[13] = C_vals;
    sizes[13] = C_size2;
    return 0;
}
