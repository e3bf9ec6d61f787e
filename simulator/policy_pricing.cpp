#include "simulator/policy_pricing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/policies/registry.hpp"

namespace specdec::sim {

namespace {

constexpr int kBlocks = 50;           // batch means for the standard errors
constexpr int kMaxSequenceTokens = 2048;

// SplitMix64 (Steele, Lea, Flood 2014): the finaliser as a hash, the generator for the draws.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class SplitMix {
 public:
  explicit SplitMix(uint64_t state) : state_(state) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ULL); }
  // Uniform in (0, 1).
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() {  // Box–Muller, one of the pair
    const double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  // Gamma(shape, 1): Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1)·U^{1/shape}.
  double gamma(double shape) {
    if (shape < 1.0) {
      const double u = uniform();
      return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      const double x = normal();
      double v = 1.0 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

 private:
  uint64_t state_;
};

using Draft = SyntheticDraft;

}  // namespace

SyntheticDraft synthetic_draft(uint64_t seed, int sequence, int step, int depth, double a, double kappa) {
  uint64_t key = mix64(seed ^ 0x5DEECE66DULL);
  key = mix64(key + static_cast<uint64_t>(sequence) * 0x9E3779B97F4A7C15ULL);
  key = mix64(key + static_cast<uint64_t>(step) * 0xD1B54A32D192ED03ULL);
  key = mix64(key + static_cast<uint64_t>(depth));
  SplitMix rng(key);
  Draft d;
  if (a <= 0.0) d.confidence = 0.0;
  else if (a >= 1.0) d.confidence = 1.0;
  else {
    const double x = rng.gamma(kappa * a), y = rng.gamma(kappa * (1.0 - a));
    d.confidence = x + y > 0 ? x / (x + y) : a;
  }
  d.accepted = rng.uniform() < d.confidence;
  return d;
}

namespace {

void check_chain_scenario(const Scenario& s, const std::string& what, const OptionSpelling& sp = kCommandLineSpelling) {
  if (s.plan.method != Method::sequential && draft_free(s.plan.method))
    throw Error(what + " prices policies over a drafter's forwards and confidence; method " + method_name(s.plan.method) +
                " is draft-free (no drafter forward, no confidence, and K only caps what the history offers): price "
                "fixed K with " + sp("k") + " or " + sp("best-k"));
  if (s.plan.method == Method::sequential || !s.drafter)
    throw Error(what + " needs a speculative method: give " + sp("drafter") + " (a chain drafter)");
  if (s.plan.tree)
    throw Error(what + " prices chains (a policy chooses a chain's depth); give " + sp("k") + ", not " + sp("tree") + " or " +
                sp("dynamic-tree"));
  if (s.measured_tokens_per_step)
    throw Error(what + " needs per-position acceptance (" + sp("alpha") + ", " + sp("acceptance") + ", " +
                sp("acceptance-by-depth") + ", " + sp("trace") + ", ...); a measured AL (" + sp("al") +
                ") belongs to one fixed configuration");
  if (!s.acceptance)
    throw Error(what + " needs an acceptance model with per-position rates (" + sp("alpha") + ", " + sp("acceptance") + ", " +
                sp("acceptance-by-depth") + ", " + sp("acceptance-table") + ", " + sp("trace") + ")");
  validate_scenario(s);
}

double chain_al(const std::vector<double>& rates, int k) {
  double al = 1.0, reach = 1.0;
  for (int i = 0; i < k; ++i) {
    reach *= rates[static_cast<std::size_t>(i)];
    al += reach;
  }
  return al;
}

// Σ y / Σ x and its standard error from per-block sums (the ratio estimator's linearisation).
std::pair<double, double> ratio_with_se(const std::vector<double>& y, const std::vector<double>& x) {
  double sy = 0, sx = 0;
  std::size_t n = 0;
  for (std::size_t b = 0; b < y.size(); ++b) {
    if (x[b] <= 0) continue;
    sy += y[b];
    sx += x[b];
    ++n;
  }
  if (sx <= 0) return {0.0, 0.0};
  const double r = sy / sx;
  if (n < 2) return {r, 0.0};
  double ss = 0;
  for (std::size_t b = 0; b < y.size(); ++b) {
    if (x[b] <= 0) continue;
    const double e = y[b] - r * x[b];
    ss += e * e;
  }
  const double mean_x = sx / static_cast<double>(n);
  return {r, std::sqrt(ss / (static_cast<double>(n) * static_cast<double>(n - 1))) / mean_x};
}

std::string round3(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

}  // namespace

std::vector<double> per_position_acceptance(const Scenario& s, int max_depth, const OptionSpelling& sp) {
  if (!s.acceptance) throw Error("policy pricing needs an acceptance model with per-position rates");
  std::vector<double> rates;
  for (int d = 1; d <= max_depth; ++d) {
    if (d > s.acceptance->max_k() || !s.acceptance->answers(d))
      throw Error("policy pricing needs the per-position acceptance at every depth up to K = " + std::to_string(max_depth) +
                  "; acceptance model '" + s.acceptance->describe() + "' does not answer depth " + std::to_string(d) +
                  " (give a smaller " + sp("k") + " or acceptance data that covers it)");
    const double a = s.acceptance->conditional(d, 0);
    if (!(a >= 0.0 && a <= 1.0)) throw Error("per-position acceptance at depth " + std::to_string(d) + " is not a probability");
    rates.push_back(a);
  }
  return rates;
}

PolicyStepCosts policy_step_costs(const Scenario& s, const std::vector<double>& rates) {
  PolicyStepCosts c;
  c.max_depth = s.plan.k;
  const double context = s.workload.prompt_len + 0.5 * s.workload.output_len;  // predict()'s mean context
  Scenario plain = s;
  plain.plan = DraftPlan{};
  plain.drafter.reset();
  plain.measured_tokens_per_step.reset();
  c.plain_s = decode_step_cost(plain, context, 1.0).total_s();
  c.draft_s.assign(static_cast<std::size_t>(c.max_depth) + 1, 0.0);
  c.verify_s.assign(static_cast<std::size_t>(c.max_depth) + 1, c.plain_s);
  c.draft_forwards.assign(static_cast<std::size_t>(c.max_depth) + 1, 0);
  const double per_forward = s.engine.draft_step_overhead(method_name(s.plan.method), s.engine_version);
  for (int g = 1; g <= c.max_depth; ++g) {
    Scenario sk = s;
    sk.plan.k = g;
    sk.plan.tree.reset();
    sk.measured_tokens_per_step.reset();
    const StepCost step = decode_step_cost(sk, context, chain_al(rates, g));
    const double draft = step.draft_s + step.draft_forwards * per_forward;
    c.draft_s[static_cast<std::size_t>(g)] = draft;
    c.verify_s[static_cast<std::size_t>(g)] = step.total_s() - draft;
    c.draft_forwards[static_cast<std::size_t>(g)] = step.draft_forwards;
  }
  // Every priced time finite and the plain step > 0 (speedups divide by it).
  const std::string where = "policy pricing (" + s.target.name + " on " + s.hardware.name + ")";
  require_finite_result(c.plain_s > 0 ? c.plain_s : std::numeric_limits<double>::infinity(), "plain step time", where);
  for (int g = 1; g <= c.max_depth; ++g) {
    require_finite_result(c.draft_s[static_cast<std::size_t>(g)], "draft time", where);
    require_finite_result(c.verify_s[static_cast<std::size_t>(g)], "verify time", where);
  }
  return c;
}

void check_policy_scenario(const Scenario& s, const OptionSpelling& sp) {
  check_chain_scenario(s, "pricing a speculation policy", sp);
  (void)per_position_acceptance(s, s.plan.k, sp);
}

PolicyPricing price_policy(const Scenario& s, const PolicySpec& policy, const PolicyPricingOptions& options) {
  check_chain_scenario(s, "pricing a speculation policy");
  if (options.steps < 100 || options.steps > 100000000)
    throw Error("policy pricing: steps must be in [100, 1e8], got " + std::to_string(options.steps));
  if (!(options.concentration > 0) || !std::isfinite(options.concentration))
    throw Error("policy pricing: the confidence concentration must be a positive number");
  if (options.sequence_tokens < 0) throw Error("policy pricing: sequence tokens must be >= 0");
  const int K = s.plan.k;
  const std::vector<double> rates = per_position_acceptance(s, K);
  const PolicyStepCosts costs = policy_step_costs(s, rates);
  // One forward drafts every position (P-EAGLE's parallel slots, Medusa's heads in one pass).
  const bool parallel = s.plan.method == Method::peagle || s.plan.method == Method::medusa;

  PolicyPricing r;
  r.policy = normalized(policy, "policy");
  r.label = r.policy.label();
  r.batch = s.workload.batch;
  r.max_depth = K;
  r.seed = options.seed;
  r.concentration = options.concentration;
  r.sequence_tokens = options.sequence_tokens > 0 ? options.sequence_tokens
                                                  : std::clamp(s.workload.output_len, 1, kMaxSequenceTokens);
  std::vector<double> k_count(static_cast<std::size_t>(K) + 1, 0.0), n_count(k_count);
  std::vector<double> block_tokens(kBlocks, 0.0), block_time(kBlocks, 0.0), block_steps(kBlocks, 0.0);
  double drafted = 0, accepted_total = 0, forwards = 0, draft_time = 0, verify_time = 0, planned_sum = 0;
  std::vector<double> confidences;
  confidences.reserve(static_cast<std::size_t>(K));
  long long total = 0;
  int sequence = 0;
  while (total < options.steps) {
    const std::unique_ptr<SpeculationPolicy> p = make_policy(r.policy);
    int emitted = 0;
    for (int step = 0; emitted < r.sequence_tokens && total < options.steps; ++step) {
      const StepPlan plan = p->plan({step, s.workload.batch, K});
      const int depth = std::clamp(plan.depth, 0, K);
      confidences.clear();
      int generated = 0, kept = 0;
      std::vector<Draft> drafts;
      for (int i = 1; i <= depth; ++i) {
        // The drafter's distribution at depth i is computed (its forward paid) before draft_at is
        // asked; the synthetic draft is its top-1 token (greedy drafting), so the top-1
        // probability and the drawn token's confidence are the same number.
        const Draft d = synthetic_draft(options.seed, sequence, step, i, rates[static_cast<std::size_t>(i - 1)], options.concentration);
        generated = i;
        if (plan.stop_rule && !p->draft_at(i, d.confidence)) break;  // stopped without it
        drafts.push_back(d);
        kept = i;
        if (!plan.stop_rule) continue;
        confidences.push_back(d.confidence);
        if (!p->draft_after(i, d.confidence, d.confidence)) break;  // stopped after it
      }
      if (kept < plan.min_drafts) kept = 0;  // too short to verify (llama.cpp's n_min): a plain step
      int accepted = 0;
      while (accepted < kept && drafts[static_cast<std::size_t>(accepted)].accepted) ++accepted;

      const int draft_index = parallel && generated > 0 ? depth : generated;
      const double d_s = costs.draft_s[static_cast<std::size_t>(draft_index)];
      const double v_s = costs.verify_s[static_cast<std::size_t>(kept)];
      StepOutcome o;
      o.planned_depth = kept > 0 ? depth : 0;
      o.drafted_depth = kept;
      o.drafted_nodes = kept;
      o.accepted = accepted;
      o.confidences = plan.stop_rule ? &confidences : nullptr;
      o.batch_size = s.workload.batch;
      o.draft_s = d_s;
      o.verify_s = v_s;
      p->observe(o);

      const auto block = static_cast<std::size_t>(total * kBlocks / options.steps);
      block_tokens[block] += accepted + 1;
      block_time[block] += (d_s + v_s) / costs.plain_s;  // in plain steps: all-plain is exactly 1x
      block_steps[block] += 1;
      k_count[static_cast<std::size_t>(depth)] += 1;
      n_count[static_cast<std::size_t>(kept)] += 1;
      planned_sum += depth;
      drafted += kept;
      accepted_total += accepted;
      forwards += costs.draft_forwards[static_cast<std::size_t>(draft_index)];
      draft_time += d_s;
      verify_time += v_s;
      emitted += accepted + 1;
      ++total;
    }
    ++sequence;
  }
  const double n = static_cast<double>(total);
  r.steps = static_cast<int>(total);
  r.sequences = sequence;
  const auto [al, al_se] = ratio_with_se(block_tokens, block_steps);
  r.tokens_per_step = al;
  r.tokens_per_step_se = al_se;
  r.mean_k = planned_sum / n;
  r.mean_drafted = drafted / n;
  for (std::size_t i = 0; i < k_count.size(); ++i) {
    r.k_histogram.push_back(k_count[i] / n);
    r.drafted_histogram.push_back(n_count[i] / n);
  }
  r.acceptance_rate = drafted > 0 ? accepted_total / drafted : 0.0;
  r.drafter_forwards_per_step = forwards / n;
  r.draft_s = draft_time / n;
  r.verify_s = verify_time / n;
  r.step_s = (draft_time + verify_time) / n;
  // Tokens per plain-step time: the speedup over plain decoding at this batch.
  const auto [speedup, speedup_se] = ratio_with_se(block_tokens, block_time);
  r.speedup = speedup;
  r.speedup_se = speedup_se;
  r.sequential_tpot_s = costs.plain_s;
  r.tpot_s = costs.plain_s / speedup;
  r.throughput_tokens_per_s = s.workload.batch / r.tpot_s;
  return r;
}

std::vector<FixedDepthPricing> price_fixed_depths(const Scenario& s) {
  check_chain_scenario(s, "pricing fixed draft depths");
  const std::vector<double> rates = per_position_acceptance(s, s.plan.k);
  const PolicyStepCosts costs = policy_step_costs(s, rates);
  std::vector<FixedDepthPricing> out;
  for (int k = 0; k <= s.plan.k; ++k) {
    FixedDepthPricing f;
    f.k = k;
    f.tokens_per_step = chain_al(rates, k);
    f.step_s = k == 0 ? costs.plain_s : costs.draft_s[static_cast<std::size_t>(k)] + costs.verify_s[static_cast<std::size_t>(k)];
    f.tpot_s = f.step_s / f.tokens_per_step;
    f.throughput_tokens_per_s = s.workload.batch / f.tpot_s;
    f.speedup = costs.plain_s / f.tpot_s;
    f.drafter_forwards = costs.draft_forwards[static_cast<std::size_t>(k)];
    out.push_back(f);
  }
  return out;
}

FixedDepthPricing best_fixed_depth(const std::vector<FixedDepthPricing>& fixed) {
  if (fixed.empty()) throw Error("best fixed depth: nothing priced");
  FixedDepthPricing best = fixed.front();
  for (const FixedDepthPricing& f : fixed)
    if (f.tpot_s < best.tpot_s) best = f;
  return best;
}

PolicySpec goodput_for_scenario(const Scenario& s) {
  check_chain_scenario(s, "goodput costs");
  const std::vector<double> rates = per_position_acceptance(s, s.plan.k);
  const PolicyStepCosts c = policy_step_costs(s, rates);
  const int K = c.max_depth;
  // goodput's cost(K) = 1 + c_verify + K·c_draft in plain forwards: the least-squares line through
  // this scenario's step(K) / plain − 1 at K = 1..max_depth (at a large batch verification grows
  // with K too, and the line folds that growth into c_draft).
  std::vector<double> y;
  for (int k = 1; k <= K; ++k)
    y.push_back((c.draft_s[static_cast<std::size_t>(k)] + c.verify_s[static_cast<std::size_t>(k)]) / c.plain_s - 1.0);
  double c_draft = c.draft_s[1] / c.plain_s, c_verify = y[0] - c_draft;
  if (K > 1) {
    double mk = 0, my = 0;
    for (int k = 1; k <= K; ++k) {
      mk += k;
      my += y[static_cast<std::size_t>(k - 1)];
    }
    mk /= K;
    my /= K;
    double sxy = 0, sxx = 0;
    for (int k = 1; k <= K; ++k) {
      sxy += (k - mk) * (y[static_cast<std::size_t>(k - 1)] - my);
      sxx += (k - mk) * (k - mk);
    }
    c_draft = sxy / sxx;
    c_verify = my - c_draft * mk;
  }
  c_draft = std::clamp(c_draft, 0.0, 1e3);
  c_verify = std::clamp(c_verify, 0.0, 1e3);
  return parse_policy_spec("goodput,c_draft=" + round3(c_draft) + ",c_verify=" + round3(c_verify), "goodput costs");
}

PolicyRecommendation recommend_policy(const Scenario& s, const PolicyPricingOptions& options) {
  PolicyRecommendation r;
  r.fixed = price_fixed_depths(s);
  r.best_fixed = best_fixed_depth(r.fixed);
  std::vector<PolicyRankingRow> rows;
  PolicyRankingRow fixed_row;
  fixed_row.label = "fixed K=" + std::to_string(r.best_fixed.k) + " (best fixed K, closed form)";
  fixed_row.closed_form = true;
  fixed_row.tokens_per_step = r.best_fixed.tokens_per_step;
  fixed_row.mean_k = r.best_fixed.k;
  fixed_row.mean_drafted = r.best_fixed.k;
  fixed_row.drafter_forwards_per_step = r.best_fixed.drafter_forwards;
  fixed_row.tpot_s = r.best_fixed.tpot_s;
  fixed_row.throughput_tokens_per_s = r.best_fixed.throughput_tokens_per_s;
  fixed_row.speedup = r.best_fixed.speedup;
  rows.push_back(fixed_row);
  std::vector<PolicySpec> specs;
  for (const PolicyEntry& e : policy_registry()) specs.push_back(normalized(PolicySpec{e.name, nlohmann::json::object()}, "policy"));
  specs.push_back(goodput_for_scenario(s));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const PolicyPricing p = price_policy(s, specs[i], options);
    PolicyRankingRow row;
    row.label = p.label;
    row.scenario_costs = i + 1 == specs.size();
    if (row.scenario_costs) row.label += " (this scenario's costs)";
    row.tokens_per_step = p.tokens_per_step;
    row.tokens_per_step_se = p.tokens_per_step_se;
    row.mean_k = p.mean_k;
    row.mean_drafted = p.mean_drafted;
    row.drafter_forwards_per_step = p.drafter_forwards_per_step;
    row.tpot_s = p.tpot_s;
    row.throughput_tokens_per_s = p.throughput_tokens_per_s;
    row.speedup = p.speedup;
    row.speedup_se = p.speedup_se;
    rows.push_back(row);
    r.policies.push_back(p);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const PolicyRankingRow& a, const PolicyRankingRow& b) { return a.tpot_s < b.tpot_s; });
  r.ranking = rows;
  r.recommended = rows.front().label;
  if (rows.size() > 1) {
    const double se = std::hypot(rows[0].speedup_se, rows[1].speedup_se);
    r.clear_winner = rows[0].speedup - rows[1].speedup > 2 * se;
  }
  return r;
}

nlohmann::json policy_pricing_json(const PolicyPricing& p) {
  return {{"policy", p.policy.to_json()},
          {"label", p.label},
          {"batch", p.batch},
          {"max_depth", p.max_depth},
          {"steps", p.steps},
          {"sequences", p.sequences},
          {"sequence_tokens", p.sequence_tokens},
          {"seed", p.seed},
          {"confidence_concentration", p.concentration},
          {"confidence_model", "confidence ~ Beta(mean a_i, concentration); a draft is accepted with probability its confidence"},
          {"acceptance_length", p.tokens_per_step},
          {"acceptance_length_se", p.tokens_per_step_se},
          {"mean_k", p.mean_k},
          {"mean_drafted", p.mean_drafted},
          {"k_histogram", p.k_histogram},
          {"drafted_histogram", p.drafted_histogram},
          {"acceptance_rate", p.acceptance_rate},
          {"drafter_forwards_per_step", p.drafter_forwards_per_step},
          {"draft_ms", p.draft_s * 1e3},
          {"verify_ms", p.verify_s * 1e3},
          {"step_ms", p.step_s * 1e3},
          {"tpot_ms", p.tpot_s * 1e3},
          {"throughput_tokens_per_s", p.throughput_tokens_per_s},
          {"sequential_tpot_ms", p.sequential_tpot_s * 1e3},
          {"speedup", p.speedup},
          {"speedup_se", p.speedup_se}};
}

nlohmann::json fixed_depth_json(const FixedDepthPricing& f) {
  return {{"k", f.k},
          {"acceptance_length", f.tokens_per_step},
          {"drafter_forwards", f.drafter_forwards},
          {"step_ms", f.step_s * 1e3},
          {"tpot_ms", f.tpot_s * 1e3},
          {"throughput_tokens_per_s", f.throughput_tokens_per_s},
          {"speedup", f.speedup}};
}

nlohmann::json policy_recommendation_json(const PolicyRecommendation& r) {
  nlohmann::json j;
  j["recommended"] = r.recommended;
  j["clear_winner"] = r.clear_winner;
  j["best_fixed"] = fixed_depth_json(r.best_fixed);
  j["ranking"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.ranking.size(); ++i) {
    const PolicyRankingRow& row = r.ranking[i];
    j["ranking"].push_back({{"rank", i + 1},
                            {"label", row.label},
                            {"closed_form", row.closed_form},
                            {"scenario_costs", row.scenario_costs},
                            {"acceptance_length", row.tokens_per_step},
                            {"acceptance_length_se", row.tokens_per_step_se},
                            {"mean_k", row.mean_k},
                            {"mean_drafted", row.mean_drafted},
                            {"drafter_forwards_per_step", row.drafter_forwards_per_step},
                            {"tpot_ms", row.tpot_s * 1e3},
                            {"throughput_tokens_per_s", row.throughput_tokens_per_s},
                            {"speedup", row.speedup},
                            {"speedup_se", row.speedup_se}});
  }
  j["policies"] = nlohmann::json::array();
  for (const PolicyPricing& p : r.policies) j["policies"].push_back(policy_pricing_json(p));
  j["fixed_by_k"] = nlohmann::json::array();
  for (const FixedDepthPricing& f : r.fixed) j["fixed_by_k"].push_back(fixed_depth_json(f));
  return j;
}

}  // namespace specdec::sim
