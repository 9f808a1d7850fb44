/* SpGEMM C = A B, all CSR, output rows sorted: Gustavson's row-by-row algorithm in two passes, the
   textbook way (the structure of C first, then its values in a dense accumulator; each row's columns
   are sorted with qsort). */
#include <stdint.h>
#include <stdlib.h>

/* Pass 1: Cpos (rows + 1 entries). Returns nnz(C), or -1 when out of memory. */
int64_t spgemm_symbolic(int32_t rows, int32_t cols, const int32_t *Apos, const int32_t *Acrd,
                        const int32_t *Bpos, const int32_t *Bcrd, int32_t *Cpos)
{
    int32_t *mark = malloc((size_t)cols * sizeof *mark);
    if (!mark)
        return -1;
    for (int32_t j = 0; j < cols; j++)
        mark[j] = -1;
    int64_t nnz = 0;
    Cpos[0] = 0;
    for (int32_t i = 0; i < rows; i++) {
        for (int32_t p = Apos[i]; p < Apos[i + 1]; p++) {
            int32_t k = Acrd[p];
            for (int32_t q = Bpos[k]; q < Bpos[k + 1]; q++) {
                int32_t j = Bcrd[q];
                if (mark[j] != i) {
                    mark[j] = i;
                    nnz++;
                }
            }
        }
        Cpos[i + 1] = (int32_t)nnz;
    }
    free(mark);
    return nnz;
}

static int compare(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Pass 2: Ccrd and Cvals (nnz(C) entries each). Returns 0, or 1 when out of memory. */
int spgemm_numeric(int32_t rows, int32_t cols, const int32_t *Apos, const int32_t *Acrd, const double *Avals,
                   const int32_t *Bpos, const int32_t *Bcrd, const double *Bvals,
                   const int32_t *Cpos, int32_t *Ccrd, double *Cvals)
{
    double *acc = calloc((size_t)cols, sizeof *acc);
    int32_t *mark = malloc((size_t)cols * sizeof *mark);
    if (!acc || !mark) {
        free(acc);
        free(mark);
        return 1;
    }
    for (int32_t j = 0; j < cols; j++)
        mark[j] = -1;
    for (int32_t i = 0; i < rows; i++) {
        int32_t *row = Ccrd + Cpos[i];
        int32_t count = 0;
        for (int32_t p = Apos[i]; p < Apos[i + 1]; p++) {
            int32_t k = Acrd[p];
            double a = Avals[p];
            for (int32_t q = Bpos[k]; q < Bpos[k + 1]; q++) {
                int32_t j = Bcrd[q];
                if (mark[j] != i) {
                    mark[j] = i;
                    row[count++] = j;
                }
                acc[j] += a * Bvals[q];
            }
        }
        qsort(row, (size_t)count, sizeof *row, compare);
        double *out = Cvals + Cpos[i];
        for (int32_t c = 0; c < count; c++) {
            out[c] = acc[row[c]];
            acc[row[c]] = 0.0;
        }
    }
    free(acc);
    free(mark);
    return 0;
}
