// The dispatch: each call runs the kernel of the path cpu::active_isa() names.
#include "optimized/cpu/dot_kernels.hpp"

#include <atomic>

#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/dot_kernels_paths.hpp"

namespace specdec::cpu {

namespace {

const paths::KernelTable& table_of(Isa isa) {
  switch (isa) {
    case Isa::avx512: return paths::avx512_kernels();
    case Isa::avx2: return paths::avx2_kernels();
    case Isa::portable: break;
  }
  return paths::portable_kernels();
}

const paths::KernelTable& active() { return table_of(active_isa()); }

}  // namespace

void dot_block(Dtype dtype, const void* const* rows, int R, const float* x, std::size_t ldx, int TB, int n, float* out) {
  active().block[paths::dtype_index(dtype)][R - 1][TB - 1](rows, x, ldx, n, out);
}

void dot_tile(Dtype dtype, const void* w, std::size_t stride, int R, const float* x, std::size_t ldx, int T, int n,
              float* out, const void* next) {
  active().tile[paths::dtype_index(dtype)][R - 1](static_cast<const std::byte*>(w), stride, x, ldx, T, n, out,
                                                   static_cast<const std::byte*>(next));
}

void widen(Dtype dtype, const void* src, int n, float* dst) { active().widen[paths::dtype_index(dtype)](src, n, dst); }

void weighted_sum(const float* p, std::size_t ldp, int G, const float* const* rows, int n, int m, const float* scale,
                  float* out, std::size_t ldo) {
  active().weighted_sum(p, ldp, G, rows, n, m, scale, out, ldo);
}

float dot(const float* a, const float* b, int n) {
  const void* rows[1] = {b};
  float out;
  dot_block(Dtype::F32, rows, 1, a, 0, 1, n, &out);
  return out;
}

}  // namespace specdec::cpu
