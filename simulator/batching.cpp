#include "simulator/batching.hpp"

#include <cmath>
#include <limits>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "simulator/tree_shape.hpp"

namespace specdec::sim {

Batching parse_batching(const std::string& name, const std::string& source) {
  if (name == "static") return Batching::static_batch;
  if (name == "continuous") return Batching::continuous;
  throw Error(source + ": unknown batching '" + name + "'; expected static or continuous");
}

std::string batching_name(Batching b) { return b == Batching::static_batch ? "static" : "continuous"; }

std::vector<double> tokens_per_step_distribution(const Scenario& s) {
  if (s.plan.method == Method::sequential) return {1.0};
  if (s.measured_tokens_per_step)
    throw Error("a measured AL gives the mean tokens per step only; static batching needs their distribution: "
                "give an acceptance model (--alpha, --acceptance, --acceptance-by-depth, --tree-acceptance or --trace)");
  if (!s.acceptance) throw Error("method " + method_name(s.plan.method) + " needs an acceptance model");
  // reach[d − 1] = P(a step accepts at least d drafts).
  std::vector<double> reach;
  if (s.plan.tree) {
    reach = tree_depth_reach(*s.plan.tree, *s.acceptance);
  } else {
    const AcceptanceModel& a = *s.acceptance;
    for (int d = 1; d <= s.plan.k; ++d) {
      if (!a.answers(d) || !a.answers(d - 1))
        throw Error("acceptance model '" + a.describe() + "' does not answer K = " + std::to_string(a.answers(d) ? d - 1 : d) +
                    ": the per-step distribution of a K = " + std::to_string(s.plan.k) +
                    " chain needs the AL of every K up to it");
      reach.push_back(a.expected_tokens(d) - a.expected_tokens(d - 1));
    }
  }
  // P(exactly j tokens) = P(≥ j − 1 accepted) − P(≥ j accepted); j = 1 is "none accepted".
  std::vector<double> p(reach.size() + 1);
  double prev = 1.0;
  for (size_t d = 0; d < reach.size(); ++d) {
    p[d] = std::max(0.0, prev - reach[d]);  // rounding can leave −1e-17
    prev = reach[d];
  }
  p.back() = prev;
  return p;
}

double expected_max_of_normals(int n) {
  if (n < 1) throw Error("expected maximum of " + std::to_string(n) + " normals: n must be >= 1");
  if (n == 1) return 0.0;
  // Simpson's rule on [−10, 10]: the integrand is negligible beyond for any n a batch can have.
  const int steps = 4000;
  const double lo = -10.0, hi = 10.0, h = (hi - lo) / steps;
  auto f = [n](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    return x * n * phi * std::pow(cdf, n - 1);
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < steps; ++i) sum += f(lo + i * h) * (i % 2 ? 4.0 : 2.0);
  return sum * h / 3.0;
}

namespace {

// Mean and standard deviation of the tokens a step emits; E[X²] for the overshoot.
struct Moments {
  double mean = 1, sd = 0, second = 1;
};

Moments moments(const std::vector<double>& p) {
  Moments m{0, 0, 0};
  for (size_t j = 0; j < p.size(); ++j) {
    m.mean += p[j] * double(j + 1);
    m.second += p[j] * double(j + 1) * double(j + 1);
  }
  m.sd = std::sqrt(std::max(0.0, m.second - m.mean * m.mean));
  return m;
}

// Time of the prefills a continuous batch carries per step: the requests that finish per step
// (C·μ/N) each bring one prompt.
double prefill_per_step(const Scenario& s, double tokens_per_step) {
  return double(s.workload.batch) * tokens_per_step / double(s.workload.output_len) * prefill_seconds_per_prompt(s);
}

}  // namespace

double prefill_seconds_per_prompt(const Scenario& s) {
  return s.engine.interleaves_prefill ? interleaved_prefill_s(s) : prefill_cost(s).total_s();
}

StepUnderLoad step_under_load(double decode_step_s, double prefill_s, double prompts_per_s, int prompt_len) {
  // Written so that NaN fails too.
  if (!(decode_step_s > 0 && std::isfinite(decode_step_s)))
    throw Error("step under load: the decode step must be a finite number > 0 seconds, got " + format_double(decode_step_s));
  if (!(prefill_s >= 0 && std::isfinite(prefill_s)))
    throw Error("step under load: a prompt's prefill must be a finite number >= 0 seconds, got " + format_double(prefill_s));
  if (!(prompts_per_s >= 0 && std::isfinite(prompts_per_s)))
    throw Error("step under load: the prompts' arrival rate must be a finite number >= 0 per second, got " +
                format_double(prompts_per_s));
  if (prompt_len < 1) throw Error("step under load: the prompt length must be >= 1, got " + std::to_string(prompt_len));
  StepUnderLoad r;
  r.decode_step_s = decode_step_s;
  r.prefill_s_per_prompt = prefill_s;
  r.prompts_per_s = prompts_per_s;
  r.prefill_share = prompts_per_s * prefill_s;
  r.keeps_up = r.prefill_share < 1;
  if (!r.keeps_up) {
    r.step_s = r.prompts_per_step = r.prefill_tokens_per_step = r.prefill_s_per_step = std::numeric_limits<double>::infinity();
    return r;
  }
  r.step_s = decode_step_s / (1 - r.prefill_share);
  r.prompts_per_step = prompts_per_s * r.step_s;
  r.prefill_tokens_per_step = r.prompts_per_step * prompt_len;
  r.prefill_s_per_step = r.prompts_per_step * prefill_s;
  return r;
}

BatchingPrediction predict_batching(const Scenario& s, Batching mode) {
  validate_scenario(s);
  BatchingPrediction r;
  r.mode = mode;
  r.sequences = s.workload.batch;
  const double n = s.workload.output_len;
  const double context = s.workload.prompt_len + 0.5 * s.workload.output_len;  // as predict() takes it

  Scenario seq = s;
  seq.plan = DraftPlan{};
  seq.drafter.reset();
  seq.acceptance = nullptr;
  seq.measured_tokens_per_step.reset();
  const double seq_step = decode_step_cost(seq, context, 1.0).total_s();

  if (mode == Batching::continuous) {
    // Only the mean matters: the batch is always full.
    const Prediction p = predict(s, /*breakdown=*/false);
    r.tokens_per_step = p.tokens_per_step;
    if (s.plan.method != Method::sequential && !s.measured_tokens_per_step && s.acceptance) {
      try {
        r.tokens_per_step_sd = moments(tokens_per_step_distribution(s)).sd;
      } catch (const Error&) {
        r.tokens_per_step_sd = 0;  // a table without every K: the spread is unknown and not needed
      }
    }
    r.step_s = p.step.total_s();
    r.prefill_per_step_s = prefill_per_step(s, r.tokens_per_step);
    r.steps = n / r.tokens_per_step;
    r.tpot_s = (r.step_s + r.prefill_per_step_s) / r.tokens_per_step;
    r.throughput_tokens_per_s = r.sequences / r.tpot_s;
    r.sequential_tpot_s = seq_step + prefill_per_step(seq, 1.0);
  } else {
    const Moments m = moments(tokens_per_step_distribution(s));
    r.tokens_per_step = m.mean;
    r.tokens_per_step_sd = m.sd;
    r.step_s = decode_step_cost(s, context, m.mean).total_s();
    const double overshoot = (m.second - m.mean) / (2.0 * m.mean);
    const double mean_steps = (n + overshoot) / m.mean;
    const double sd_steps = std::sqrt(n * m.sd * m.sd / (m.mean * m.mean * m.mean));
    r.steps = mean_steps + expected_max_of_normals(r.sequences) * sd_steps;
    r.ragged_factor = r.steps / mean_steps;
    r.tpot_s = r.steps * r.step_s / n;  // every request of the batch is done when the batch is
    r.throughput_tokens_per_s = r.sequences * n / (r.steps * r.step_s);
    r.sequential_tpot_s = seq_step;
  }
  r.sequential_throughput_tokens_per_s = r.sequences / r.sequential_tpot_s;
  r.speedup = r.throughput_tokens_per_s / r.sequential_throughput_tokens_per_s;
  const std::string where = "batching (" + s.target.name + " on " + s.hardware.name + ")";
  for (const auto& [what, v] : {std::pair<const char*, double>{"tokens per step", r.tokens_per_step},
                                {"step time", r.step_s}, {"steps", r.steps}, {"TPOT", r.tpot_s},
                                {"throughput", r.throughput_tokens_per_s}, {"sequential TPOT", r.sequential_tpot_s},
                                {"speedup", r.speedup}})
    require_finite_result(v, what, where);
  return r;
}

}  // namespace specdec::sim
