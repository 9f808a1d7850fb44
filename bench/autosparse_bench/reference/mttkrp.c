/* MTTKRP A(i,l) = sum_jk B(i,j,k) C(j,l) D(k,l): B in CSF, C (J x L), D (K x L) and A (I x L) dense
   row-major, A zeroed by the caller (calloc, numpy.zeros). `mttkrp` is the loop nest of the expression as
   written; `mttkrp_factored` hoists C(j,l) out of the k loop through an L-vector (the SPLATT
   formulation), shown for information. */
#include <stdint.h>
#include <stdlib.h>

void mttkrp(int32_t L, const int32_t *pos0, const int32_t *crd0, const int32_t *pos1,
            const int32_t *crd1, const int32_t *pos2, const int32_t *crd2, const double *Bvals,
            const double *C, const double *D, double *A)
{
    for (int32_t ip = pos0[0]; ip < pos0[1]; ip++) {
        double *a = A + (int64_t)crd0[ip] * L;
        for (int32_t jp = pos1[ip]; jp < pos1[ip + 1]; jp++) {
            const double *c = C + (int64_t)crd1[jp] * L;
            for (int32_t kp = pos2[jp]; kp < pos2[jp + 1]; kp++) {
                double b = Bvals[kp];
                const double *d = D + (int64_t)crd2[kp] * L;
                for (int32_t l = 0; l < L; l++)
                    a[l] += b * c[l] * d[l];
            }
        }
    }
}

int mttkrp_factored(int32_t L, const int32_t *pos0, const int32_t *crd0, const int32_t *pos1,
                    const int32_t *crd1, const int32_t *pos2, const int32_t *crd2, const double *Bvals,
                    const double *C, const double *D, double *A)
{
    double *t = malloc((size_t)L * sizeof *t);
    if (!t)
        return 1;
    for (int32_t ip = pos0[0]; ip < pos0[1]; ip++) {
        double *a = A + (int64_t)crd0[ip] * L;
        for (int32_t jp = pos1[ip]; jp < pos1[ip + 1]; jp++) {
            for (int32_t l = 0; l < L; l++)
                t[l] = 0.0;
            for (int32_t kp = pos2[jp]; kp < pos2[jp + 1]; kp++) {
                double b = Bvals[kp];
                const double *d = D + (int64_t)crd2[kp] * L;
                for (int32_t l = 0; l < L; l++)
                    t[l] += b * d[l];
            }
            const double *c = C + (int64_t)crd1[jp] * L;
            for (int32_t l = 0; l < L; l++)
                a[l] += t[l] * c[l];
        }
    }
    free(t);
    return 0;
}
