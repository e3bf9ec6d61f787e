#include "optimized/cpu/vector_exp.hpp"

#include "optimized/cpu/cpu_isa.hpp"
#include "reference/core/exact_math.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPECDEC_CPU_X86 1
#endif

namespace specdec::cpu {

namespace {

#ifdef SPECDEC_CPU_X86
// exact::exp on eight lanes; the special cases are computed along and blended in at the end.
__attribute__((target("avx2"))) __m256 exp8(__m256 x) {
  const __m256 shifter = _mm256_set1_ps(12582912.0f);
  const __m256 t = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269502f)), shifter);
  const __m256 nf = _mm256_sub_ps(t, shifter);
  const __m256i n = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(shifter));
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(x, _mm256_mul_ps(nf, _mm256_set1_ps(0.693145751953125f))),
                                 _mm256_mul_ps(nf, _mm256_set1_ps(1.42860677e-06f)));
  __m256 p = _mm256_set1_ps(1.98412698e-04f);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.38888889e-03f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.33333377e-03f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.16666679e-02f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.66666672e-01f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(0.5f));
  const __m256 er = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(r, r), p), r), _mm256_set1_ps(1.0f));
  // a = n / 2 truncated toward zero, as C++ divides: (n + (n < 0)) >> 1.
  const __m256i a = _mm256_srai_epi32(_mm256_add_epi32(n, _mm256_srli_epi32(n, 31)), 1);
  const __m256i b = _mm256_sub_epi32(n, a);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 pa = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(a, bias), 23));
  const __m256 pb = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(b, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(er, pa), pb);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-103.972084f), _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, _mm256_set1_ps(88.7228394f), _CMP_GT_OQ));
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

__attribute__((target("avx2"))) void exp_shifted_avx2(const float* x, float shift, int n, float* out) {
  const __m256 s = _mm256_set1_ps(shift);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
  for (; i < n; ++i) out[i] = exact::exp(x[i] - shift);
}
#endif

}  // namespace

void exp_shifted(const float* x, float shift, int n, float* out) {
#ifdef SPECDEC_CPU_X86
  if (active_isa() != Isa::portable) return exp_shifted_avx2(x, shift, n, out);  // avx512 too: no gain from 16 lanes here
#endif
  for (int i = 0; i < n; ++i) out[i] = exact::exp(x[i] - shift);
}

}  // namespace specdec::cpu
