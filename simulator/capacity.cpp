#include "simulator/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::sim {

namespace {

// "TP 8" plain, "TP 8, DP 8, EP 8" otherwise: a configuration's layout in the search's messages.
std::string layout_label(const Parallelism& p) {
  if (p.plain()) return "TP " + std::to_string(p.ranks);
  return "TP " + std::to_string(p.ranks) + ", DP " + std::to_string(p.dp_attention) + ", EP " + std::to_string(p.ep);
}

void check_request(const CapacityRequest& req) {
  // Written so that NaN fails too; an infinite load or target has no plan.
  if (!(req.requests_per_s > 0 && std::isfinite(req.requests_per_s)))
    throw Error("capacity planning: request rate must be > 0 requests/s and finite");
  if (!(req.tpot_target_s > 0 && std::isfinite(req.tpot_target_s)))
    throw Error("capacity planning: TPOT target must be > 0 seconds and finite");
  if (!(req.ttft_target_s >= 0 && std::isfinite(req.ttft_target_s)))
    throw Error("capacity planning: TTFT target must be >= 0 seconds (0 = none) and finite");
  if (req.max_batch < 1) throw Error("capacity planning: max batch must be >= 1");
  if (!(req.price_per_device_hour < 0 || std::isfinite(req.price_per_device_hour)))
    throw Error("capacity planning: the price per device-hour must be finite");
  if (!(req.max_utilization > 0 && req.max_utilization < 1))
    throw Error("capacity planning: the maximum utilisation must be > 0 and < 1 (at 1 or more a replica's queue grows without "
                "bound), got " + format_double(req.max_utilization));
  if (!(req.output_len_cv >= 0 && req.output_len_cv <= kMaxOutputLenCv))
    throw Error("capacity planning: the output length's coefficient of variation must be in [0, " + format_double(kMaxOutputLenCv) +
                "], got " + format_double(req.output_len_cv));
  if (!(req.arrival_cv >= 0 && req.arrival_cv <= kMaxArrivalCv))
    throw Error("capacity planning: the interarrival times' coefficient of variation must be in [0, " + format_double(kMaxArrivalCv) +
                "], got " + format_double(req.arrival_cv));
  if (!(req.ttft_percentile == 0 || (req.ttft_percentile > 0 && req.ttft_percentile < 100)))
    throw Error("capacity planning: the TTFT percentile must be 0 (the mean) or between 0 and 100 (exclusive), got " +
                format_double(req.ttft_percentile));
}

std::string too_many_devices_message(const CapacityRequest& req, const std::string& because_of_prefill = "") {
  std::ostringstream e;
  e << "capacity planning: serving " << req.requests_per_s << " requests/s within the targets (utilisation <= "
    << req.max_utilization << ") needs more than " << kMaxPlannedDevices << " devices, more than specdec plans for";
  if (!because_of_prefill.empty()) e << ", because of the prompts' prefill: " << because_of_prefill;
  e << "; see docs/reliability.md";
  return e.str();
}

bool meets_ttft_target(const ReplicaQueue& r, const CapacityRequest& req) {
  if (req.ttft_target_s == 0) return true;
  return (req.ttft_percentile > 0 ? r.ttft_at_percentile_s : r.ttft_with_wait_s) <= req.ttft_target_s;
}

// The most requests/s a replica of `o` serves at ρ = 1: λ·(a + d / (1 − λc)) = B with a = TTFT and d
// the decode time of one request without prompts, i.e. ac·λ² − (a + d + Bc)·λ + B = 0, whose smaller
// root (the one below 1/c) is written so that c = 0 gives B / (a + d) and nothing cancels.
double rate_at_full_utilization(const CapacityOption& o, const Scenario& s) {
  // S(λ) = c + E / (1 − λc): TTFT's own prefill, and what stretches with the step (the steps before
  // the first token, the decode), E at the decode step D.
  const double c = o.prefill_s_per_prompt, D = o.prediction.step.total_s();
  const double a = c, d = ttft_under_load(o, s, D) - c + s.workload.output_len * o.prediction.tpot_s;
  const double B = o.batch, b = a + d + B * c;
  return 2 * B / (b + std::sqrt(b * b - 4 * a * c * B));
}

// The fewest replicas (of at most `most`) that check_replicas accepts; 0 when even `most` do not,
// with what `most` still break in `broken_at_most`. Every limit eases as replicas are added (each
// sees less load: a shorter step, a shorter service, less waiting), so a doubling search from a
// lower bound, then bisection, finds the first that meets them all.
long long fewest_replicas(const CapacityOption& o, const Scenario& s, const CapacityRequest& req, long long most,
                          std::vector<ReplicaLimit>& broken_at_most) {
  // TTFT and TPOT at no load: a request's service only grows with the load.
  const double service_s = ttft_under_load(o, s, o.prediction.step.total_s()) + s.workload.output_len * o.prediction.tpot_s;
  // Lower bounds, in double: a load far beyond any plan must not wrap an integer. Utilisation with the
  // step alone (the prompts only lengthen it; the relative nudge keeps a load that is a whole number
  // of replicas by exact arithmetic from taking one more by rounding), and a prefill share below 1:
  // n > rate · c.
  const double at_cap = std::ceil(req.requests_per_s * service_s / (o.batch * req.max_utilization) * (1 - 1e-12));
  const double keeping_up = std::floor(req.requests_per_s * o.prefill_s_per_prompt) + 1;
  if (!(at_cap <= double(most))) {
    broken_at_most = {ReplicaLimit::max_utilization};
    return 0;
  }
  if (!(keeping_up <= double(most))) {
    broken_at_most = {ReplicaLimit::prefill_capacity};
    return 0;
  }
  const long long least = std::max({1LL, (long long)at_cap, (long long)keeping_up});
  auto ok = [&](long long n) { return check_replicas(o, s, req, double(n)).ok(); };
  if (ok(least)) return least;
  long long fails = least, meets = 0;
  for (long long step = 1; !meets; step *= 2) {
    const long long n = std::min(most, least + step);
    if (ok(n)) {
      meets = n;
    } else if (n == most) {
      broken_at_most = check_replicas(o, s, req, double(most)).broken;
      return 0;
    } else {
      fails = n;
    }
  }
  while (meets - fails > 1) {
    const long long mid = fails + (meets - fails) / 2;
    (ok(mid) ? meets : fails) = mid;
  }
  return meets;
}

// Decode TPOT (no prompts) of the scenario's step at each batch asked for, predicted once each.
class DecodeTpotByBatch {
 public:
  explicit DecodeTpotByBatch(const Scenario& s) : s_(s) {}
  double operator()(int batch) {
    auto it = tpot_.find(batch);
    if (it != tpot_.end()) return it->second;
    s_.workload.batch = batch;
    return tpot_[batch] = predict(s_, /*breakdown=*/false).tpot_s;
  }

 private:
  Scenario s_;
  std::map<int, double> tpot_;
};

// The mean occupancy of a replica and its TPOT: n = λ · output_len · TPOT(n) (Little's law over the
// sequences decoding), TPOT(n) the step of n sequences with the replica's prompts (the same λ·c: the
// prompts do not depend on how many decode), linear between integer batches. g(n) = λ·N·TPOT(n) − n
// is negative at the full batch whenever ρ < 1, so the root is found by bisection over the integer
// batches, then exactly on the segment between them. Below one sequence on average a running request
// still decodes in a batch of at least itself: TPOT(1).
void set_mean_occupancy(ReplicaQueue& r, const CapacityOption& o, const Scenario& s, double lambda, DecodeTpotByBatch& decode_tpot) {
  const double n_out = s.workload.output_len;
  const double stretch = r.step.step_s / r.step.decode_step_s;  // 1 / (1 − λc), the same at every batch
  auto tpot = [&](int b) { return b == o.batch ? r.tpot_s : decode_tpot(b) * stretch; };
  auto g = [&](int b) { return lambda * n_out * tpot(b) - b; };
  if (g(1) <= 0) {
    r.mean_occupancy = lambda * n_out * tpot(1);
    r.tpot_at_mean_occupancy_s = tpot(1);
    return;
  }
  int lo = 1, hi = o.batch;
  if (g(hi) >= 0) {  // only at ρ >= 1, which no plan has: the full batch
    r.mean_occupancy = o.batch;
    r.tpot_at_mean_occupancy_s = r.tpot_s;
    return;
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (g(mid) > 0 ? lo : hi) = mid;
  }
  const double glo = g(lo), ghi = g(hi);
  const double x = glo / (glo - ghi);  // in (0, 1]: where the segment crosses zero
  r.mean_occupancy = lo + x;
  r.tpot_at_mean_occupancy_s = tpot(lo) + x * (tpot(hi) - tpot(lo));
}

// The prefill clause of the too-many-devices error when the prompts' prefill is the only reason the
// load needs more than `most` replicas: without it `most` would do. Empty otherwise.
std::string because_of_prefill(const CapacityOption& o, const Scenario& s, const CapacityRequest& req, long long most,
                               const std::vector<ReplicaLimit>& broken_at_most) {
  const bool prefill_limit = std::any_of(broken_at_most.begin(), broken_at_most.end(), [](ReplicaLimit l) {
    return l == ReplicaLimit::prefill_capacity || l == ReplicaLimit::tpot_target;
  });
  if (!prefill_limit || o.prefill_s_per_prompt <= 0) return "";
  CapacityOption without = o;
  without.prefill_s_per_prompt = 0;
  if (!check_replicas(without, s, req, double(most)).ok()) return "";
  const StepUnderLoad at_most = step_under_load(o.prediction.step.total_s(), o.prefill_s_per_prompt, req.requests_per_s / double(most),
                                                s.workload.prompt_len);
  std::ostringstream e;
  e << "one prompt of " << s.workload.prompt_len << " tokens takes " << format_double(o.prefill_s_per_prompt * 1e3) << " ms "
    << (s.engine.interleaves_prefill ? "of prefill interleaved into the decode steps" : "of prefill between decode steps (engine '" +
                                                                                          s.engine.name + "' does not interleave prefill)")
    << " at " << layout_label(parallelism_of(s.workload)) << ", so " << most << " replicas of batch " << o.batch << " spend "
    << format_double(at_most.prefill_share) << " of their time on prompts";
  if (at_most.keeps_up)
    e << " and decode at a TPOT of " << format_double(at_most.step_s / o.prediction.tokens_per_step * 1e3) << " ms, beyond the "
      << format_double(req.tpot_target_s * 1e3) << " ms target (" << format_double(o.prediction.tpot_s * 1e3)
      << " ms without the prompts)";
  else
    e << ": they cannot keep up";
  return e.str();
}

CapacityPlan plan_batches(const Scenario& base, const CapacityRequest& req) {
  const double price = req.price_per_device_hour >= 0 ? req.price_per_device_hour : base.hardware.price_per_device_hour();
  const int max_batch = std::min(req.max_batch, kMaxSimulatedBatch);
  const long long most_replicas = kMaxPlannedDevices / base.workload.tp;
  CapacityPlan plan;
  DecodeTpotByBatch decode_tpot(base);
  bool too_many = false;  // some batch met the latency targets, but only with more than kMaxPlannedDevices
  std::string prefill_reason;  // ... and for one of them the prompts' prefill was the only reason
  for (int b = 1; b <= max_batch; b *= 2) {
    Scenario s = base;
    s.workload.batch = b;
    CapacityOption o;
    o.batch = b;
    o.prediction = predict(s);
    o.prefill_s_per_prompt = prefill_seconds_per_prompt(s);
    o.requests_per_s_per_replica = rate_at_full_utilization(o, s);
    // The latencies without other prompts (TTFT beside a full batch's decode steps); the prompts'
    // prefill and the queue's wait are added by the replicas below.
    const double ttft_idle = ttft_under_load(o, s, o.prediction.step.total_s());
    const bool meets_alone = o.prediction.fits_memory && o.prediction.tpot_s <= req.tpot_target_s &&
                             (req.ttft_target_s == 0 || ttft_idle <= req.ttft_target_s);
    if (meets_alone) {
      std::vector<ReplicaLimit> broken_at_most;
      const long long replicas = fewest_replicas(o, s, req, most_replicas, broken_at_most);
      // None within the bound: the load needs more devices, unless no number of replicas can help
      // (the mean wait is never 0, so a TTFT exactly at the target leaves no room for it).
      const bool no_room = req.ttft_target_s > 0 && req.ttft_percentile == 0 && ttft_idle >= req.ttft_target_s;
      if (replicas == 0) {
        if (!no_room) {
          too_many = true;
          if (prefill_reason.empty()) prefill_reason = because_of_prefill(o, s, req, most_replicas, broken_at_most);
        }
      } else {
        o.feasible = true;
        o.replicas = int(replicas);
        o.load = check_replicas(o, s, req, double(replicas)).load;
        set_mean_occupancy(o.load, o, s, req.requests_per_s / double(replicas), decode_tpot);
        if (replicas > 1) o.replicas_set_by = check_replicas(o, s, req, double(replicas - 1)).broken;
        if (!plan.feasible || o.replicas < plan.replicas) {
          plan.feasible = true;
          plan.batch = b;
          plan.replicas = o.replicas;
          plan.prediction = o.prediction;
          plan.load = o.load;
          plan.replicas_set_by = o.replicas_set_by;
        }
      }
    }
    plan.options.push_back(o);
    if (!o.prediction.fits_memory) break;  // larger batches need even more memory
    if (b > max_batch / 2) break;          // the next doubling would pass the bound (or wrap)
  }
  plan.needs_too_many_devices = !plan.feasible && too_many;
  if (plan.needs_too_many_devices) plan.too_many_because_of_prefill = prefill_reason;
  if (plan.feasible) {
    plan.devices = plan.replicas * base.workload.tp;
    plan.cost_per_hour = plan.devices * price;
    const double tokens_per_hour = req.requests_per_s * base.workload.output_len * 3600.0;
    plan.cost_per_million_output_tokens = price > 0 ? plan.cost_per_hour / tokens_per_hour * 1e6 : 0.0;
    const std::string context = "capacity planning";
    require_finite_result(plan.cost_per_hour, "cost per hour", context);
    require_finite_result(plan.cost_per_million_output_tokens, "cost per million output tokens", context);
  }
  return plan;
}

PlannedConfig plan_one(Scenario s, const CapacityRequest& req, const Parallelism& layout, int k) {
  PlannedConfig c;
  c.tp = layout.ranks;
  c.dp_attention = layout.dp_attention;
  c.ep = layout.ep;
  c.k = k;
  s.workload.tp = layout.ranks;
  s.workload.dp_attention = layout.dp_attention;
  s.workload.ep = layout.ep;
  if (k > 0) s.plan.k = k;
  try {
    c.plan = plan_batches(s, req);
    if (c.plan.needs_too_many_devices) c.why_not = too_many_devices_message(req, c.plan.too_many_because_of_prefill);
  } catch (const Error& e) {
    c.why_not = e.what();  // e.g. a TP that does not divide the model's heads
  }
  return c;
}

// Sequential decoding planned at every layout, as a method is: the number the method is judged against.
void plan_sequential(const Scenario& s, const CapacityRequest& req, const std::vector<Parallelism>& layouts, CapacitySearch& out) {
  Scenario seq = s;
  seq.plan = DraftPlan{};
  seq.plan.method = Method::sequential;
  seq.drafter.reset();
  seq.acceptance.reset();
  seq.measured_tokens_per_step.reset();
  for (const Parallelism& layout : layouts) {
    out.sequential_configs.push_back(plan_one(seq, req, layout, 0));
    const PlannedConfig& c = out.sequential_configs.back();
    out.batches_priced += (long long)c.plan.options.size();
    if (c.plan.feasible && (!out.sequential || cheaper_config(c, *out.sequential))) out.sequential = c;
  }
}

// Keeps `c` among the search's configurations and as its answer when it is the cheapest so far.
void keep(PlannedConfig c, CapacitySearch& out) {
  out.batches_priced += (long long)c.plan.options.size();
  out.configs.push_back(std::move(c));
  const PlannedConfig& kept = out.configs.back();
  if (kept.plan.feasible && (!out.best || cheaper_config(kept, *out.best))) out.best = kept;
}

// No answer, and the reason is the size of the load or a scenario no TP can run: said as an error.
void throw_when_unanswered(const CapacitySearch& out, const std::vector<PlannedConfig>& searched) {
  if (out.best) return;
  for (const auto& c : searched)
    if (c.plan.needs_too_many_devices) throw Error(c.why_not);
  if (std::all_of(searched.begin(), searched.end(), [](const PlannedConfig& c) { return !c.why_not.empty(); }))
    throw Error("capacity planning: no configuration can be planned: " + layout_label(searched.front().layout()) + ": " +
                searched.front().why_not);
}

void check_layouts(const std::vector<Parallelism>& layouts, size_t shapes) {
  if (layouts.empty()) throw Error("capacity planning: no tensor-parallel degree to search");
  const long long n = capacity_configurations(layouts.size(), shapes);
  if (n > kMaxCapacityConfigurations)
    throw Error("capacity planning: the search would plan " + std::to_string(n) + " configurations (" +
                std::to_string(layouts.size()) + " layouts x " + std::to_string(shapes) +
                " draft shapes, and sequential decoding at each layout), more than the " +
                std::to_string(kMaxCapacityConfigurations) + " one search plans; narrow the layouts or the shapes");
}

}  // namespace

double reported_percentile(const CapacityRequest& req) { return req.ttft_percentile > 0 ? req.ttft_percentile : 99; }

std::string replica_limit_name(ReplicaLimit l) {
  switch (l) {
    case ReplicaLimit::prefill_capacity: return "prefill_capacity";
    case ReplicaLimit::tpot_target: return "tpot_target";
    case ReplicaLimit::max_utilization: return "max_utilization";
    case ReplicaLimit::ttft_target: return "ttft_target";
  }
  return "?";
}

double ttft_under_load(const CapacityOption& o, const Scenario& s, double step_s) {
  const double residual = 0.5 * step_s;
  return s.engine.interleaves_prefill ? residual + step_s + o.prefill_s_per_prompt : residual + o.prefill_s_per_prompt;
}

ReplicaCheck check_replicas(const CapacityOption& o, const Scenario& s, const CapacityRequest& req, double replicas) {
  if (!(replicas >= 1 && std::isfinite(replicas)))
    throw Error("capacity planning: the number of replicas must be a finite number >= 1, got " + format_double(replicas));
  ReplicaCheck c;
  ReplicaQueue& r = c.load;
  const double lambda = req.requests_per_s / replicas;
  r.step = step_under_load(o.prediction.step.total_s(), o.prefill_s_per_prompt, lambda, s.workload.prompt_len);
  if (!r.step.keeps_up) {
    c.broken.push_back(ReplicaLimit::prefill_capacity);
    return c;
  }
  r.tpot_s = r.step.step_s / o.prediction.tokens_per_step;
  if (r.tpot_s > req.tpot_target_s) c.broken.push_back(ReplicaLimit::tpot_target);
  const double decode_s = s.workload.output_len * r.tpot_s;
  r.ttft_s = ttft_under_load(o, s, r.step.step_s);
  const double service_s = r.ttft_s + decode_s;
  // Only the output length varies: Var(S) = (cv · output_len · TPOT)², so C_s² = (cv · decode / S)².
  const double scv = std::pow(req.output_len_cv * decode_s / service_s, 2);
  r.queue = estimate_queue(lambda, replica_arrival_scv(req.arrival_cv * req.arrival_cv, replicas), service_s, o.batch, scv);
  r.percentile = reported_percentile(req);
  r.wait_at_percentile_s = wait_at_percentile_s(r.queue, r.percentile);
  r.ttft_with_wait_s = r.ttft_s + r.queue.mean_wait_s;
  r.ttft_at_percentile_s = r.ttft_s + r.wait_at_percentile_s;
  // The relative slack matches the lower bound's nudge in fewest_replicas: a load that is a whole
  // number of replicas at the cap by exact arithmetic is within it.
  if (!(r.queue.utilization <= req.max_utilization * (1 + 1e-12))) c.broken.push_back(ReplicaLimit::max_utilization);
  if (!meets_ttft_target(r, req)) c.broken.push_back(ReplicaLimit::ttft_target);
  return c;
}

CapacityPlan plan_capacity(const Scenario& base, const CapacityRequest& req) {
  check_request(req);
  CapacityPlan plan = plan_batches(base, req);
  if (plan.needs_too_many_devices) throw Error(too_many_devices_message(req, plan.too_many_because_of_prefill));
  return plan;
}

bool cheaper_config(const PlannedConfig& a, const PlannedConfig& b) {
  if (a.plan.devices != b.plan.devices) return a.plan.devices < b.plan.devices;
  return a.plan.load.tpot_s < b.plan.load.tpot_s;
}

std::vector<int> default_tensor_parallel_degrees(const HardwareSpec& hw) {
  std::vector<int> tps;
  for (int tp = 1; tp <= hw.devices_per_instance; tp *= 2) tps.push_back(tp);
  return tps;
}


long long capacity_configurations(size_t layouts, size_t shapes) { return (long long)layouts * ((long long)shapes + 1); }

std::vector<Parallelism> plain_layouts(const std::vector<int>& tps) {
  std::vector<Parallelism> out;
  for (const int tp : tps) out.push_back(Parallelism{tp, 1, 1});
  return out;
}

std::vector<Parallelism> capacity_layouts(const std::vector<int>& tps, const ModelShape& target,
                                          const std::optional<std::vector<int>>& dp_attention,
                                          const std::optional<std::vector<int>>& ep) {
  const bool moe = target.is_moe();
  auto listed = [](const std::optional<std::vector<int>>& list, int v) {
    return std::find(list->begin(), list->end(), v) != list->end();
  };
  std::vector<Parallelism> out;
  for (const int tp : tps) {
    std::vector<int> ds, ps;
    for (int d = 1; d <= tp; ++d) {
      if (tp % d != 0) continue;
      if (dp_attention ? listed(dp_attention, d) : (moe || d == 1)) ds.push_back(d);
    }
    // By default EP 1 and EP = TP; a list given may name EP ranks of several devices (1 < P < TP),
    // which run with tensor-parallel attention only (simulator/parallelism.hpp).
    for (int p = 1; p <= tp; ++p) {
      if (tp % p != 0) continue;
      if (ep ? listed(ep, p) : (moe && p == tp) || p == 1) ps.push_back(p);
    }
    for (const int d : ds)
      for (const int p : ps)
        if (d == 1 || p == 1 || p == tp) out.push_back(Parallelism{tp, d, p});
  }
  return out;
}

CapacitySearch search_capacity(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                               const std::vector<int>& ks) {
  return search_capacity_layouts(s, req, plain_layouts(tps), ks);
}

CapacitySearch search_capacity_layouts(const Scenario& s, const CapacityRequest& req, const std::vector<Parallelism>& layouts,
                                       const std::vector<int>& ks) {
  check_request(req);
  if (layouts.empty()) throw Error("capacity planning: no tensor-parallel degree to search");
  CapacitySearch out;
  const bool speculative = s.plan.method != Method::sequential;
  std::vector<int> chain_ks;  // the Ks the scenario's acceptance answers
  if (speculative) {
    if (ks.empty()) throw Error("capacity planning: no draft length K to search");
    for (const int k : ks) {
      if (const std::string why = why_k_is_not_evaluated(s, k); !why.empty()) {
        out.skipped.push_back({"K = " + std::to_string(k), why});
        continue;
      }
      chain_ks.push_back(k);
    }
    if (chain_ks.empty())
      throw Error("capacity planning: none of the Ks asked for can be evaluated: " + out.skipped.front().reason);
  }
  check_layouts(layouts, chain_ks.size());
  for (const Parallelism& layout : layouts)
    for (const int k : chain_ks) keep(plan_one(s, req, layout, k), out);
  plan_sequential(s, req, layouts, out);
  if (!speculative) out.best = out.sequential;
  throw_when_unanswered(out, speculative ? out.configs : out.sequential_configs);
  return out;
}

std::string tree_setting_text(const DynamicTreeSetting& t) {
  return std::to_string(t.total_tokens) + "/" + std::to_string(t.depth) + "/" + std::to_string(t.top_k);
}

CapacitySearch search_capacity_trees(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                                     const std::vector<DynamicTreeSetting>& trees) {
  return search_capacity_trees_layouts(s, req, plain_layouts(tps), trees);
}

CapacitySearch search_capacity_trees_layouts(const Scenario& s, const CapacityRequest& req,
                                             const std::vector<Parallelism>& layouts,
                                             const std::vector<DynamicTreeSetting>& trees) {
  check_request(req);
  if (layouts.empty()) throw Error("capacity planning: no tensor-parallel degree to search");
  if (trees.empty()) throw Error("capacity planning: no tree to search");
  if (!s.acceptance) throw Error("capacity planning: searching trees needs an acceptance model to draft them from");
  check_layouts(layouts, trees.size());
  CapacitySearch out;
  for (const DynamicTreeSetting& t : trees) {
    Scenario v = s;
    try {
      set_dynamic_tree(v.plan, *s.acceptance, t.total_tokens, t.depth, t.top_k);
      // The tree alone: whether a layout can run it is that configuration's to say.
      Scenario tree_only = v;
      tree_only.workload.tp = 1;
      tree_only.workload.dp_attention = 1;
      tree_only.workload.ep = 1;
      validate_scenario(tree_only);
    } catch (const Error& e) {
      out.skipped.push_back({"tree " + tree_setting_text(t), e.what()});
      continue;
    }
    for (const Parallelism& layout : layouts) {
      PlannedConfig c = plan_one(v, req, layout, v.plan.k);
      c.tree = tree_setting_text(t);
      keep(std::move(c), out);
    }
  }
  if (out.configs.empty())
    throw Error("capacity planning: none of the trees asked for can be drafted: " + out.skipped.front().reason);
  // Sequential decoding does not depend on the tree: planned once.
  plan_sequential(s, req, layouts, out);
  throw_when_unanswered(out, out.configs);
  return out;
}

}  // namespace specdec::sim
