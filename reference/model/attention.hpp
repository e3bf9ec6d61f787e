#pragma once
// Scaled dot-product attention of one query head, in the exactness contract's order
// (docs/exactness.md), which every backend follows: for the visible keys in slot order,
//   s_i = dot(q, k_i) · scale        (ops::dot's order)
//   m   = max_i s_i                  (order-free; NaN scores never become the max)
//   e_i = exact::exp(s_i − m)
//   sum = Σ_i e_i                    (sequentially, in slot order)
//   o   = (Σ_i e_i · v_i) · (1/sum)  (per element, sequentially, in slot order; o = 0 if no key)
// The CUDA attention kernel computes the same operations in the same order, so the bits agree.

namespace specdec {

// q: (hd); keys[i], values[i]: (hd) rows of the visible keys in slot order, i < n; out: (hd).
void attend(const float* q, const float* const* keys, const float* const* values, int n, int hd, float scale,
            float* out);

}  // namespace specdec
