#include "experiments/bench/bench_models.hpp"

#include <algorithm>

#include "runtime/backend.hpp"
#include "reference/methods/registry.hpp"
#include "runtime/random_drafters.hpp"
#include "reference/core/error.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/presets.hpp"
#include "reference/model/random_weights.hpp"

namespace specdec::bench {

namespace {

bool wants(const std::vector<std::string>& methods, const std::string& m) {
  return std::find(methods.begin(), methods.end(), m) != methods.end();
}

// Random drafters, from seeds derived from `seed` so that they differ from the target's weights.
void add_random_drafters(BenchModels& m, const std::vector<std::string>& backends, const std::vector<std::string>& methods,
                         Dtype precision, uint64_t seed) {
  const ModelConfig& tc = m.target->config();
  // EAGLE-3's default fused layers {2, L/2, L-3} need 6 or more layers; shallower presets
  // (tiny) fuse distinct layers spread over the depth instead.
  std::vector<int> aux;
  try {
    aux = default_aux_layers(tc.num_hidden_layers);
  } catch (const Error&) {
    const int L = tc.num_hidden_layers;
    for (int i : {1, L / 2, L - 1})
      if (i >= 0 && (aux.empty() || aux.back() < i)) aux.push_back(i);
  }
  // Seeds: seed + 1 for a draft LM, seed + 3, 4, ... for the heads in registry order.
  uint64_t offset = 2;
  for (const MethodEntry& e : method_registry()) {
    const bool wanted = wants(methods, e.name) && !m.drafter_sources.count(e.name);
    if (e.drafter.kind == DrafterNeed::Kind::language_model && wanted) {
      const ModelConfig dc = draft_lm_config(tc);
      LlamaWeights w = round_weights(random_llama_weights(dc, seed + 1), precision);
      for (const std::string& b : backends)
        if (b != "reference") m.draft_backends[b] = make_backend(b, dc, w, precision);
      m.draft_lm = std::make_unique<Transformer>(dc, std::move(w));
      m.drafter_sources[e.name] = "random";
    }
    if (e.drafter.kind == DrafterNeed::Kind::medusa_heads && wanted) {
      // Five heads of one block (vLLM's default count; deep enough for mc_sim_7b_63) sharing one
      // projection (vLLM's original_lm_head: one V x H matrix, not five, on large presets),
      // stored like the target; their own seed, so that the heads' seeds below stay as they were.
      MedusaConfig mc = medusa_config_for(tc, 5, 1, MedusaLayout::vllm);
      mc.shared_lm_head = true;
      const MedusaHeads random = random_medusa_heads(mc, tc, seed + 50, 0.02f);
      MedusaWeights w = random.weights();
      for (MedusaTensor& t : medusa_tensors(random.config(), w)) {
        if (t.m) *t.m = round_to_precision(*t.m, precision);
        else round_to_precision(t.v->data(), static_cast<std::size_t>(t.v->size()), precision);
      }
      m.medusa[e.name] = std::make_unique<MedusaHeads>(random.config(), std::move(w), tc);
      m.drafter_sources[e.name] = "random";
    }
    if (e.drafter.kind != DrafterNeed::Kind::eagle_head) continue;
    ++offset;
    if (!wanted) continue;
    const EagleHead random = random_eagle_head(random_head_config(e.drafter.head, tc, 0, aux), *m.target, seed + offset, 0.02f);
    m.heads[e.name] = std::make_unique<EagleHead>(round_head(random, precision));  // stored like the target
    m.drafter_sources[e.name] = "random";
  }
}

// Every head again on each other backend.
void bind_heads(BenchModels& m, const std::vector<std::string>& backends) {
  for (const std::string& b : backends) {
    if (b == "reference") continue;
    for (const auto& [method, head] : m.heads) m.backend_heads[{b, method}] = std::make_unique<EagleHead>(bind_head(b, *head));
    for (const auto& [method, heads] : m.medusa) m.backend_medusa[{b, method}] = std::make_unique<MedusaHeads>(bind_medusa(b, *heads));
  }
}

}  // namespace

const LanguageModel& BenchModels::target_on(const std::string& backend) const {
  if (backend == "reference") return *target;
  const auto it = backends.find(backend);
  if (it == backends.end()) throw Error("bench: the target was not built for backend '" + backend + "'");
  return *it->second;
}

const LanguageModel* BenchModels::draft_lm_on(const std::string& backend) const {
  if (backend == "reference") return draft_lm.get();
  const auto it = draft_backends.find(backend);
  return it == draft_backends.end() ? nullptr : it->second.get();
}

const EagleHead* BenchModels::head_for(const std::string& method, const std::string& backend) const {
  if (backend != "reference") {
    const auto it = backend_heads.find({backend, method});
    return it == backend_heads.end() ? nullptr : it->second.get();
  }
  const auto it = heads.find(method);
  return it == heads.end() ? nullptr : it->second.get();
}

const MedusaHeads* BenchModels::medusa_for(const std::string& method, const std::string& backend) const {
  if (backend != "reference") {
    const auto it = backend_medusa.find({backend, method});
    return it == backend_medusa.end() ? nullptr : it->second.get();
  }
  const auto it = medusa.find(method);
  return it == medusa.end() ? nullptr : it->second.get();
}

BenchModels preset_models(const std::string& preset, Dtype precision, const std::vector<std::string>& backends,
                          const std::vector<std::string>& methods, uint64_t seed) {
  const ModelPreset& p = find_model_preset(preset);
  for (const std::string& b : backends) check_backend(b, "--backends");
  BenchModels m;
  m.description = "preset " + p.name + " (" + p.description + "), random weights, seed " + std::to_string(seed);
  m.precision = dtype_name(precision);
  // The other backends pack their copy first; the reference then takes the weights over
  // (bandwidth-bound presets are GBs).
  LlamaWeights w = round_weights(random_llama_weights(p.config, seed), precision);
  for (const std::string& b : backends)
    if (b != "reference") m.backends[b] = make_backend(b, p.config, w, precision);
  m.target = std::make_unique<Transformer>(p.config, std::move(w));
  add_random_drafters(m, backends, methods, precision, seed);
  bind_heads(m, backends);
  return m;
}

BenchModels directory_models(const std::string& dir, const std::vector<std::string>& backends,
                             const std::vector<std::string>& methods, const DrafterDirs& dirs, uint64_t seed) {
  for (const std::string& b : backends) check_backend(b, "--backends");
  BenchModels m;
  LlamaModel loaded = load_llama_checkpoint(dir);
  m.description = "checkpoint " + dir;
  m.precision = loaded.config.torch_dtype;
  m.target = std::make_unique<Transformer>(std::move(loaded.config), std::move(loaded.weights));
  for (const std::string& b : backends)
    if (b != "reference") m.backends[b] = load_backend(b, dir);
  for (const MethodEntry& e : method_registry()) {
    const auto dir = dirs.find(e.name);
    if (!wants(methods, e.name) || dir == dirs.end() || dir->second.empty()) continue;
    const std::string& path = dir->second;
    if (e.drafter.kind == DrafterNeed::Kind::language_model) {
      LlamaModel d = load_llama_checkpoint(path);
      if (d.config.vocab_size != m.target->config().vocab_size) {
        throw Error(path + ": the draft LM's vocabulary (" + std::to_string(d.config.vocab_size) + ") differs from the target's (" +
                    std::to_string(m.target->config().vocab_size) + ")");
      }
      m.draft_lm = std::make_unique<Transformer>(std::move(d.config), std::move(d.weights));
      for (const std::string& b : backends)
        if (b != "reference") m.draft_backends[b] = load_backend(b, path);
    } else if (e.drafter.kind == DrafterNeed::Kind::eagle_head) {
      auto head = std::make_unique<EagleHead>(load_eagle_head(path, *m.target));
      if (head->config().kind != e.drafter.head) {
        throw Error(path + " holds an " + eagle_kind_name(head->config().kind) + " head; method " + e.name + " needs an " +
                    eagle_kind_name(e.drafter.head) + " head");
      }
      m.heads[e.name] = std::move(head);
    } else if (e.drafter.kind == DrafterNeed::Kind::medusa_heads) {
      m.medusa[e.name] = std::make_unique<MedusaHeads>(load_medusa_heads(path, m.target->config()));
    }
    m.drafter_sources[e.name] = path;
  }
  // Random drafters for what was not given: rounded like the checkpoint's own weights when it is
  // stored narrower, so that every backend holds the same drafter weights.
  Dtype precision = Dtype::F32;
  if (m.precision == "bfloat16") precision = Dtype::BF16;
  if (m.precision == "float16") precision = Dtype::F16;
  add_random_drafters(m, backends, methods, precision, seed);
  bind_heads(m, backends);
  return m;
}

}  // namespace specdec::bench
