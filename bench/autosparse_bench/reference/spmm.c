/* SpMM C = A B, A in CSR (rows x k), B dense row-major (k x cols), C dense row-major (rows x cols). Rows are
   shared among `threads` OpenMP threads when built with -fopenmp (the pragma is ignored otherwise). */
#include <stdint.h>

void spmm(int32_t rows, int32_t cols, const int32_t *pos, const int32_t *crd, const double *vals,
          const double *B, double *C, int threads)
{
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int32_t i = 0; i < rows; i++) {
        double *c = C + (int64_t)i * cols;
        for (int32_t l = 0; l < cols; l++)
            c[l] = 0.0;
        for (int32_t p = pos[i]; p < pos[i + 1]; p++) {
            double a = vals[p];
            const double *b = B + (int64_t)crd[p] * cols;
            for (int32_t l = 0; l < cols; l++)
                c[l] += a * b[l];
        }
    }
}
