#include "simulator/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::sim {

namespace {

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
  if (!(req.ttft_percentile == 0 || (req.ttft_percentile > 0 && req.ttft_percentile < 100)))
    throw Error("capacity planning: the TTFT percentile must be 0 (the mean) or between 0 and 100 (exclusive), got " +
                format_double(req.ttft_percentile));
}

std::string too_many_devices_message(const CapacityRequest& req) {
  std::ostringstream e;
  e << "capacity planning: serving " << req.requests_per_s << " requests/s within the targets (utilisation <= "
    << req.max_utilization << ") needs more than "
    << kMaxPlannedDevices << " devices, more than specdec plans for; see docs/reliability.md";
  return e.str();
}

// One replica's queue when `replicas` share the load at batch `o.batch`.
ReplicaQueue replica_queue(const CapacityOption& o, const Scenario& s, const CapacityRequest& req, double replicas) {
  const double decode_s = s.workload.output_len * o.prediction.tpot_s;
  const double service_s = o.prediction.ttft_s + decode_s;
  // Only the output length varies: Var(S) = (cv · output_len · TPOT)², so C_s² = (cv · decode / S)².
  const double scv = std::pow(req.output_len_cv * decode_s / service_s, 2);
  ReplicaQueue r;
  r.queue = estimate_queue(req.requests_per_s / replicas, service_s, o.batch, scv);
  r.percentile = reported_percentile(req);
  r.wait_at_percentile_s = wait_at_percentile_s(r.queue, r.percentile);
  r.ttft_with_wait_s = o.prediction.ttft_s + r.queue.mean_wait_s;
  r.ttft_at_percentile_s = o.prediction.ttft_s + r.wait_at_percentile_s;
  return r;
}

bool meets_ttft_target(const ReplicaQueue& r, const CapacityRequest& req) {
  if (req.ttft_target_s == 0) return true;
  return (req.ttft_percentile > 0 ? r.ttft_at_percentile_s : r.ttft_with_wait_s) <= req.ttft_target_s;
}

// The fewest replicas (of at most `most`) that keep utilisation within the cap and, with a TTFT
// target, TTFT + wait within it; 0 when even `most` do not. The wait falls as replicas are added
// (each sees less load), so a doubling search then bisection finds the first that meets it.
long long fewest_replicas(const CapacityOption& o, const Scenario& s, const CapacityRequest& req, long long most) {
  const double service_s = o.prediction.ttft_s + s.workload.output_len * o.prediction.tpot_s;
  // In double: a load far beyond any plan must not wrap an integer. The relative nudge keeps a load
  // that is a whole number of replicas by exact arithmetic from taking one more by rounding.
  const double at_cap = std::ceil(req.requests_per_s * service_s / (o.batch * req.max_utilization) * (1 - 1e-12));
  if (!(at_cap <= double(most))) return 0;
  const long long least = std::max(1LL, (long long)at_cap);
  auto ok = [&](long long n) { return meets_ttft_target(replica_queue(o, s, req, double(n)), req); };
  if (ok(least)) return least;
  long long fails = least, meets = 0;
  for (long long step = 1; !meets; step *= 2) {
    const long long n = std::min(most, least + step);
    if (ok(n)) meets = n;
    else if (n == most) return 0;
    else fails = n;
  }
  while (meets - fails > 1) {
    const long long mid = fails + (meets - fails) / 2;
    (ok(mid) ? meets : fails) = mid;
  }
  return meets;
}

CapacityPlan plan_batches(const Scenario& base, const CapacityRequest& req) {
  const double price = req.price_per_device_hour >= 0 ? req.price_per_device_hour : base.hardware.price_per_device_hour();
  const int max_batch = std::min(req.max_batch, kMaxSimulatedBatch);
  const long long most_replicas = kMaxPlannedDevices / base.workload.tp;
  CapacityPlan plan;
  bool too_many = false;  // some batch met the latency targets, but only with more than kMaxPlannedDevices
  for (int b = 1; b <= max_batch; b *= 2) {
    Scenario s = base;
    s.workload.batch = b;
    CapacityOption o;
    o.batch = b;
    o.prediction = predict(s);
    const double per_request_s = o.prediction.ttft_s + s.workload.output_len * o.prediction.tpot_s;
    o.requests_per_s_per_replica = b / per_request_s;
    // The latency of one request alone; the queue's wait is added by the replicas below.
    const bool meets_alone = o.prediction.fits_memory && o.prediction.tpot_s <= req.tpot_target_s &&
                             (req.ttft_target_s == 0 || o.prediction.ttft_s <= req.ttft_target_s);
    if (meets_alone) {
      const long long replicas = fewest_replicas(o, s, req, most_replicas);
      // None within the bound: the load needs more devices, unless no number of replicas can help
      // (the mean wait is never 0, so a TTFT exactly at the target leaves no room for it).
      const bool no_room = req.ttft_target_s > 0 && req.ttft_percentile == 0 && o.prediction.ttft_s >= req.ttft_target_s;
      if (replicas == 0) {
        too_many = too_many || !no_room;
      } else {
        o.feasible = true;
        o.replicas = int(replicas);
        o.load = replica_queue(o, s, req, double(replicas));
        if (!plan.feasible || o.replicas < plan.replicas) {
          plan.feasible = true;
          plan.batch = b;
          plan.replicas = o.replicas;
          plan.prediction = o.prediction;
          plan.load = o.load;
        }
      }
    }
    plan.options.push_back(o);
    if (!o.prediction.fits_memory) break;  // larger batches need even more memory
    if (b > max_batch / 2) break;          // the next doubling would pass the bound (or wrap)
  }
  plan.needs_too_many_devices = !plan.feasible && too_many;
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

PlannedConfig plan_one(Scenario s, const CapacityRequest& req, int tp, int k) {
  PlannedConfig c;
  c.tp = tp;
  c.k = k;
  s.workload.tp = tp;
  if (k > 0) s.plan.k = k;
  try {
    c.plan = plan_batches(s, req);
    if (c.plan.needs_too_many_devices) c.why_not = too_many_devices_message(req);
  } catch (const Error& e) {
    c.why_not = e.what();  // e.g. a TP that does not divide the model's heads
  }
  return c;
}

// Sequential decoding planned at every TP, as a method is: the number the method is judged against.
void plan_sequential(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps, CapacitySearch& out) {
  Scenario seq = s;
  seq.plan = DraftPlan{};
  seq.plan.method = Method::sequential;
  seq.drafter.reset();
  seq.acceptance.reset();
  seq.measured_tokens_per_step.reset();
  for (const int tp : tps) {
    out.sequential_configs.push_back(plan_one(seq, req, tp, 0));
    const PlannedConfig& c = out.sequential_configs.back();
    if (c.plan.feasible && (!out.sequential || cheaper_config(c, *out.sequential))) out.sequential = c;
  }
}

// Keeps `c` among the search's configurations and as its answer when it is the cheapest so far.
void keep(PlannedConfig c, CapacitySearch& out) {
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
    throw Error("capacity planning: no configuration can be planned: TP " + std::to_string(searched.front().tp) + ": " +
                searched.front().why_not);
}

}  // namespace

double reported_percentile(const CapacityRequest& req) { return req.ttft_percentile > 0 ? req.ttft_percentile : 99; }

CapacityPlan plan_capacity(const Scenario& base, const CapacityRequest& req) {
  check_request(req);
  CapacityPlan plan = plan_batches(base, req);
  if (plan.needs_too_many_devices) throw Error(too_many_devices_message(req));
  return plan;
}

bool cheaper_config(const PlannedConfig& a, const PlannedConfig& b) {
  if (a.plan.devices != b.plan.devices) return a.plan.devices < b.plan.devices;
  return a.plan.prediction.tpot_s < b.plan.prediction.tpot_s;
}

std::vector<int> default_tensor_parallel_degrees(const HardwareSpec& hw) {
  std::vector<int> tps;
  for (int tp = 1; tp <= hw.devices_per_instance; tp *= 2) tps.push_back(tp);
  return tps;
}


CapacitySearch search_capacity(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                               const std::vector<int>& ks) {
  check_request(req);
  if (tps.empty()) throw Error("capacity planning: no tensor-parallel degree to search");
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
  for (const int tp : tps)
    for (const int k : chain_ks) keep(plan_one(s, req, tp, k), out);
  plan_sequential(s, req, tps, out);
  if (!speculative) out.best = out.sequential;
  throw_when_unanswered(out, speculative ? out.configs : out.sequential_configs);
  return out;
}

std::string tree_setting_text(const DynamicTreeSetting& t) {
  return std::to_string(t.total_tokens) + "/" + std::to_string(t.depth) + "/" + std::to_string(t.top_k);
}

CapacitySearch search_capacity_trees(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                                     const std::vector<DynamicTreeSetting>& trees) {
  check_request(req);
  if (tps.empty()) throw Error("capacity planning: no tensor-parallel degree to search");
  if (trees.empty()) throw Error("capacity planning: no tree to search");
  if (!s.acceptance) throw Error("capacity planning: searching trees needs an acceptance model to draft them from");
  CapacitySearch out;
  for (const DynamicTreeSetting& t : trees) {
    Scenario v = s;
    try {
      set_dynamic_tree(v.plan, *s.acceptance, t.total_tokens, t.depth, t.top_k);
      validate_scenario(v);
    } catch (const Error& e) {
      out.skipped.push_back({"tree " + tree_setting_text(t), e.what()});
      continue;
    }
    for (const int tp : tps) {
      PlannedConfig c = plan_one(v, req, tp, v.plan.k);
      c.tree = tree_setting_text(t);
      keep(std::move(c), out);
    }
  }
  if (out.configs.empty())
    throw Error("capacity planning: none of the trees asked for can be drafted: " + out.skipped.front().reason);
  // Sequential decoding does not depend on the tree: planned once.
  plan_sequential(s, req, tps, out);
  throw_when_unanswered(out, out.configs);
  return out;
}

}  // namespace specdec::sim
