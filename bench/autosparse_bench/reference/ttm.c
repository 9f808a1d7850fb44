/* TTM A(i,j,l) = sum_k B(i,j,k) C(k,l): B in CSF, C dense row-major (K x L), A dense row-major (I x J x L),
   zeroed by the caller (calloc, numpy.zeros: pages no entry touches are never written). */
#include <stdint.h>

void ttm(int32_t J, int32_t L, const int32_t *pos0, const int32_t *crd0, const int32_t *pos1,
         const int32_t *crd1, const int32_t *pos2, const int32_t *crd2, const double *Bvals, const double *C,
         double *A)
{
    for (int32_t ip = pos0[0]; ip < pos0[1]; ip++) {
        int32_t i = crd0[ip];
        for (int32_t jp = pos1[ip]; jp < pos1[ip + 1]; jp++) {
            double *a = A + ((int64_t)i * J + crd1[jp]) * L;
            for (int32_t kp = pos2[jp]; kp < pos2[jp + 1]; kp++) {
                double b = Bvals[kp];
                const double *c = C + (int64_t)crd2[kp] * L;
                for (int32_t l = 0; l < L; l++)
                    a[l] += b * c[l];
            }
        }
    }
}
