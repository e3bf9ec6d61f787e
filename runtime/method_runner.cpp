#include "runtime/method_runner.hpp"

#include <algorithm>
#include <filesystem>

#include "runtime/backend.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_config.hpp"
#include "reference/drafters/mtp_checkpoint.hpp"
#include "reference/io/fingerprint.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/io/json_int.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/registry.hpp"
#include "runtime/drafter_fault.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {

namespace {

void check_draft_budget(const DecodeArgs& a) {
  if (!(a.draft_budget_ms >= 0) || a.draft_budget_ms > 3.6e6) {
    throw Error("--draft-budget-ms must be in [0, 3600000] milliseconds (0: no budget), got " + std::to_string(a.draft_budget_ms));
  }
}

}  // namespace

void check_method_args(const DecodeArgs& a) {
  check_method_spec(a.method);
  const MethodEntry& e = method_entry(a.method.name);
  if (e.drafter.loads_checkpoint() && a.drafter.empty()) {
    throw Error("--method " + e.name + " needs --drafter DIR (" + e.drafter.description + ")");
  }
  if (!e.drafter.loads_checkpoint() && !a.drafter.empty()) {
    throw Error("--method " + e.name + (method_drafts(e) ? " drafts from " + e.drafter.description : std::string(" does not draft")) +
                "; --drafter applies to " + [] {
                  std::string s;
                  for (const MethodEntry& m : method_registry())
                    if (m.drafter.loads_checkpoint()) s += (s.empty() ? "" : ", ") + m.name;
                  return s;
                }());
  }
  check_draft_budget(a);
  const bool drafts = method_drafts(e);
  if (!a.fallback_drafter.empty() && a.fallback_method.empty()) {
    throw Error("--fallback-drafter needs --fallback-method NAME (the method that drafts with it)");
  }
  if (!a.fallback_method.empty()) {
    if (!drafts) {
      throw Error("--fallback-method " + a.fallback_method + " replaces a failing drafter; --method " + e.name +
                  " has none (give a speculative --method)");
    }
    fallback_args(a);  // checks the fallback method and drafter
  }
  if (!a.drafter_fault.empty()) {
    parse_drafter_fault(a.drafter_fault);
    if (!drafts) throw Error("--drafter-fault injects a fault into the drafter; --method " + e.name + " has none");
  }
}

DecodeArgs fallback_args(const DecodeArgs& a) {
  if (a.fallback_method.empty()) throw Error("no --fallback-method given");
  DecodeArgs f = a;
  f.fallback_method.clear();
  f.fallback_drafter.clear();
  f.drafter_fault.clear();
  const MethodEntry& e = method_entry(a.fallback_method, "--fallback-method");
  f.method.name = e.name;
  f.drafter = a.fallback_drafter;
  if (!method_drafts(e)) {
    throw Error("--fallback-method " + e.name + " does not draft; the fallback must be a speculative method (" +
                known_methods() + ")");
  }
  if (e.drafter.loads_checkpoint() && f.drafter.empty()) {
    throw Error("--fallback-method " + e.name + " needs --fallback-drafter DIR (" + e.drafter.description + ")");
  }
  try {
    check_method_spec(f.method);
  } catch (const Error& err) {
    throw Error(std::string("--fallback-method ") + e.name + " with the shape options given: " + err.what());
  }
  return f;
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

namespace {

// What a drafter checkpoint holds when it is a head rather than a language model, with the method
// that decodes with it ("an EAGLE-1 head (decode with --method eagle)"); "" when it is none.
std::string head_checkpoint_kind(const std::string& path) {
  try {
    if (is_medusa_checkpoint(path)) {
      const MethodEntry& e = method_drafting_with(DrafterNeed::Kind::medusa_heads);
      return e.drafter.description + " (decode with --method " + e.name + ")";
    }
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::is_directory(path, ec) ? std::filesystem::path(path)
                                                                              : std::filesystem::path(path).parent_path();
    const nlohmann::json j = read_drafter_config(dir / "config.json");
    const std::vector<std::string> names = TensorStore(path).names();
    const EagleKind kind = is_mtp_checkpoint(j, names) ? EagleKind::mtp : parse_eagle_config(j, names, path).kind;
    const MethodEntry& e = method_drafting_with(DrafterNeed::Kind::eagle_head, kind);
    return e.drafter.description + " (decode with --method " + e.name + ")";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

std::optional<LoadedDrafter> load_drafter(const DecodeArgs& a, const LoadedModel& target) {
  check_method_args(a);
  const DrafterNeed& need = method_entry(a.method.name).drafter;
  if (need.kind == DrafterNeed::Kind::none) return std::nullopt;
  LoadedDrafter d;
  d.path = a.drafter;
  if (const auto make = method_entry(a.method.name).make_run_state) d.run_state = make(a.method.normalized());
  if (need.kind == DrafterNeed::Kind::context) return d;  // no checkpoint: the drafter is the token history
  if (need.kind == DrafterNeed::Kind::language_model) {
    LoadedModel m = [&] {
      try {
        return load_model(a.drafter, a.backend);
      } catch (const Error&) {
        const std::string head = head_checkpoint_kind(a.drafter);
        if (head.empty()) throw;
        throw Error("--drafter " + a.drafter + " holds " + head + ", not the draft language model --method " + a.method.name +
                    " needs (a whole model sharing the target's tokenizer)");
      }
    }();
    d.fingerprint = m.fingerprint();
    d.config_json = model_config_to_json(m.config).dump();
    if (!m.backend_model) d.model = m.take_reference();
    d.backend_model = std::move(m.backend_model);
    return d;
  }
  if (need.kind == DrafterNeed::Kind::medusa_heads) {
    d.medusa = std::make_unique<MedusaHeads>(load_medusa_heads(a.drafter, target.config));
    d.fingerprint = medusa_heads_fingerprint(*d.medusa);  // before binding, which may take the fp32 weights
    if (a.backend != "reference") d.medusa = std::make_unique<MedusaHeads>(bind_medusa(a.backend, std::move(*d.medusa)));
    d.config_json = medusa_config_to_json(d.medusa->config()).dump();
    return d;
  }
  if (need.kind == DrafterNeed::Kind::eagle_head && need.head == EagleKind::mtp) {
    // Every module of the checkpoint: module 0 drafts first, the others follow (mtp.cpp).
    std::vector<EagleHead> modules = load_mtp_modules(a.drafter, target.head_target());
    // The fingerprint is taken before binding: a bound module may have given its fp32 weights away.
    Fnv1a64 h;  // every module's weights
    for (const EagleHead& m : modules) {
      const std::string f = eagle_head_fingerprint(m);
      h.update(f.data(), f.size());
    }
    d.fingerprint = modules.size() == 1 ? eagle_head_fingerprint(modules.front()) : h.str();
    for (EagleHead& m : modules) {
      auto bound = std::make_unique<EagleHead>(bind_head(a.backend, std::move(m), target.forward_model()));
      if (!d.head) {
        d.head = std::move(bound);
      } else {
        d.extra_modules.push_back(std::move(bound));
      }
    }
    d.config_json = mtp_config_to_json(d.head->config(), target.config.architecture).dump();
    return d;
  }
  d.head = std::make_unique<EagleHead>(load_eagle_head(a.drafter, target.head_target()));
  if (d.head->config().kind != need.head) {
    throw Error(a.drafter + " holds an " + eagle_kind_name(d.head->config().kind) + " head; --method " + a.method.name +
                " needs an " + eagle_kind_name(need.head) + " head");
  }
  d.fingerprint = eagle_head_fingerprint(*d.head);  // before binding, which may take the fp32 weights
  if (a.backend != "reference") d.head = std::make_unique<EagleHead>(bind_head(a.backend, std::move(*d.head), target.forward_model()));
  d.config_json = eagle_config_to_json(d.head->config(), target.config.num_hidden_layers,
                                       target.config.architecture)
                      .dump();
  return d;
}

std::unique_ptr<Proposer> make_proposer(const DecodeArgs& a, const LoadedModel& target, const LoadedDrafter* drafter,
                                        int capacity, const LanguageModel* draft_lm, const EagleHead* head,
                                        const MedusaHeads* medusa) {
  check_method_args(a);
  if (!method_entry(a.method.name).make_proposer) return nullptr;
  if (!drafter) throw Error("--method " + a.method.name + ": no drafter was loaded");
  ProposerInputs in;
  in.target = &target.config;
  in.draft_lm = draft_lm ? draft_lm : drafter->draft_lm();
  in.head = head ? head : drafter->head.get();
  for (const auto& m : drafter->extra_modules) in.extra_modules.push_back(m.get());
  in.medusa = medusa ? medusa : drafter->medusa.get();
  in.capacity = capacity;
  in.run_state = drafter->run_state;
  return make_method_proposer(a.method, in);
}

SpeculationControl speculation_control(const DecodeArgs& a, SpeculationPolicy* policy) {
  check_draft_budget(a);
  SpeculationControl c;
  c.policy = policy;
  c.draft_budget_ns = static_cast<int64_t>(a.draft_budget_ms * 1e6);
  return c;
}

GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options, DecodeObserver* observer,
                            const LoadedDrafter* drafter, const TokenAcceptor* acceptor) {
  check_method_args(a);
  if (!method_entry(a.method.name).make_proposer) return decode_sequential(target.forward_model(), prompt, sampling, options, observer);
  std::optional<LoadedDrafter> loaded;
  if (!drafter) {
    loaded = load_drafter(a, target);
    drafter = &*loaded;
  }
  const std::unique_ptr<TokenAcceptor> default_rule = acceptor ? nullptr : default_acceptor(sampling);
  if (!acceptor) acceptor = default_rule.get();
  const int capacity = checked_capacity(prompt.size(), options.max_new_tokens, 1, target.config.max_position_embeddings);
  const std::unique_ptr<Proposer> proposer = make_proposer(a, target, drafter, capacity);
  const std::unique_ptr<SpeculationPolicy> policy = make_policy(a.policy);
  SpeculationControl control = speculation_control(a, policy.get());
  // --drafter-fault: the primary drafter, failing at the chosen step.
  std::optional<FaultyProposer> faulty;
  if (!a.drafter_fault.empty()) faulty.emplace(*proposer, parse_drafter_fault(a.drafter_fault), control.draft_budget_ns);
  Proposer& primary = faulty ? static_cast<Proposer&>(*faulty) : *proposer;
  // --fallback-method / --fallback-drafter: a second drafter, sized as the first (the target's
  // cache gets the larger draft headroom of the two: decoder_cache_capacity).
  std::optional<LoadedDrafter> fallback_drafter;
  std::unique_ptr<Proposer> fallback;
  if (!a.fallback_method.empty()) {
    const DecodeArgs f = fallback_args(a);
    fallback_drafter = load_drafter(f, target);
    fallback = make_proposer(f, target, &*fallback_drafter, capacity);
    control.fallbacks.push_back(fallback.get());
  }
  return decode_speculative(target.forward_model(), primary, *acceptor, prompt, sampling, options, control, observer);
}

void decode_args_from_trace_config(const std::string& config_json, const std::string& source, DecodeArgs& a) {
  const std::string where = source + ": /meta/config_json";
  check_json_depth(config_json, where);
  const auto j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(where + " is not a JSON object");
  if (!j.contains("method") || !j["method"].is_object()) {
    throw Error(where + " has no \"method\" object; was the trace written by specdec record?");
  }
  const nlohmann::json& m = j["method"];
  a.method = method_from_json(m, where + ": method");
  try {
    if (m.contains("drafter")) a.drafter = m["drafter"].get<std::string>();
    auto integer = [&](const nlohmann::json& v, const std::string& key) { return json_int32(v, where + ": " + key); };
    // Traces written before policies existed record none: they ran the fixed policy.
    a.policy = j.contains("policy") ? policy_from_json(j["policy"], where + ": policy") : PolicySpec{};
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
  if (method_entry(a.method.name).drafter.loads_checkpoint()) j["drafter"] = a.drafter;
  return j;
}

}  // namespace specdec
