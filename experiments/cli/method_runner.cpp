#include "experiments/cli/method_runner.hpp"

#include <algorithm>

#include "experiments/runtime/backend.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/io/json_int.hpp"

namespace specdec::cli {

MethodSpec method_spec(const DecodeArgs& a) {
  MethodSpec s;
  s.method = a.method;
  s.k = a.k;
  s.tree = a.tree;
  s.depth = a.depth;
  s.tree_top_k = a.tree_top_k;
  s.total_tokens = a.total_tokens;
  s.force_depth = a.force_depth;
  return s;
}

void check_method_args(const DecodeArgs& a) {
  check_method_spec(method_spec(a));
  if (a.method != "sequential" && a.drafter.empty()) {
    throw Error("--method " + a.method + " needs --drafter DIR (" +
                (a.method == "draft" ? std::string("a small model sharing the target's vocabulary")
                                     : std::string("an ") + eagle_kind_name(head_kind_for(a.method)) + " head") + ")");
  }
}

DecodeJob prepare_decode(const DecodeArgs& a) {
  apply_threads(a.threads);
  check_method_args(a);
  DecodeJob job;
  job.options = generation_options(a);
  job.sampling = sampling_params(a);
  job.target = load_model(a.model, a.backend);
  job.prompt = prompt_tokens(a, job.target);
  return job;
}

std::optional<LoadedDrafter> load_drafter(const DecodeArgs& a, const LoadedModel& target) {
  check_method_args(a);
  if (a.method == "sequential") return std::nullopt;
  LoadedDrafter d;
  d.path = a.drafter;
  if (a.method == "draft") {
    LoadedModel m = load_model(a.drafter, a.backend);
    d.fingerprint = m.fingerprint;
    d.config_json = model_config_to_json(m.model->config()).dump();
    d.model = std::move(m.model);
    d.backend_model = std::move(m.backend_model);
    return d;
  }
  d.head = std::make_unique<EagleHead>(load_eagle_head(a.drafter, *target.model));
  const EagleKind want = head_kind_for(a.method);
  if (d.head->config().kind != want) {
    throw Error(a.drafter + " holds an " + eagle_kind_name(d.head->config().kind) + " head; --method " + a.method +
                " needs an " + eagle_kind_name(want) + " head");
  }
  if (a.backend != "reference") d.head = std::make_unique<EagleHead>(bind_head(a.backend, *d.head));
  d.fingerprint = eagle_head_fingerprint(*d.head);
  d.config_json = eagle_config_to_json(d.head->config(), target.model->config().num_hidden_layers,
                                       target.model->config().architecture)
                      .dump();
  return d;
}

std::unique_ptr<Proposer> make_proposer(const DecodeArgs& a, const LoadedModel& target, const LoadedDrafter* drafter,
                                        int capacity, const LanguageModel* draft_lm, const EagleHead* head) {
  check_method_args(a);
  if (a.method == "sequential") return nullptr;
  if (!drafter) throw Error("--method " + a.method + ": no drafter was loaded");
  if (!draft_lm) draft_lm = drafter->draft_lm();
  if (!head) head = drafter->head.get();
  return make_method_proposer(method_spec(a), target.model->config(), draft_lm, head, capacity);
}

GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options, DecodeObserver* observer,
                            const LoadedDrafter* drafter) {
  check_method_args(a);
  if (a.method == "sequential") return decode_sequential(target.forward_model(), prompt, sampling, options, observer);
  std::optional<LoadedDrafter> loaded;
  if (!drafter) {
    loaded = load_drafter(a, target);
    drafter = &*loaded;
  }
  const auto acceptor = default_acceptor(sampling);
  const int capacity = checked_capacity(prompt.size(), options.max_new_tokens, 1, target.model->config().max_position_embeddings);
  const std::unique_ptr<Proposer> proposer = make_proposer(a, target, drafter, capacity);
  return decode_speculative(target.forward_model(), *proposer, *acceptor, prompt, sampling, options, observer);
}

void decode_args_from_trace_config(const std::string& config_json, const std::string& source, DecodeArgs& a) {
  const auto j = nlohmann::json::parse(config_json, nullptr, false);
  const std::string where = source + ": /meta/config_json";
  if (j.is_discarded() || !j.is_object()) throw Error(where + " is not a JSON object");
  if (!j.contains("method") || !j["method"].is_object()) {
    throw Error(where + " has no \"method\" object; was the trace written by specdec record?");
  }
  const nlohmann::json& m = j["method"];
  try {
    a.method = m.at("method").get<std::string>();
    if (m.contains("drafter")) a.drafter = m["drafter"].get<std::string>();
    if (m.contains("tree")) a.tree = m["tree"].get<std::string>();
    // Numbers are range-checked: a trace may come from another engine.
    auto integer = [&](const nlohmann::json& v, const std::string& key) { return json_int32(v, where + ": " + key); };
    if (m.contains("k")) a.k = integer(m["k"], "method.k");
    if (m.contains("depth")) a.depth = integer(m["depth"], "method.depth");
    if (m.contains("tree_top_k")) a.tree_top_k = integer(m["tree_top_k"], "method.tree_top_k");
    if (m.contains("total_tokens")) a.total_tokens = integer(m["total_tokens"], "method.total_tokens");
    if (m.contains("force_depth")) a.force_depth = m["force_depth"].get<bool>();
    a.max_new_tokens = integer(j.at("max_new_tokens"), "max_new_tokens");
    a.ignore_eos = !j.at("stop_at_eos").get<bool>();
    if (j.contains("sequence") && (!j["sequence"].is_number_integer() || j["sequence"].get<int64_t>() != 0)) {
      throw Error(where + ": sequence " + j["sequence"].dump() + " is not supported; specdec decodes sequence 0");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what() + "; expected the method object and max_new_tokens / stop_at_eos of specdec record");
  }
}

nlohmann::json method_json(const DecodeArgs& a) {
  nlohmann::json j = {{"method", a.method}};
  if (a.method == "sequential") return j;
  j["drafter"] = a.drafter;
  j["tree"] = a.tree;
  if (a.tree == "chain" || a.method == "peagle") j["k"] = a.k;
  if (a.tree == "dynamic") {
    j["depth"] = a.depth;
    j["tree_top_k"] = a.tree_top_k;
    j["total_tokens"] = a.total_tokens;
  }
  if (a.force_depth) j["force_depth"] = true;
  return j;
}

}  // namespace specdec::cli
