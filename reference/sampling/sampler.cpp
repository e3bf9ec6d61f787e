#include "reference/sampling/sampler.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"

namespace specdec {

namespace {


// Rejects what no mode can use: null data, empty vocab, NaN, or nothing but -inf.
void check_logits(const float* logits, int n, const char* where) {
  if (logits == nullptr) {
    throw Error(std::string(where) + ": logits pointer is null; expected " + std::to_string(n) +
                " values");
  }
  if (n <= 0) {
    throw Error(std::string(where) + ": vocabulary size n = " + std::to_string(n) +
                "; expected n >= 1");
  }
  bool any_allowed = false;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(logits[i])) {
      throw Error(std::string(where) + ": logit of token " + std::to_string(i) +
                  " is NaN; expected finite logits (-inf allowed for masked tokens)");
    }
    if (logits[i] != -INFINITY) any_allowed = true;
  }
  if (!any_allowed) {
    throw Error(std::string(where) + ": all " + std::to_string(n) +
                " logits are -inf; expected at least one token that can be chosen");
  }
}

int argmax_unchecked(const float* logits, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;  // strict: ties keep the lower index
  }
  return best;
}

}  // namespace

int argmax(const float* logits, int n) {
  check_logits(logits, n, "argmax");
  return argmax_unchecked(logits, n);
}

std::vector<double> probabilities(const float* logits, int n, const SamplingParams& params) {
  params.validate();
  check_logits(logits, n, "probabilities");
  std::vector<double> p(static_cast<size_t>(n), 0.0);
  if (params.mode == SamplingParams::Mode::greedy) {
    p[static_cast<size_t>(argmax_unchecked(logits, n))] = 1.0;
    return p;
  }
  for (int i = 0; i < n; ++i) {
    if (logits[i] == INFINITY) {
      throw Error("probabilities: logit of token " + std::to_string(i) +
                  " is +inf; expected finite logits (-inf allowed for masked tokens) in mode '" +
                  to_string(params.mode) + "'");
    }
  }

  // e_i = exp(x_i - m), x_i = logit / T in double; the maximum maps to exactly 1.
  const double t = params.temperature;
  double m = -INFINITY;
  for (int i = 0; i < n; ++i) m = std::max(m, static_cast<double>(logits[i]) / t);
  if (!std::isfinite(m)) {
    throw Error("probabilities: temperature = " + format_double(t) +
                " makes logit / temperature overflow a double; expected a larger temperature");
  }
  for (int i = 0; i < n; ++i) p[static_cast<size_t>(i)] = std::exp(static_cast<double>(logits[i]) / t - m);

  const bool use_top_k = params.top_k > 0 && params.top_k < n;
  const bool use_top_p = params.top_p < 1.0;
  if (use_top_k || use_top_p) {
    // order: logit descending, ties by lower index (a strict total order, so it is unique).
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto before = [logits](int a, int b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    const int limit = use_top_k ? params.top_k : n;
    if (limit < n) {
      std::partial_sort(order.begin(), order.begin() + limit, order.end(), before);
    } else {
      std::sort(order.begin(), order.end(), before);
    }
    // top-k: only the first `limit` tokens of the order survive.
    for (int j = limit; j < n; ++j) p[static_cast<size_t>(order[static_cast<size_t>(j)])] = 0.0;
    if (use_top_p) {
      double s = 0.0;  // mass surviving top-k, summed in index order
      for (int i = 0; i < n; ++i) s += p[static_cast<size_t>(i)];
      int kept = limit;  // all survivors if rounding never reaches top_p
      double cumulative = 0.0;
      for (int j = 0; j < limit; ++j) {
        cumulative += p[static_cast<size_t>(order[static_cast<size_t>(j)])] / s;
        if (cumulative >= params.top_p) {
          kept = j + 1;
          break;
        }
      }
      for (int j = kept; j < limit; ++j) p[static_cast<size_t>(order[static_cast<size_t>(j)])] = 0.0;
    }
  }

  double total = 0.0;  // index order, independent of how the survivors were found
  for (int i = 0; i < n; ++i) total += p[static_cast<size_t>(i)];
  for (int i = 0; i < n; ++i) p[static_cast<size_t>(i)] /= total;
  return p;
}

int sample_from(const std::vector<double>& p, double u) {
  if (!(u >= 0.0 && u < 1.0)) {
    throw Error("sample_from: uniform u = " + format_double(u) + " is outside [0, 1)");
  }
  if (p.empty()) throw Error("sample_from: probability vector is empty; expected at least one token");
  double cumulative = 0.0;
  int chosen = -1;
  int last_nonzero = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i];
    if (!(std::isfinite(pi) && pi >= 0.0)) {
      throw Error("sample_from: probability of token " + std::to_string(i) + " is " +
                  format_double(pi) + "; expected a finite value >= 0");
    }
    if (pi > 0.0) last_nonzero = static_cast<int>(i);
    cumulative += pi;
    // pi > 0 excludes zero-probability tokens even when u sits exactly on a CDF step.
    if (chosen < 0 && pi > 0.0 && u < cumulative) chosen = static_cast<int>(i);
  }
  if (last_nonzero < 0) {
    throw Error("sample_from: all " + std::to_string(p.size()) +
                " probabilities are 0; expected at least one positive entry");
  }
  return chosen >= 0 ? chosen : last_nonzero;
}

int sample_token(const float* logits, int n, const SamplingParams& params, uint32_t sequence,
                 uint32_t position) {
  switch (params.mode) {
    case SamplingParams::Mode::greedy:
      params.validate();
      return argmax(logits, n);
    case SamplingParams::Mode::sample: {
      const std::vector<double> p = probabilities(logits, n, params);
      return sample_from(p, uniform(params.seed, sequence, position, RandomPurpose::sample, 0));
    }
    case SamplingParams::Mode::coupled: {
      // Gumbel-max over the tokens top-k / top-p leave, which samples their renormalised
      // softmax(logits / T).
      const std::vector<double> p = probabilities(logits, n, params);
      int best = -1;
      double best_score = 0.0;
      for (int i = 0; i < n; ++i) {
        if (p[static_cast<size_t>(i)] == 0.0) continue;
        const double score = static_cast<double>(logits[i]) / params.temperature +
                             gumbel(params.seed, sequence, position, static_cast<uint32_t>(i));
        if (best < 0 || score > best_score) {  // strict: ties keep the lower index
          best = i;
          best_score = score;
        }
      }
      return best;
    }
  }
  params.validate();  // an out-of-range mode value: throws with the field named
  throw Error("sample_token: invalid sampling mode");
}

}  // namespace specdec
