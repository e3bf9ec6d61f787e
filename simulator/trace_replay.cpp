#include "simulator/trace_replay.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/io/json_input.hpp"
#include "reference/io/json_int.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

namespace {

int node_depth(const std::vector<int32_t>& parents, int node) {
  int d = 0;
  for (int n = node; n >= 0 && d <= int(parents.size()); n = parents[n]) ++d;
  return d;
}

}  // namespace

TraceAcceptance trace_acceptance(const Trace& trace) {
  if (trace.meta.method == "sequential")
    throw Error("trace was recorded with sequential decoding: it has no accepted lengths to replay");
  TraceAcceptance out;
  for (const auto& step : trace.steps) {
    if (step.draft_tokens.empty()) continue;
    int depth = 0;
    bool chain = true;
    for (size_t i = 0; i < step.draft_parents.size(); ++i) {
      depth = std::max(depth, node_depth(step.draft_parents, int(i)));
      chain = chain && step.draft_parents[i] == int(i) - 1;
    }
    if (step.draft_parents.empty()) depth = int(step.draft_tokens.size());
    out.tree = out.tree || !chain;
    out.recorded_k = std::max(out.recorded_k, depth);
    out.accepted.push_back(int(step.accepted_path.size()));
  }
  if (out.accepted.empty()) throw Error("trace has no speculative steps (no step drafted any token)");
  return out;
}

AcceptancePtr replay_acceptance_from_trace(const Trace& trace) {
  const TraceAcceptance a = trace_acceptance(trace);
  return replay_acceptance(a.accepted, a.recorded_k);
}

AcceptancePtr replay_acceptance_from_file(const std::filesystem::path& path) {
  return replay_acceptance_from_trace(read_trace(path));
}

std::optional<MeasuredConfig> measured_config_from_trace(const Trace& trace, const std::string& label) {
  auto it = trace.timing.step_ns.find("step");
  if (it == trace.timing.step_ns.end() || it->second.size() < 2) return std::nullopt;
  // Step 0 is the prefill; the rest are decoding steps.
  std::vector<int64_t> ns(it->second.begin() + 1, it->second.end());
  std::sort(ns.begin(), ns.end());
  MeasuredConfig row;
  row.label = label;
  row.measured_step_s = double(ns[ns.size() / 2]) * 1e-9;
  const auto target = trace.meta.models.find("target");
  if (target == trace.meta.models.end()) throw Error(label + ": trace records no target model");
  Scenario& s = row.scenario;
  s.target = parse_model_shape(parse_json(target->second.config_json, label + " (target config)"), label + " (target config)");
  s.target.name = label;
  s.workload.dtype = "fp32";  // the reference computes in fp32
  s.workload.prompt_len = std::max<int>(1, int(trace.prompt.size()));
  s.workload.output_len = std::max<int>(1, int(trace.output.size()));
  double positions = 0;
  for (size_t i = 1; i < trace.steps.size(); ++i) positions += double(trace.steps[i].position);
  row.context = trace.steps.size() > 1 ? positions / double(trace.steps.size() - 1) : trace.prompt.size();
  s.plan.method = parse_method(trace.meta.method, "trace method");
  if (s.plan.method == Method::sequential) return row;

  const TraceAcceptance acc = trace_acceptance(trace);
  if (acc.tree) throw Error(label + ": tree traces cannot be turned into calibration rows yet (chain drafting only)");
  s.plan.k = acc.recorded_k;
  s.acceptance = replay_acceptance(acc.accepted, acc.recorded_k);
  row.tokens_per_step = s.acceptance->expected_tokens(s.plan.k);
  const auto drafter = trace.meta.models.find("drafter");
  if (drafter == trace.meta.models.end()) throw Error(label + ": speculative trace records no drafter model");
  const nlohmann::json dj = parse_json(drafter->second.config_json, label + " (drafter config)");
  DrafterSpec spec;
  spec.name = label + " drafter";
  spec.method = s.plan.method;
  if (s.plan.method == Method::draft_model) {
    ModelShape dm = parse_model_shape(dj, label + " (drafter config)");
    spec.model = "recorded";
    s.drafter = resolve_drafter(spec, s.target, &dm);
  } else if (s.plan.method == Method::mtp || s.plan.method == Method::medusa) {
    // Shapes from the target; the config says how many modules / heads (and blocks per head).
    const std::string src = label + " (drafter config)";
    if (s.plan.method == Method::mtp) {
      spec.num_modules = std::max(1, get_int_or(dj, "num_modules", get_int_or(dj, "num_nextn_predict_layers", 1, src), src));
    } else {
      spec.num_heads = get_int_or(dj, "medusa_num_heads", get_int_or(dj, "num_heads", s.plan.k, src), src);
      spec.num_heads = std::max(spec.num_heads, s.plan.k);  // the run drafted this deep
      spec.num_layers = get_int_or(dj, "medusa_num_layers", get_int_or(dj, "num_hidden_layers", 1, src), src);
    }
    s.drafter = resolve_drafter(spec, s.target);
  } else {
    const std::string src = label + " (drafter config)";
    // The speculators layout nests the decoder layer's shape; the flat layouts keep it at the top.
    const bool nested = has_field(dj, "transformer_layer_config");
    const nlohmann::json& layer = nested ? dj.at("transformer_layer_config") : dj;
    if (!layer.is_object()) throw Error(src + ": 'transformer_layer_config' must be an object");
    spec.num_layers = s.plan.method == Method::peagle ? get_int_or(layer, "num_hidden_layers", 1, src) : 1;
    spec.draft_vocab_size = get_int_or(dj, "draft_vocab_size", 0, src);
    spec.trained_depth = get_int_or(dj, "trained_depth", 0, src);
    if (nested && has_field(dj, "speculators_config")) {
      const nlohmann::json& sc = dj.at("speculators_config");
      if (sc.is_object() && sc.contains("proposal_methods") && sc.at("proposal_methods").is_array())
        for (const auto& m : sc.at("proposal_methods"))
          if (m.is_object() && m.contains("speculative_tokens") && m.at("speculative_tokens").is_number_integer())
            spec.trained_depth = std::max(spec.trained_depth, json_int32(m.at("speculative_tokens"), src + ": speculative_tokens"));
    }
    // A recorded run may have drafted beyond the trained depth (--force-depth); the row describes
    // what ran, so the spec must not refuse it.
    if (spec.trained_depth > 0 && spec.trained_depth < s.plan.k) spec.trained_depth = s.plan.k;
    spec.config = nlohmann::json::object();
    for (const char* key : {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim"})
      if (has_field(layer, key)) spec.config[key] = layer.at(key);
    s.drafter = resolve_drafter(spec, s.target);
  }
  return row;
}

CalibrationSet calibration_set_from_traces(const std::vector<std::filesystem::path>& paths) {
  if (paths.empty()) throw Error("calibration from traces: no trace files given");
  CalibrationSet set;
  set.source = paths.size() == 1 ? paths[0].filename().string() : std::to_string(paths.size()) + " recorded traces";
  set.engine = "specdec-cpu";  // traces are recorded by this project's backends
  for (const auto& p : paths) {
    const std::string label = p.stem().string();
    std::optional<MeasuredConfig> row;
    try {
      row = measured_config_from_trace(read_trace(p), label);
    } catch (const Error& e) {
      throw Error(p.string() + ": " + e.what());
    }
    if (!row) throw Error(p.string() + ": the trace has no per-step timings (/timing/step_ns with decoding steps)");
    set.rows.push_back(std::move(*row));
  }
  return set;
}

}  // namespace specdec::sim
