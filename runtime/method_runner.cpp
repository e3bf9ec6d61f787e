#include "runtime/method_runner.hpp"

#include <algorithm>

#include "runtime/backend.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/io/json_int.hpp"
#include "reference/methods/registry.hpp"

namespace specdec {

void check_method_args(const DecodeArgs& a) {
  check_method_spec(a.method);
  const MethodEntry& e = method_entry(a.method.name);
  if (e.drafter.kind != DrafterNeed::Kind::none && a.drafter.empty()) {
    throw Error("--method " + e.name + " needs --drafter DIR (" + e.drafter.description + ")");
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
  const DrafterNeed& need = method_entry(a.method.name).drafter;
  if (need.kind == DrafterNeed::Kind::none) return std::nullopt;
  LoadedDrafter d;
  d.path = a.drafter;
  if (need.kind == DrafterNeed::Kind::language_model) {
    LoadedModel m = load_model(a.drafter, a.backend);
    d.fingerprint = m.fingerprint;
    d.config_json = model_config_to_json(m.model->config()).dump();
    d.model = std::move(m.model);
    d.backend_model = std::move(m.backend_model);
    return d;
  }
  d.head = std::make_unique<EagleHead>(load_eagle_head(a.drafter, *target.model));
  if (d.head->config().kind != need.head) {
    throw Error(a.drafter + " holds an " + eagle_kind_name(d.head->config().kind) + " head; --method " + a.method.name +
                " needs an " + eagle_kind_name(need.head) + " head");
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
  if (!method_entry(a.method.name).make_proposer) return nullptr;
  if (!drafter) throw Error("--method " + a.method.name + ": no drafter was loaded");
  ProposerInputs in;
  in.target = &target.model->config();
  in.draft_lm = draft_lm ? draft_lm : drafter->draft_lm();
  in.head = head ? head : drafter->head.get();
  in.capacity = capacity;
  return make_method_proposer(a.method, in);
}

GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options, DecodeObserver* observer,
                            const LoadedDrafter* drafter) {
  check_method_args(a);
  if (!method_entry(a.method.name).make_proposer) return decode_sequential(target.forward_model(), prompt, sampling, options, observer);
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
  a.method = method_from_json(m, where + ": method");
  try {
    if (m.contains("drafter")) a.drafter = m["drafter"].get<std::string>();
    auto integer = [&](const nlohmann::json& v, const std::string& key) { return json_int32(v, where + ": " + key); };
    a.max_new_tokens = integer(j.at("max_new_tokens"), "max_new_tokens");
    a.ignore_eos = !j.at("stop_at_eos").get<bool>();
    a.sequence = 0;
    if (j.contains("sequence")) {
      // Random streams are keyed by the sequence id, so a sequence replays alone under its own id.
      const nlohmann::json& q = j["sequence"];
      const bool id = q.is_number_unsigned() ? q.get<uint64_t>() <= 0xFFFFFFFFULL
                                             : q.is_number_integer() && q.get<int64_t>() >= 0;
      if (!id) throw Error(where + ": sequence " + q.dump() + " is not supported; expected a sequence id in [0, 2^32)");
      a.sequence = static_cast<uint32_t>(q.get<uint64_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what() + "; expected the method object and max_new_tokens / stop_at_eos of specdec record");
  }
}

nlohmann::json method_json(const DecodeArgs& a) {
  nlohmann::json j = a.method.to_json();
  if (method_entry(a.method.name).drafter.kind != DrafterNeed::Kind::none) j["drafter"] = a.drafter;
  return j;
}

}  // namespace specdec
