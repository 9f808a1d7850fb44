/* SpMV y = A x, A in CSR: one dot product per row. */
#include <stdint.h>

void spmv(int32_t rows, const int32_t *pos, const int32_t *crd, const double *vals, const double *x, double *y)
{
    for (int32_t i = 0; i < rows; i++) {
        double sum = 0.0;
        for (int32_t p = pos[i]; p < pos[i + 1]; p++)
            sum += vals[p] * x[crd[p]];
        y[i] = sum;
    }
}
