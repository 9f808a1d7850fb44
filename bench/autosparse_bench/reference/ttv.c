/* TTV A(i,j) = sum_k B(i,j,k) c(k): B in CSF (three compressed levels), A in CSR. A's stored entries are
   B's (i,j) fibers, in the same order. */
#include <stdint.h>
#include <string.h>

void ttv(int32_t rows, const int32_t *pos0, const int32_t *crd0, const int32_t *pos1, const int32_t *crd1,
         const int32_t *pos2, const int32_t *crd2, const double *Bvals, const double *c,
         int32_t *Apos, int32_t *Acrd, double *Avals)
{
    memset(Apos, 0, ((size_t)rows + 1) * sizeof *Apos);
    for (int32_t ip = pos0[0]; ip < pos0[1]; ip++)
        Apos[crd0[ip] + 1] = pos1[ip + 1] - pos1[ip];
    for (int32_t i = 0; i < rows; i++)
        Apos[i + 1] += Apos[i];
    for (int32_t ip = pos0[0]; ip < pos0[1]; ip++) {
        for (int32_t jp = pos1[ip]; jp < pos1[ip + 1]; jp++) {
            double sum = 0.0;
            for (int32_t kp = pos2[jp]; kp < pos2[jp + 1]; kp++)
                sum += Bvals[kp] * c[crd2[kp]];
            Acrd[jp] = crd1[jp];
            Avals[jp] = sum;
        }
    }
}
