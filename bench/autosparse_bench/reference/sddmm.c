/* SDDMM A(i,j) = B(i,j) * sum_k C(i,k) D(k,j): B and A in CSR with the same pattern, C dense (rows x K)
   and D dense (K x cols), both row-major. One dot product per stored entry of B. Rows are shared among
   `threads` OpenMP threads when built with -fopenmp (the pragma is ignored otherwise). `sddmm_dt` is the
   same with D given by columns (Dt, cols x K, row-major), so each dot product streams a row of Dt. */
#include <stdint.h>

void sddmm(int32_t rows, int32_t cols, int32_t K, const int32_t *Bpos, const int32_t *Bcrd, const double *Bvals,
           const double *C, const double *D, int32_t *Apos, int32_t *Acrd, double *Avals, int threads)
{
    for (int32_t i = 0; i <= rows; i++)
        Apos[i] = Bpos[i];
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int32_t i = 0; i < rows; i++) {
        const double *c = C + (int64_t)i * K;
        for (int32_t p = Bpos[i]; p < Bpos[i + 1]; p++) {
            int32_t j = Bcrd[p];
            double sum = 0.0;
            for (int32_t k = 0; k < K; k++)
                sum += c[k] * D[(int64_t)k * cols + j];
            Acrd[p] = j;
            Avals[p] = Bvals[p] * sum;
        }
    }
}

void sddmm_dt(int32_t rows, int32_t cols, int32_t K, const int32_t *Bpos, const int32_t *Bcrd,
              const double *Bvals, const double *C, const double *Dt, int32_t *Apos, int32_t *Acrd, double *Avals,
              int threads)
{
    for (int32_t i = 0; i <= rows; i++)
        Apos[i] = Bpos[i];
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int32_t i = 0; i < rows; i++) {
        const double *c = C + (int64_t)i * K;
        for (int32_t p = Bpos[i]; p < Bpos[i + 1]; p++) {
            int32_t j = Bcrd[p];
            const double *d = Dt + (int64_t)j * K;
            double sum = 0.0;
            for (int32_t k = 0; k < K; k++)
                sum += c[k] * d[k];
            Acrd[p] = j;
            Avals[p] = Bvals[p] * sum;
        }
    }
}
