#include "simulator/prediction_json.hpp"

#include "simulator/method.hpp"

namespace specdec::sim {

nlohmann::json prediction_json(const Prediction& p, bool breakdown) {
  nlohmann::json j = {{"method", method_name(p.method)},
                      {"k", p.k},
                      {"tree_nodes", p.tree_nodes},
                      {"acceptance_length", p.tokens_per_step},
                      {"acceptance_length_counts", "accepted drafts + the bonus token (plain decoding = 1)"},
                      {"tpot_ms", p.tpot_s * 1e3},
                      {"ttft_ms", p.ttft_s * 1e3},
                      {"throughput_tokens_per_s", p.throughput_tokens_per_s},
                      {"sequential_tpot_ms", p.sequential_tpot_s * 1e3},
                      {"speedup", p.speedup},
                      {"step_ms", p.step.total_s() * 1e3},
                      {"draft_ms", p.step.draft_s * 1e3},
                      {"verify_ms", p.step.verify_s * 1e3},
                      {"overhead_ms", p.step.overhead_s * 1e3},
                      {"lookup_ms", p.step.lookup_s * 1e3},
                      {"draft_forwards", p.step.draft_forwards},
                      {"draft_weight_bytes_per_device", p.step.draft_weight_bytes},
                      {"draft_flops_per_device", p.step.draft_flops},
                      {"verify_tokens_per_sequence", p.step.verify_tokens},
                      {"verify_flop_per_byte", p.verify_intensity},
                      {"ridge_point_flop_per_byte", p.ridge_point},
                      {"weight_bytes_per_device", p.weight_bytes_per_device},
                      {"kv_bytes_per_device", p.kv_bytes_per_device},
                      {"fits_memory", p.fits_memory}};
  if (breakdown) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& c : p.step.ops)
      ops.push_back({{"phase", c.op.phase}, {"op", c.op.name}, {"count", c.op.count}, {"flops", c.op.flops},
                     {"bytes", c.op.bytes}, {"time_us", c.time_s * 1e6}, {"total_us", c.total_s * 1e6}, {"bound", c.bound}});
    j["breakdown"] = ops;
  }
  return j;
}

nlohmann::json scenario_json(const Scenario& s) {
  nlohmann::json j = {{"model", s.target.name},
                      {"hardware", s.hardware.name},
                      {"engine", s.engine.name},
                      {"drafter", s.drafter ? s.drafter->name : "none"},
                      {"batch", s.workload.batch},
                      {"tp", s.workload.tp},
                      {"dp_attention", s.workload.dp_attention},
                      {"ep", s.workload.ep},
                      {"parallelism", describe_parallelism(parallelism_of(s.workload))},
                      {"prompt_len", s.workload.prompt_len},
                      {"output_len", s.workload.output_len},
                      {"acceptance", s.acceptance ? s.acceptance->describe() : "none"}};
  const Method method = s.plan.method;
  if (method != Method::sequential && draft_free(method)) {
    j["draft_free"] = true;
    j["match_rate"] = s.match_rate;
  }
  if (s.drafter && method == Method::mtp) j["mtp_modules"] = s.drafter->num_modules;
  if (s.drafter && method == Method::medusa) j["medusa_heads"] = s.drafter->num_heads;
  if (!s.engine_version.empty()) j["engine_version"] = s.engine_version;  // the release priced
  return j;
}

}  // namespace specdec::sim
