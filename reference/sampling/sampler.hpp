#pragma once
// Token selection from logits. probabilities() is the distribution a sampler draws from; it is
// also the target distribution p of speculative acceptance, so it is a pure function of
// (logits, params) with a fixed evaluation order, documented below.
#include <cstdint>
#include <vector>

#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec {

// Index of the largest logit; ties go to the lowest index. -inf is allowed (a masked token);
// throws specdec::Error for NaN logits, every logit -inf, n <= 0 or a null pointer.
int argmax(const float* logits, int n);

// The distribution a sampler draws from, length n; masked tokens are exactly 0.
//   greedy: one-hot of argmax (top-k / top-p do not change it).
//   sample, coupled:
//     order: tokens by logit descending, ties by lower index (this also orders p descending);
//     x_i = double(logits[i]) / T, m = max_i x_i, e_i = exp(x_i - m) (0 for -inf logits);
//     top-k (0 < k < n): zero e_i outside the first k tokens of the order;
//     top-p (p < 1): with S = sum of e_i in index order, walk the order accumulating e_i / S in
//       double and keep the shortest prefix whose sum is >= top_p (at least one token; all of
//       them if rounding never reaches top_p); zero the rest. As in HF and vLLM, top-p applies
//       to the distribution already restricted by top-k;
//     result: e_i / S' with S' the sum of the surviving e_i in index order.
// Throws specdec::Error for invalid params (SamplingParams::validate), NaN or +inf logits in
// sample/coupled mode, every logit -inf, n <= 0 or a null pointer.
std::vector<double> probabilities(const float* logits, int n, const SamplingParams& params);

// Inverse CDF in index order with a double accumulator: the first i with u < p[0] + ... + p[i]
// and p[i] > 0. Never returns a zero-probability token: if rounding leaves u at or beyond the
// total, returns the last nonzero index. Throws specdec::Error unless u is in [0, 1) and p is a
// non-empty vector of finite, non-negative values with at least one nonzero.
int sample_from(const std::vector<double>& p, double u);

// One token at (sequence, position):
//   greedy:  argmax(logits)
//   sample:  sample_from(probabilities(...), uniform(seed, sequence, position, sample, 0))
//   coupled: argmax over tokens i with probabilities(...)[i] > 0 of
//            double(logits[i]) / T + gumbel(seed, sequence, position, i), ties to the lower index.
//            Gumbel-max draws from the same distribution as `sample` but is a deterministic
//            function of the position, so speculative methods reproduce sequential sampling token
//            for token.
// Throws as probabilities() does.
int sample_token(const float* logits, int n, const SamplingParams& params, uint32_t sequence,
                 uint32_t position);

}  // namespace specdec
