// specdec._core: the reference (and every backend of this build) for Python. Models, drafters,
// forwards with explicit positions, masks and a KV cache, and decoding, recording and validation
// through the same code as the command line (runtime/). numpy arrays in and out; every
// specdec::Error surfaces as specdec.Error with its message. docs/python.md is the user's guide.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/batch_job.hpp"
#include "runtime/batch_report.hpp"
#include "runtime/method_runner.hpp"
#include "runtime/backend.hpp"
#include "runtime/record_run.hpp"
#include "runtime/speculation_report.hpp"
#include "reference/policies/policy_spec.hpp"
#include "validation/validate_run.hpp"
#include "reference/methods/registry.hpp"
#include "reference/drafting/suffix_proposer.hpp"
#include "reference/core/error.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/model/ops.hpp"
#include "specdec/version.hpp"
#include "python/bindings/acceptance_rule.hpp"
#include "python/bindings/calibrate.hpp"
#include "python/bindings/conversions.hpp"
#include "python/bindings/simulate.hpp"
#include "python/bindings/simulate_sweep.hpp"
#include "python/bindings/step_records.hpp"

namespace py = pybind11;

namespace specdec::python {

namespace {

// ---- conversions (the rest: conversions.hpp) -----------------------------------------------------

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

// ---- objects -------------------------------------------------------------------------------------

struct Model {
  LoadedModel m;
};

struct Cache {
  std::shared_ptr<Model> model;
  std::unique_ptr<KVCache> cache;
};

struct Drafter {
  std::shared_ptr<Model> target;
  LoadedDrafter d;
  std::string method;  // draft | eagle | eagle3 | peagle | mtp | medusa
  std::string kind;    // draft_lm | eagle1 | eagle3 | peagle | mtp | medusa
};

struct Tokenizer {
  std::shared_ptr<const text::Tokenizer> t;
};

// What generate returns.
struct Generation {
  std::vector<int32_t> tokens;
  std::string stop_reason;
  std::optional<std::string> text;
  std::vector<int32_t> prompt;
  GenerationStats stats;
  std::vector<DrafterFallback> fallbacks;
  PolicySpec policy;
  // record_steps=True: every step, kept in memory (step_records.hpp); step_logits: with logits.
  bool has_steps = false, step_logits = false;
  int vocab = 0;
  std::vector<StepRecord> step_records;

  double acceptance_length() const { return stats.steps ? stats.acceptance_length() : 1.0; }
  double tokens_per_target_forward() const {
    return stats.target_forwards ? static_cast<double>(tokens.size()) / stats.target_forwards : 0.0;
  }
  py::dict stats_dict() const {
    py::dict d;
    d["generated_tokens"] = tokens.size();
    d["target_forwards"] = stats.target_forwards;
    d["steps"] = stats.steps;
    d["drafter_forwards"] = stats.drafter_forwards;
    d["drafted_tokens"] = stats.drafted_tokens;
    d["accepted_tokens"] = stats.accepted_tokens;
    d["acceptance_length"] = acceptance_length();
    d["acceptance_by_depth"] = stats.acceptance_by_depth();
    d["accepted_per_step"] = stats.accepted_per_step;
    d["mean_draft_depth"] = stats.mean_draft_depth();
    d["draft_depth_per_step"] = stats.draft_depth_per_step;
    d["tokens_per_target_forward"] = tokens_per_target_forward();
    return d;
  }
};

// ---- models and forwards -------------------------------------------------------------------------

std::shared_ptr<Model> load_model(const std::filesystem::path& fs_path, const std::string& backend) {
  const std::string path = fs_path.string();
  auto m = std::make_shared<Model>();
  py::gil_scoped_release release;
  m->m = ::specdec::load_model(path, backend);
  return m;
}

std::shared_ptr<Cache> new_cache(const std::shared_ptr<Model>& model, int capacity) {
  if (capacity < 1) throw Error("cache capacity must be >= 1 (got " + std::to_string(capacity) + ")");
  // A cache never holds more positions than the model has (and its size is allocated up front).
  const int context = model->m.config.max_position_embeddings;
  if (capacity > context)
    throw Error("cache capacity " + std::to_string(capacity) + " is more than the model's context (max_position_embeddings " +
                std::to_string(context) + ")");
  auto c = std::make_shared<Cache>();
  c->model = model;
  c->cache = model->m.forward_model().new_cache(capacity);
  return c;
}

// Model.forward(tokens, positions=None, mask=None, cache=None, hidden_states=False, logit_rows=None)
py::object forward(const std::shared_ptr<Model>& model, const py::object& tokens_obj, const py::object& positions_obj,
                   const py::object& mask_obj, const std::shared_ptr<Cache>& cache_arg, bool hidden_states,
                   const py::object& logit_rows_obj) {
  const ModelConfig& c = model->m.config;
  ForwardRequest req;
  req.tokens = int_vector(tokens_obj, "tokens");
  const int T = static_cast<int>(req.tokens.size());
  if (T == 0) throw Error("tokens is empty: a forward needs at least one token");
  for (int t = 0; t < T; ++t) {
    if (req.tokens[t] < 0 || req.tokens[t] >= c.vocab_size) {
      throw Error("tokens[" + std::to_string(t) + "] = " + std::to_string(req.tokens[t]) + " is outside the vocabulary [0, " +
                  std::to_string(c.vocab_size) + ")");
    }
  }
  std::shared_ptr<Cache> cache = cache_arg;
  if (cache && cache->model != model) {
    throw Error("cache was made by another model's new_cache(); a cache belongs to the model that made it");
  }
  if (!cache) cache = new_cache(model, T);
  const int C = cache->cache->length();
  if (C + T > cache->cache->capacity()) {
    throw Error("the cache holds " + std::to_string(C) + " of " + std::to_string(cache->cache->capacity()) + " slots; " +
                std::to_string(T) + " more tokens do not fit (make it with a larger capacity)");
  }
  if (!positions_obj.is_none()) {
    req.positions = int_vector(positions_obj, "positions");
    if (static_cast<int>(req.positions.size()) != T) {
      throw Error("positions has " + std::to_string(req.positions.size()) + " entries for " + std::to_string(T) +
                  " tokens; give one absolute position per token");
    }
    for (int t = 0; t < T; ++t) {
      if (req.positions[t] < 0 || req.positions[t] >= c.max_position_embeddings) {
        throw Error("positions[" + std::to_string(t) + "] = " + std::to_string(req.positions[t]) + " is outside [0, " +
                    std::to_string(c.max_position_embeddings) + ") (max_position_embeddings)");
      }
    }
  } else if (C + T > c.max_position_embeddings) {
    throw Error("positions " + std::to_string(C) + ".." + std::to_string(C + T - 1) + " pass max_position_embeddings " +
                std::to_string(c.max_position_embeddings));
  }
  if (!mask_obj.is_none()) {
    py::array a = py::module_::import("numpy").attr("asarray")(mask_obj);
    if (a.dtype().kind() != 'b') {
      throw Error("mask must be a boolean array (True = may attend), got dtype " + dtype_name(a));
    }
    if (a.ndim() != 2 || a.shape(0) != T || a.shape(1) != C + T) {
      std::string shape;
      for (py::ssize_t d = 0; d < a.ndim(); ++d) {
        if (d) shape += ", ";
        shape += std::to_string(a.shape(d));
      }
      throw Error("mask has shape (" + shape + "), expected (" + std::to_string(T) + ", " + std::to_string(C + T) +
                  "): (new tokens, cached tokens " + std::to_string(C) + " + new tokens)");
    }
    auto b = py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(a);
    AttentionMask mask(T, C + T);
    for (int r = 0; r < T; ++r) {
      bool any = false;
      for (int col = 0; col < C + T; ++col) {
        const bool v = b.data()[static_cast<size_t>(r) * (C + T) + col];
        if (v) mask.set(r, col, true);
        any = any || v;
      }
      if (!any) throw Error("mask row " + std::to_string(r) + " allows no key: every token must attend to something");
    }
    req.mask = std::move(mask);
  }
  if (logit_rows_obj.is_none()) {
    for (int t = 0; t < T; ++t) req.logit_rows.push_back(t);
  } else {
    for (int32_t r : int_vector(logit_rows_obj, "logit_rows")) {
      if (r < 0 || r >= T) throw Error("logit_rows: row " + std::to_string(r) + " is outside [0, " + std::to_string(T) + ")");
      req.logit_rows.push_back(r);
    }
  }
  const int L = c.num_hidden_layers, H = c.hidden_size;
  if (hidden_states) {
    for (int l = 0; l <= L; ++l) req.aux_layers.push_back(l);
  }
  ForwardResult r;
  {
    py::gil_scoped_release release;
    r = model->m.forward_model().forward(*cache->cache, req);
  }
  if (r.logits.rows() != static_cast<Eigen::Index>(req.logit_rows.size()) || r.logits.cols() != c.vocab_size) {
    throw Error("backend " + model->m.backend + " returned logits of the wrong shape");
  }
  py::array_t<float> logits = to_numpy(r.logits);
  if (!hidden_states) return logits;
  if (r.aux_hidden.rows() != T || r.aux_hidden.cols() != static_cast<Eigen::Index>(L + 1) * H) {
    throw Error("backend " + model->m.backend + " returned hidden states of the wrong shape");
  }
  // (T, (L+1)·H) → (L+1, T, H), as `specdec forward` writes /hidden.
  py::array_t<float> hidden({static_cast<py::ssize_t>(L + 1), static_cast<py::ssize_t>(T), static_cast<py::ssize_t>(H)});
  float* h = hidden.mutable_data();
  for (int l = 0; l <= L; ++l)
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < H; ++k) h[(static_cast<size_t>(l) * T + t) * H + k] = r.aux_hidden(t, l * H + k);
  return py::make_tuple(logits, hidden);
}

// ---- drafters ------------------------------------------------------------------------------------

std::string method_for_head(EagleKind kind) { return method_drafting_with(DrafterNeed::Kind::eagle_head, kind).name; }

// "draft, eagle, eagle3, peagle": the methods that draft with a drafter.
std::string drafting_methods() {
  std::string s;
  for (const MethodEntry& e : method_registry())
    if (e.drafter.loads_checkpoint()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

std::shared_ptr<Drafter> load_drafter(const std::filesystem::path& fs_path, const std::shared_ptr<Model>& target,
                                      const py::object& method_obj) {
  const std::string path = fs_path.string();
  if (!target) throw Error("load_drafter: target must be a Model from specdec.load_model");
  std::string method = method_obj.is_none() ? "" : method_entry(method_obj.cast<std::string>(), "load_drafter: method").name;
  if (!method.empty() && !method_entry(method).drafter.loads_checkpoint()) {
    throw Error("load_drafter: method must be one that drafts (" + drafting_methods() + "), not '" + method_obj.cast<std::string>() + "'");
  }
  auto d = std::make_shared<Drafter>();
  d->target = target;
  py::gil_scoped_release release;
  // Medusa heads say so in config.json (or by medusa_lm_head.*), whatever else the folder holds.
  if (method.empty() && is_medusa_checkpoint(path)) method = method_drafting_with(DrafterNeed::Kind::medusa_heads).name;
  if (method.empty()) {
    // Which kind of drafter the directory holds: an EAGLE-family head (its kind from config.json
    // and tensor names), else a draft language model.
    std::string head_error;
    try {
      const EagleHead probe = load_eagle_head(path, target->m.head_target());
      method = method_for_head(probe.config().kind);
    } catch (const Error& e) {
      head_error = e.what();
    }
    if (method.empty()) {
      try {
        LoadedModel probe = ::specdec::load_model(path, "reference");
        method = "draft";
      } catch (const Error& e) {
        throw Error(path + " is neither an EAGLE-family head (" + head_error + ") nor a draft language model (" + e.what() + ")");
      }
    }
  }
  DecodeArgs a;
  a.model = target->m.path;
  a.method.name = method;
  a.drafter = path;
  a.backend = target->m.backend;
  std::optional<LoadedDrafter> loaded = ::specdec::load_drafter(a, target->m);
  d->d = std::move(*loaded);
  d->method = method;
  d->kind = d->d.head ? eagle_kind_name(d->d.head->config().kind) : d->d.medusa ? method_drafting_with(DrafterNeed::Kind::medusa_heads).name : "draft_lm";
  return d;
}

// ---- one proposal of a drafter -------------------------------------------------------------------

// Drafter.propose: what the drafter proposes after `sequence` (prompt + emitted ids, the last one
// pending) given the target's hidden states for sequence[:-1], by the proposer a run of its method
// makes; a fresh proposer each call, so the drafter's own cache is built from the whole sequence
// (the answer does not depend on earlier calls).
py::dict propose(const std::shared_ptr<Drafter>& d, const py::object& sequence_obj, const py::object& hidden_obj, int k,
                 const std::string& tree, int depth, int tree_top_k, int total_tokens, const std::string& sampling_mode,
                 double temperature, int top_k, double top_p, uint64_t seed, const py::object& prompt_length_obj) {
  const std::string fn = "Drafter.propose";
  const LoadedModel& target = d->target->m;
  const ModelConfig& c = target.config;
  const std::vector<int32_t> sequence = int_vector(sequence_obj, fn + ": sequence");
  if (sequence.size() < 2)
    throw Error(fn + ": sequence must hold the prompt and the pending token (at least 2 ids), got " + std::to_string(sequence.size()));
  for (std::size_t i = 0; i < sequence.size(); ++i)
    if (sequence[i] < 0 || sequence[i] >= c.vocab_size)
      throw Error(fn + ": sequence[" + std::to_string(i) + "] = " + std::to_string(sequence[i]) + " is outside the vocabulary [0, " +
                  std::to_string(c.vocab_size) + ")");
  const int committed = static_cast<int>(sequence.size()) - 1;
  DecodeArgs a;
  a.model = target.path;
  a.backend = target.backend;
  a.method.name = d->method;
  a.drafter = d->d.path;
  a.method.k = k;
  a.method.tree = tree;
  a.method.depth = depth;
  a.method.tree_top_k = tree_top_k;
  a.method.total_tokens = total_tokens;
  a.sampling = sampling_mode;
  a.temperature = temperature;
  a.top_k = top_k;
  a.top_p = top_p;
  a.seed = seed;
  a.max_new_tokens = 1;
  check_method_args(a);
  const int capacity = c.max_position_embeddings;
  std::unique_ptr<Proposer> proposer = make_proposer(a, target, &d->d, capacity);
  if (committed + proposer->max_nodes() + 1 > capacity)
    throw Error(fn + ": " + std::to_string(sequence.size()) + " ids and a draft of " + std::to_string(proposer->max_nodes()) +
                " nodes pass the target's context (" + std::to_string(capacity) + ")");

  // The target's states the proposer reads, from hidden (L+1, T >= committed, H) as Model.forward(hidden_states=True) gives it.
  const int L = c.num_hidden_layers, H = c.hidden_size;
  const std::vector<int> aux_layers = proposer->wanted_aux_layers();
  Matrix final_hidden, aux_hidden;
  if (proposer->wants_final_hidden() || !aux_layers.empty()) {
    if (hidden_obj.is_none())
      throw Error(fn + ": a " + d->kind + " drafter reads the target's hidden states: give hidden = the (L+1, T, H) array of "
                  "model.forward(sequence[:-1], hidden_states=True)");
    py::array a_h = py::module_::import("numpy").attr("asarray")(hidden_obj);
    if (a_h.dtype().kind() != 'f' || a_h.itemsize() != 4)
      throw Error(fn + ": hidden must be float32 (as Model.forward returns it), got dtype " + dtype_name(a_h));
    if (a_h.ndim() != 3 || a_h.shape(0) != L + 1 || a_h.shape(1) < committed || a_h.shape(2) != H) {
      std::string shape;
      for (py::ssize_t i = 0; i < a_h.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a_h.shape(i));
      throw Error(fn + ": hidden has shape (" + shape + "), expected (" + std::to_string(L + 1) + ", T >= " + std::to_string(committed) +
                  ", " + std::to_string(H) + "): the target's states for sequence[:-1]");
    }
    auto h = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a_h);
    const int T = static_cast<int>(h.shape(1));
    const auto at = [&](int l, int t, int x) { return h.data()[(static_cast<std::size_t>(l) * T + t) * H + x]; };
    if (proposer->wants_final_hidden()) {
      final_hidden.resize(committed, H);
      for (int t = 0; t < committed; ++t)
        for (int x = 0; x < H; ++x) final_hidden(t, x) = at(L, t, x);
    }
    if (!aux_layers.empty()) {
      aux_hidden.resize(committed, static_cast<Eigen::Index>(aux_layers.size()) * H);
      for (int t = 0; t < committed; ++t)
        for (std::size_t i = 0; i < aux_layers.size(); ++i)
          for (int x = 0; x < H; ++x) aux_hidden(t, static_cast<Eigen::Index>(i) * H + x) = at(aux_layers[i], t, x);
    }
  }
  DraftContext ctx;
  ctx.sequence = &sequence;
  ctx.committed = committed;
  ctx.prompt_length = prompt_length_obj.is_none() ? committed : prompt_length_obj.cast<int>();
  if (ctx.prompt_length < 1 || ctx.prompt_length > committed)
    throw Error(fn + ": prompt_length must be in [1, len(sequence) - 1] = [1, " + std::to_string(committed) + "]");
  ctx.max_length = capacity;
  ctx.final_hidden = &final_hidden;
  ctx.aux_hidden = &aux_hidden;
  ctx.sampling = sampling_params(a);
  ctx.sequence_id = 0;
  Proposal p;
  {
    py::gil_scoped_release release;
    p = proposer->propose(ctx);
  }
  p.tree.validate(c.vocab_size);
  py::dict out;
  out["tokens"] = int_array(p.tree.tokens);
  out["parents"] = int_array(p.tree.parents);
  out["draft_probs"] = p.draft_probs.empty() ? py::object(py::none()) : py::object(double_rows(p.draft_probs, c.vocab_size));
  out["drafter_forwards"] = p.drafter_forwards;
  return out;
}

// ---- decoding ------------------------------------------------------------------------------------

struct MethodArgs {
  py::object method, drafter;
  int k, depth, tree_top_k, total_tokens;
  std::string tree;
  bool force_depth;
  std::string sampling;
  double temperature;
  int top_k;
  double top_p;
  uint64_t seed;
  int max_new_tokens;
  bool ignore_eos;
  std::string policy;      // --policy text form
  double draft_budget_ms;  // --draft-budget-ms
};

// The prompt: a string (encoded by the model's tokenizer, with what it adds before a prompt) or ids.
std::vector<int32_t> prompt_ids(const Model& model, const py::object& prompt) {
  const ModelConfig& c = model.m.config;
  std::vector<int32_t> ids;
  if (py::isinstance<py::str>(prompt)) {
    if (!model.m.tokenizer) {
      throw Error(model.m.path + " has no tokenizer (tokenizer.json, tokenizer.model or vocab.json), so text prompts cannot be "
                  "encoded; give token ids instead");
    }
    ids = model.m.tokenizer->encode(prompt.cast<std::string>(), true);
  } else {
    ids = int_vector(prompt, "prompt");
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= c.vocab_size) {
        throw Error("prompt[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is not a token id in [0, " +
                    std::to_string(c.vocab_size) + ")");
      }
    }
  }
  if (ids.empty()) throw Error("the prompt is empty");
  return ids;
}

// DecodeArgs from the keyword arguments; the drafter as a path (a.drafter) or a loaded Drafter.
DecodeArgs decode_args(const std::string& model_path, const std::string& backend, const MethodArgs& m,
                            std::shared_ptr<Drafter>* drafter_out) {
  DecodeArgs a;
  a.model = model_path;
  a.backend = backend;
  std::shared_ptr<Drafter> drafter;
  if (!m.drafter.is_none()) {
    if (py::isinstance<Drafter>(m.drafter)) {
      drafter = m.drafter.cast<std::shared_ptr<Drafter>>();
      a.drafter = drafter->d.path;
    } else if (py::isinstance<py::str>(m.drafter) || py::hasattr(m.drafter, "__fspath__")) {
      a.drafter = py::module_::import("os").attr("fspath")(m.drafter).cast<std::string>();
    } else {
      throw Error("drafter must be a Drafter (specdec.load_drafter) or a checkpoint path, not " +
                  py::str(py::type::of(m.drafter).attr("__name__")).cast<std::string>());
    }
  }
  if (m.method.is_none()) {
    if (!drafter && !a.drafter.empty()) {
      throw Error("drafter " + a.drafter + " is a path: say which method drafts with it (method= one of " + drafting_methods() +
                  "), or pass specdec.load_drafter(path, model), whose kind is detected");
    }
    a.method.name = drafter ? drafter->method : "sequential";
  } else {
    if (!py::isinstance<py::str>(m.method)) throw Error("method must be a string: one of " + known_methods());
    const MethodSpec named = parse_method_text(m.method.cast<std::string>(), "method");  // "ngram,n_min=2"
    a.method.name = named.name;
    a.method.params = named.params;
  }
  const bool drafts = method_entry(a.method.name).drafter.loads_checkpoint();
  if (drafter && drafts && drafter->method != a.method.name) {
    throw Error("method " + a.method.name + " cannot draft with " + drafter->d.path + ", which is a " + drafter->kind +
                " drafter (method " + drafter->method + ")");
  }
  if (!drafts) a.drafter.clear();
  if (drafts && a.drafter.empty()) {  // said here in Python's words, before check_method_args says it in the CLI's
    const MethodEntry& e = method_entry(a.method.name);
    throw Error("method " + e.name + " needs a drafter: drafter= a checkpoint path or specdec.load_drafter(path, model) (" +
                e.drafter.description + ")");
  }
  a.method.k = m.k;
  a.method.tree = m.tree;
  a.method.depth = m.depth;
  a.method.tree_top_k = m.tree_top_k;
  a.method.total_tokens = m.total_tokens;
  a.method.force_depth = m.force_depth;
  a.sampling = m.sampling;
  a.temperature = m.temperature;
  a.top_k = m.top_k;
  a.top_p = m.top_p;
  a.seed = m.seed;
  a.max_new_tokens = m.max_new_tokens;
  a.ignore_eos = m.ignore_eos;
  a.policy = parse_policy_spec(m.policy, "policy");
  a.draft_budget_ms = m.draft_budget_ms;
  if (drafter_out) *drafter_out = drafts ? drafter : nullptr;
  return a;
}

// The decoding options of a run on `model`, checked, with the drafter (if any) loaded for it.
DecodeArgs model_decode_args(const std::shared_ptr<Model>& model, const MethodArgs& m,
                             std::shared_ptr<Drafter>* drafter) {
  const DecodeArgs a = decode_args(model->m.path, model->m.backend, m, drafter);
  if (*drafter && (*drafter)->target != model) {
    throw Error("the drafter was loaded for another target (" + (*drafter)->target->m.path +
                "); load it with specdec.load_drafter(path, model) for this model");
  }
  check_method_args(a);
  return a;
}

// What generate takes besides the method: per-step records and a Python acceptance rule.
struct GenerateExtras {
  py::object acceptance;  // None or a callable (acceptance_rule.hpp)
  bool record_steps = false;
  bool step_logits = false;
};

Generation generate(const std::shared_ptr<Model>& model, const py::object& prompt, const MethodArgs& m,
                    const GenerateExtras& x) {
  if (!model) throw Error("generate: model must be a Model from specdec.load_model");
  std::shared_ptr<Drafter> drafter;
  const DecodeArgs a = model_decode_args(model, m, &drafter);
  const SamplingParams sampling = sampling_params(a);
  const GenerationOptions options = generation_options(a);
  std::unique_ptr<PythonAcceptor> rule;
  if (!x.acceptance.is_none()) {
    if (!method_entry(a.method.name).make_proposer)
      throw Error("acceptance= is the verification rule of a speculative method; method " + a.method.name +
                  " drafts nothing to accept (give method= and drafter=)");
    rule = std::make_unique<PythonAcceptor>(x.acceptance);
  }
  if (x.step_logits && !x.record_steps) throw Error("step_logits=True adds logits to the per-step records: give record_steps=True too");
  Generation g;
  g.prompt = prompt_ids(*model, prompt);
  g.has_steps = x.record_steps;
  g.step_logits = x.step_logits;
  g.vocab = model->m.config.vocab_size;
  StepRecorder recorder(x.step_logits);
  GenerationResult r;
  {
    py::gil_scoped_release release;
    r = run_method(a, model->m, g.prompt, sampling, options, x.record_steps ? &recorder : nullptr,
                   drafter ? &drafter->d : nullptr, rule.get());
  }
  g.step_records = recorder.records();
  g.tokens = std::move(r.tokens);
  g.stop_reason = r.stop_reason;
  g.stats = r.stats;
  g.fallbacks = r.fallbacks;
  g.policy = a.policy;
  if (model->m.tokenizer) g.text = model->m.tokenizer->decode(g.tokens);
  return g;
}

// generate_batch: the prompts as one batched run (continuous batching, `concurrency` sequences at
// once), as `specdec batch` decodes them: request i draws with sequence id i. Returns
// {"requests": [one dict per request, as a line of `specdec batch --out`], "summary": {as
// `specdec batch --json`}}.
py::object generate_batch(const std::shared_ptr<Model>& model, const py::object& prompts, int64_t concurrency,
                          const py::object& rate, const MethodArgs& m) {
  if (!model) throw Error("generate_batch: model must be a Model from specdec.load_model");
  check_concurrency(concurrency, "concurrency");
  std::optional<double> arrival_rate;
  if (!rate.is_none()) {
    try {
      arrival_rate = rate.cast<double>();
    } catch (const py::cast_error&) {
      throw Error("rate must be a number of requests per second (or None: every request at once)");
    }
  }
  if (py::isinstance<py::str>(prompts) || !py::isinstance<py::sequence>(prompts)) {
    throw Error("prompts must be a list of prompts (each a string or a sequence of token ids)");
  }
  std::shared_ptr<Drafter> drafter;
  const DecodeArgs a = model_decode_args(model, m, &drafter);
  std::vector<std::vector<int32_t>> ids;
  const py::sequence list = prompts.cast<py::sequence>();
  if (list.size() == 0) throw Error("prompts is empty: give at least one prompt");
  for (std::size_t i = 0; i < list.size(); ++i) {
    try {
      ids.push_back(prompt_ids(*model, list[i]));
    } catch (const Error& e) {
      throw Error("prompts[" + std::to_string(i) + "]: " + e.what());
    }
  }
  std::vector<BatchRequest> requests = batch_requests(a, ids, /*sequence_per_request=*/true);
  if (arrival_rate) {
    const std::vector<double> arrivals = poisson_arrivals(requests.size(), *arrival_rate, a.seed);
    for (std::size_t i = 0; i < requests.size(); ++i) requests[i].arrival_s = arrivals[i];
  }
  BatchRunOptions o;
  o.concurrency = static_cast<int>(concurrency);
  BatchResult result;
  {
    py::gil_scoped_release release;
    result = run_batched(a, model->m, requests, o, drafter ? &drafter->d : nullptr);
  }
  nlohmann::json out = {{"requests", nlohmann::json::array()}};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    out["requests"].push_back(request_json(i, requests[i], result.requests[i], model->m.tokenizer.get()));
  }
  BatchSetup setup;
  setup.args = &a;
  setup.concurrency = o.concurrency;
  setup.rate = arrival_rate;
  out["summary"] = batch_summary_json(result, setup);
  py::object converted = json_to_python(out);
  for (py::handle r : converted["requests"]) r["output_tokens"] = int_array(r["output_tokens"].cast<std::vector<int32_t>>());
  return converted;
}

// A run's request: model, prompt, method and sampling.
DecodeArgs run_request(const std::string& model_path, const std::string& backend, const py::object& prompt,
                       const Model* loaded, const MethodArgs& m) {
  DecodeArgs a = decode_args(model_path, backend, m, nullptr);
  if (!prompt.is_none()) {
    if (py::isinstance<py::str>(prompt)) {
      a.prompt = prompt.cast<std::string>();
    } else {
      std::vector<int32_t> ids;
      if (loaded) {
        ids = prompt_ids(*loaded, prompt);
      } else {
        ids = int_vector(prompt, "prompt");
        if (ids.empty()) throw Error("the prompt is empty");
      }
      a.prompt_ids = join_ids(ids);
    }
  }
  return a;
}

// A model argument: a Model (its path and backend) or a checkpoint path.
std::pair<std::string, std::shared_ptr<Model>> model_arg(const py::object& model, const std::string& fn) {
  if (py::isinstance<Model>(model)) {
    auto m = model.cast<std::shared_ptr<Model>>();
    return {m->m.path, m};
  }
  if (py::isinstance<py::str>(model)) return {model.cast<std::string>(), nullptr};
  const py::object fspath = py::module_::import("os").attr("fspath");
  try {
    return {fspath(model).cast<std::string>(), nullptr};
  } catch (const py::error_already_set&) {
    throw Error(fn + ": model must be a Model (specdec.load_model) or a checkpoint path");
  }
}

py::object record(const py::object& model, const py::object& prompt, const std::string& out, const std::string& logits,
                  int logit_top_k, const py::object& backend_obj, const MethodArgs& m) {
  auto [path, loaded] = model_arg(model, "record");
  if (prompt.is_none()) throw Error("record: a prompt is needed (token ids or text)");
  const std::string backend = !backend_obj.is_none() ? backend_obj.cast<std::string>() : loaded ? loaded->m.backend : "reference";
  const DecodeArgs a = run_request(path, backend, prompt, loaded.get(), m);
  RecordResult r;
  {
    py::gil_scoped_release release;
    r = record_run(a, RecordOptions{out, logits, logit_top_k});
  }
  py::object summary = json_to_python(r.to_json());
  summary["output_tokens"] = int_array(r.output_tokens);
  return summary;
}

py::object validate(const py::object& model, const py::object& prompt, const py::object& trace, const std::string& against,
                    const py::object& backend_obj, const MethodArgs& m) {
  auto [path, loaded] = model_arg(model, "validate");
  const std::string backend = !backend_obj.is_none() ? backend_obj.cast<std::string>() : loaded ? loaded->m.backend : "reference";
  validation::ValidateRequest request;
  if (trace.is_none()) {
    if (prompt.is_none()) throw Error("validate: give a prompt (token ids or text), or a trace to compare with");
    request.run = run_request(path, backend, prompt, loaded.get(), m);
    request.against = against;
  } else {
    if (!prompt.is_none()) throw Error("validate: the prompt comes from the trace; do not give one with trace=");
    request.trace = py::module_::import("os").attr("fspath")(trace).cast<std::string>();
    // The method, sampling and length come from the trace; a drafter path overrides the
    // recorded one (the trace's path may be relative to another directory).
    request.run.model = path;
    request.run.backend = backend;
    if (py::isinstance<Drafter>(m.drafter)) {
      request.run.drafter = m.drafter.cast<std::shared_ptr<Drafter>>()->d.path;
    } else if (!m.drafter.is_none()) {
      request.run.drafter = py::module_::import("os").attr("fspath")(m.drafter).cast<std::string>();
    }
  }
  validation::ValidateOutcome v;
  {
    py::gil_scoped_release release;
    v = validation::run_validation(request);
  }
  py::object report = json_to_python(v.json);
  report["passed"] = py::bool_(v.report.passed);
  return report;
}

// ---- draft-free rules ----------------------------------------------------------------------------

// One proposal of a draft-free method (ngram, prompt-lookup, ngram-tree, suffix, suffix-tree) over
// a token history, by the proposer its registry entry makes for a run: what a decoding step after
// `history` drafts. Suffix methods first see `responses` as the run's earlier finished responses.
py::dict draft_free(const std::string& method, const py::object& history_obj, int k, const py::object& prompt_length_obj,
                    int max_length, int max_model_len, const py::object& responses_obj, const py::object& eos_obj) {
  const std::string fn = "draft_free";
  const std::vector<int32_t> history = int_vector(history_obj, fn + ": history");
  if (history.empty()) throw Error(fn + ": history must hold at least one token (the last one is the pending token)");
  MethodSpec spec = parse_method_text(method, fn + ": method");
  const MethodEntry& e = method_entry(spec.name, fn + ": method");
  if (e.drafter.kind != DrafterNeed::Kind::context) {
    std::string known;
    for (const MethodEntry& m : method_registry())
      if (m.drafter.kind == DrafterNeed::Kind::context) known += (known.empty() ? "" : ", ") + m.name;
    throw Error(fn + ": method '" + e.name + "' does not draft from the token history alone; the draft-free methods: " + known);
  }
  spec.k = k;
  const int L = static_cast<int>(history.size());
  const int prompt_length = prompt_length_obj.is_none() ? L - 1 : prompt_length_obj.cast<int>();
  if (prompt_length < 0 || prompt_length > L) {
    throw Error(fn + ": prompt_length must be in [0, len(history)] = [0, " + std::to_string(L) + "] (got " +
                std::to_string(prompt_length) + ")");
  }
  if (max_length < 0) throw Error(fn + ": max_length must be >= 0 (0: none; got " + std::to_string(max_length) + ")");
  if (max_model_len < 1) throw Error(fn + ": max_model_len must be >= 1 (got " + std::to_string(max_model_len) + ")");
  if (py::isinstance<py::str>(responses_obj) || !py::isinstance<py::sequence>(responses_obj)) {
    throw Error(fn + ": responses must be a list of token-id lists");
  }
  std::vector<std::vector<int32_t>> responses;
  const auto seqs = responses_obj.cast<py::sequence>();
  for (std::size_t i = 0; i < seqs.size(); ++i) responses.push_back(int_vector(seqs[i], fn + ": responses[" + std::to_string(i) + "]"));

  // A config the proposer reads: its context length, and a vocabulary holding every id given.
  int32_t top = 0;
  const auto check_ids = [&](const std::vector<int32_t>& ids, const std::string& name) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0) throw Error(fn + ": " + name + "[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is not a token id (< 0)");
      top = std::max(top, ids[i]);
    }
  };
  check_ids(history, "history");
  for (std::size_t i = 0; i < responses.size(); ++i) check_ids(responses[i], "responses[" + std::to_string(i) + "]");
  ModelConfig target;
  target.vocab_size = top == std::numeric_limits<int32_t>::max() ? top : top + 1;
  target.max_position_embeddings = max_model_len;
  const std::vector<int32_t> eos = int_vector(eos_obj, fn + ": eos_token_ids");
  check_ids(eos, "eos_token_ids");
  target.eos_token_ids.assign(eos.begin(), eos.end());
  target.vocab_size = std::max(target.vocab_size, top == std::numeric_limits<int32_t>::max() ? top : top + 1);

  ProposerInputs in;
  in.target = &target;
  in.capacity = max_model_len;
  if (!responses.empty()) {
    if (!e.make_run_state) throw Error(fn + ": responses= are a run's earlier responses, which only the suffix methods read ('" + e.name + "' keeps none)");
    in.run_state = e.make_run_state(spec.normalized());
    auto* run = dynamic_cast<SuffixResponses*>(in.run_state.get());
    if (!run) throw Error(fn + ": method '" + e.name + "' keeps no tree of earlier responses");
    for (const std::vector<int32_t>& r : responses) run->finish(run->start(), r);  // started and finished in order
  }
  std::unique_ptr<Proposer> proposer = make_method_proposer(spec, in);

  DraftContext ctx;
  ctx.sequence = &history;
  ctx.committed = L - 1;
  ctx.prompt_length = prompt_length;
  ctx.max_length = max_length;
  const Proposal p = proposer->propose(ctx);

  py::list sources;
  for (const DraftSource& s : p.sources) {
    py::dict d;
    d["origin"] = s.origin == DraftSource::Origin::responses ? "responses" : "context";
    d["position"] = s.position;
    d["match_length"] = s.match_length;
    d["request"] = s.request;
    sources.append(d);
  }
  py::dict out;
  out["tokens"] = int_array(p.tree.tokens);
  out["parents"] = int_array(p.tree.parents);
  out["sources"] = sources;
  return out;
}

}  // namespace

}  // namespace specdec::python

using namespace specdec;
using namespace specdec::python;

PYBIND11_MODULE(_core, mod) {
  mod.doc() = "specdec: the reference implementation of speculative decoding (models, drafters, decoding, traces)";
  mod.attr("__version__") = kVersion;

  static py::exception<Error> error(mod, "Error", PyExc_RuntimeError);
  error.doc() = "A user-facing failure of specdec: the message says what was wrong, where, and what was expected.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    } catch (const nlohmann::json::exception& e) {
      error(e.what());
    }
  });

  bind_acceptance_context(mod);
  bind_simulate(mod);
  bind_simulate_sweep(mod);
  bind_calibrate(mod);

  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(mod, "Tokenizer", "The checkpoint's tokenizer (tokenizer.json, tokenizer.model or vocab.json)")
      .def("encode", [](const Tokenizer& t, const std::string& s, bool add_special_tokens) { return int_array(t.t->encode(s, add_special_tokens)); },
           py::arg("text"), py::arg("add_special_tokens") = true,
           "Token ids of `text`, int32 (T,); with add_special_tokens also what the checkpoint puts before a prompt (BOS)")
      .def("decode",
           [](const Tokenizer& t, const py::object& ids, bool skip) { return utf8_text(t.t->decode(int_vector(ids, "ids"), skip)); },
           py::arg("ids"), py::arg("skip_special_tokens") = false, "Text of `ids` (bytes that are not valid UTF-8 become U+FFFD)")
      .def("decode_bytes",
           [](const Tokenizer& t, const py::object& ids, bool skip) { return py::bytes(t.t->decode(int_vector(ids, "ids"), skip)); },
           py::arg("ids"), py::arg("skip_special_tokens") = false, "The decoded UTF-8 bytes, exactly")
      .def("token_text", [](const Tokenizer& t, int32_t id) { return utf8_text(t.t->token_text(id)); }, py::arg("id"))
      .def("token_id", [](const Tokenizer& t, const std::string& token) { return t.t->token_id(token); }, py::arg("token"))
      .def_property_readonly("description", [](const Tokenizer& t) { return t.t->description(); })
      .def_property_readonly("bos_id", [](const Tokenizer& t) { return t.t->bos_id(); })
      .def_property_readonly("eos_ids", [](const Tokenizer& t) { return t.t->eos_ids(); })
      .def("__len__", [](const Tokenizer& t) { return t.t->size(); })
      .def("__repr__", [](const Tokenizer& t) { return "<specdec.Tokenizer " + t.t->description() + ">"; });

  py::class_<Cache, std::shared_ptr<Cache>>(mod, "Cache", "A KV cache of one sequence, made by Model.new_cache(capacity)")
      .def_property_readonly("length", [](const Cache& c) { return c.cache->length(); }, "slots in use")
      .def_property_readonly("capacity", [](const Cache& c) { return c.cache->capacity(); })
      .def("__len__", [](const Cache& c) { return c.cache->length(); })
      .def("truncate", [](Cache& c, int n) { c.cache->truncate(n); }, py::arg("length"),
           "Forget every slot at index >= length (roll back rejected tokens)")
      .def("gather", [](Cache& c, int start, const py::object& slots) {
             std::vector<int> s;
             for (int32_t v : int_vector(slots, "slots")) s.push_back(v);
             c.cache->gather(start, s);
           }, py::arg("start"), py::arg("slots"),
           "Move the listed slots, in order, to [start, start + len(slots)) and make that the length (keep a tree's accepted path)")
      .def("__repr__", [](const Cache& c) {
        return "<specdec.Cache " + std::to_string(c.cache->length()) + "/" + std::to_string(c.cache->capacity()) + ">";
      });

  py::class_<Model, std::shared_ptr<Model>>(mod, "Model", "A target checkpoint loaded by specdec.load_model")
      .def_property_readonly("path", [](const Model& m) { return m.m.path; })
      .def_property_readonly("backend", [](const Model& m) { return m.m.backend; })
      .def_property_readonly("fingerprint", [](const Model& m) { return m.m.fingerprint(); })
      .def_property_readonly("stored_dtype", [](const Model& m) { return m.m.stored_dtype; })
      .def_property_readonly("config", [](const Model& m) { return json_to_python(model_config_to_json(m.m.config)); },
                             "config.json as specdec reads it (a dict)")
      .def_property_readonly("vocab_size", [](const Model& m) { return m.m.config.vocab_size; })
      .def_property_readonly("num_layers", [](const Model& m) { return m.m.config.num_hidden_layers; })
      .def_property_readonly("hidden_size", [](const Model& m) { return m.m.config.hidden_size; })
      .def_property_readonly("max_position_embeddings", [](const Model& m) { return m.m.config.max_position_embeddings; })
      .def_property_readonly("tokenizer", [](const Model& m) -> py::object {
            if (!m.m.tokenizer) return py::none();
            return py::cast(std::make_shared<Tokenizer>(Tokenizer{m.m.tokenizer}));
          }, "the checkpoint's Tokenizer, or None when it has none")
      .def("new_cache", &new_cache, py::arg("capacity"), "An empty KV cache for up to `capacity` tokens")
      .def("forward", &forward, py::arg("tokens"), py::kw_only(), py::arg("positions") = py::none(), py::arg("mask") = py::none(),
           py::arg("cache") = nullptr, py::arg("hidden_states") = false, py::arg("logit_rows") = py::none(),
           "Appends `tokens` (T) to `cache` (a fresh one when None) and returns the float32 logits (R, V) of `logit_rows`\n"
           "(default: every row). positions: (T) absolute positions (default: cache length + t). mask: (T, C + T) bool,\n"
           "row t's allowed keys among the C cached and T new slots (default: causal). hidden_states=True returns\n"
           "(logits, hidden) with hidden (L+1, T, H) as Hugging Face's output_hidden_states ([L] after the final norm).")
      .def("__repr__", [](const Model& m) {
        const ModelConfig& c = m.m.config;
        return "<specdec.Model " + m.m.path + " (" + c.architecture + ", " + std::to_string(c.num_hidden_layers) + " layers, vocab " +
               std::to_string(c.vocab_size) + ", backend " + m.m.backend + ")>";
      });

  py::class_<Drafter, std::shared_ptr<Drafter>>(mod, "Drafter", "A draft LM, an EAGLE-1 / EAGLE-3 / P-EAGLE head, MTP modules or Medusa heads bound to a target")
      .def_property_readonly("path", [](const Drafter& d) { return d.d.path; })
      .def_property_readonly("method", [](const Drafter& d) { return d.method; }, "the method it drafts for: draft | eagle | eagle3 | peagle | mtp | medusa")
      .def_property_readonly("kind", [](const Drafter& d) { return d.kind; }, "draft_lm | eagle1 | eagle3 | peagle | mtp | medusa")
      .def_property_readonly("fingerprint", [](const Drafter& d) { return d.d.fingerprint; })
      .def_property_readonly("config", [](const Drafter& d) { return json_to_python(nlohmann::json::parse(d.d.config_json)); })
      .def_property_readonly("target", [](const Drafter& d) { return d.target; })
      .def_property_readonly("layout", [](const Drafter& d) -> py::object {
        if (d.d.medusa) return py::str(medusa_layout_name(d.d.medusa->config().layout));
        if (!d.d.head) return py::none();
        return py::str(d.d.head->config().layout);
      })
      .def_property_readonly("trained_depth", [](const Drafter& d) -> py::object {
        if (!d.d.head || d.d.head->config().kind != EagleKind::peagle) return py::none();
        return py::int_(d.d.head->config().trained_depth);
      })
      .def("propose", &propose, py::arg("sequence"), py::arg("hidden") = py::none(), py::kw_only(), py::arg("k") = 4,
           py::arg("tree") = "chain", py::arg("depth") = 7, py::arg("tree_top_k") = 10, py::arg("total_tokens") = 60,
           py::arg("sampling") = "greedy", py::arg("temperature") = 1.0, py::arg("top_k") = 0, py::arg("top_p") = 1.0,
           py::arg("seed") = 0, py::arg("prompt_length") = py::none(),
           "One proposal after `sequence` (prompt + emitted ids, the last one pending: the target has not processed it),\n"
           "as a decoding step of this drafter's method drafts it (k, tree, depth, tree_top_k, total_tokens and the\n"
           "sampling keywords as generate takes them; sequence id 0). hidden: float32 (L+1, T >= len(sequence) - 1, H), the\n"
           "target's states for sequence[:-1] as model.forward(..., hidden_states=True) returns them (EAGLE-family heads\n"
           "read them; a draft LM needs none). Returns {'tokens': int32 (N,), 'parents': int32 (N,) (-1 = after the pending\n"
           "token), 'draft_probs': float64 (N + 1, V) or None (deterministic drafts), 'drafter_forwards': int}.")
      .def("__repr__", [](const Drafter& d) { return "<specdec.Drafter " + d.d.path + " (" + d.kind + ")>"; });

  py::class_<Generation>(mod, "Generation", "What specdec.generate returns")
      .def_property_readonly("tokens", [](const Generation& g) { return int_array(g.tokens); },
                             "int32 (N,): the generated token ids (the prompt excluded)")
      .def_property_readonly("prompt_tokens", [](const Generation& g) { return int_array(g.prompt); }, "int32 (P,)")
      .def_property_readonly("step_records", [](const Generation& g) -> py::object {
            if (!g.has_steps) return py::none();
            return step_records_to_python(g.step_records, g.step_logits, g.vocab);
          }, "with record_steps=True: one dict per step (docs/python.md, \"Per-step records\"); else None")
      .def_readonly("stop_reason", &Generation::stop_reason, "max_tokens | eos")
      .def_property_readonly("text", [](const Generation& g) -> py::object {
        if (!g.text) return py::none();
        return utf8_text(*g.text);
      })
      .def_property_readonly("target_forwards", [](const Generation& g) { return g.stats.target_forwards; })
      .def_property_readonly("drafter_forwards", [](const Generation& g) { return g.stats.drafter_forwards; })
      .def_property_readonly("steps", [](const Generation& g) { return g.stats.steps; })
      .def_property_readonly("drafted_tokens", [](const Generation& g) { return g.stats.drafted_tokens; })
      .def_property_readonly("accepted_tokens", [](const Generation& g) { return g.stats.accepted_tokens; })
      .def_property_readonly("acceptance_length", &Generation::acceptance_length)
      .def_property_readonly("acceptance_by_depth", [](const Generation& g) { return double_array(g.stats.acceptance_by_depth()); },
                             "float64 (D,): conditional acceptance rate at draft depth 1..D")
      .def_property_readonly("accepted_per_step", [](const Generation& g) { return int_array(g.stats.accepted_per_step); },
                             "int32: accepted_per_step[n] = speculative steps that accepted n draft nodes")
      .def_property_readonly("tokens_per_target_forward", &Generation::tokens_per_target_forward)
      .def_property_readonly("prefill_ms", [](const Generation& g) { return g.stats.prefill_ns / 1e6; })
      .def_property_readonly("decode_ms", [](const Generation& g) { return g.stats.decode_ns / 1e6; })
      .def_property_readonly("mean_draft_depth", [](const Generation& g) { return g.stats.mean_draft_depth(); },
                             "mean depth drafted per speculative step (plain steps count 0)")
      .def_property_readonly("draft_depth_per_step", [](const Generation& g) { return int_array(g.stats.draft_depth_per_step); },
                             "int32: draft_depth_per_step[d] = steps that drafted d deep (0: a plain step)")
      .def_property_readonly("fallbacks", [](const Generation& g) { return json_to_python(fallbacks_json(g.fallbacks)); },
                             "drafters switched off: [{'step', 'drafter', 'reason', 'next'}]")
      .def_property_readonly("policy", [](const Generation& g) { return json_to_python(g.policy.to_json()); },
                             "the speculation policy: {'policy': name, ...parameters}")
      .def_property_readonly("stats", &Generation::stats_dict, "the statistics as `specdec generate --json` prints them")
      .def("__repr__", [](const Generation& g) {
        std::ostringstream s;
        s << "<specdec.Generation " << g.tokens.size() << " tokens, stop " << g.stop_reason << ", " << g.stats.target_forwards
          << " target forwards, AL " << g.acceptance_length() << ">";
        return s.str();
      });

  mod.def("load_model", &specdec::python::load_model, py::arg("path"), py::arg("backend") = "reference",
          "Loads a Hugging Face-style checkpoint (config.json + safetensors) on a backend: reference | cpu | cuda");
  mod.def("load_drafter", &specdec::python::load_drafter, py::arg("path"), py::arg("target"), py::arg("method") = py::none(),
          "Loads a draft LM, an EAGLE-1 / EAGLE-3 / P-EAGLE head, MTP modules or Medusa heads for `target` (kind detected, or method= draft | eagle | eagle3 | peagle | mtp | medusa)");
  mod.def("backends", [] {
    std::vector<std::string> out;
    for (const std::string& b : known_backends())
      if (backend_available(b)) out.push_back(b);
    return out;
  }, "The backends this build can run here");
  mod.def("set_num_threads", [](int n) { apply_threads(n); }, py::arg("n"), "Worker threads (results do not depend on it)");

  // The method and sampling keywords shared by generate, record and validate.
#define SPECDEC_METHOD_PARAMS                                                                                   \
  const py::object &method, const py::object &drafter, int k, const std::string &tree, int depth, int tree_top_k, \
      int total_tokens, bool force_depth, const std::string &sampling, double temperature, int top_k, double top_p, \
      uint64_t seed, int max_new_tokens, bool ignore_eos, const std::string &policy, double draft_budget_ms
#define SPECDEC_METHOD_VALUES \
  MethodArgs { method, drafter, k, depth, tree_top_k, total_tokens, tree, force_depth, sampling, temperature, top_k, top_p, seed, max_new_tokens, ignore_eos, policy, draft_budget_ms }
#define SPECDEC_METHOD_ARGS(max_new)                                                                                         \
  py::arg("method") = py::none(), py::arg("drafter") = py::none(), py::arg("k") = 4, py::arg("tree") = "chain",              \
      py::arg("depth") = 7, py::arg("tree_top_k") = 10, py::arg("total_tokens") = 60, py::arg("force_depth") = false,        \
      py::arg("sampling") = "greedy", py::arg("temperature") = 1.0, py::arg("top_k") = 0, py::arg("top_p") = 1.0,            \
      py::arg("seed") = 0, py::arg("max_new_tokens") = max_new, py::arg("ignore_eos") = false,                     \
      py::arg("policy") = "fixed", py::arg("draft_budget_ms") = 0.0

  static const std::string generate_doc =
      std::string("Decodes `prompt` (ids or text) with a method: sequential | draft | eagle | eagle3 | peagle (default: the\n"
                  "drafter's method, else sequential), as `specdec generate` does; policy= a speculation policy as --policy\n"
                  "takes it (e.g. 'hf-heuristic,start=3'; `specdec policies`), draft_budget_ms= as --draft-budget-ms. Returns a\n"
                  "Generation (tokens: int32 array; mean_draft_depth, draft_depth_per_step and fallbacks).\n"
                  "record_steps=True keeps every step in memory as Generation.step_records (a list of dicts of numpy arrays, the\n"
                  "fields of a trace's /steps); step_logits=True adds each step's target logits and draft distributions.\n"
                  "acceptance= a Python acceptance rule in place of the built-in one:\n\n") +
      ACCEPTANCE_RULE_DOC;
  mod.def("generate",
          [](const std::shared_ptr<Model>& model, const py::object& prompt, SPECDEC_METHOD_PARAMS, const py::object& acceptance,
             bool record_steps, bool step_logits) {
            return generate(model, prompt, SPECDEC_METHOD_VALUES, GenerateExtras{acceptance, record_steps, step_logits});
          },
          py::arg("model"), py::arg("prompt"), py::kw_only(), SPECDEC_METHOD_ARGS(32), py::arg("acceptance") = py::none(),
          py::arg("record_steps") = false, py::arg("step_logits") = false, generate_doc.c_str());
  mod.def("generate_batch",
          [](const std::shared_ptr<Model>& model, const py::object& prompts, int64_t concurrency, const py::object& rate,
             SPECDEC_METHOD_PARAMS) { return generate_batch(model, prompts, concurrency, rate, SPECDEC_METHOD_VALUES); },
          py::arg("model"), py::arg("prompts"), py::kw_only(), py::arg("concurrency") = 8, py::arg("rate") = py::none(),
          SPECDEC_METHOD_ARGS(32),
          "Decodes a list of prompts (each ids or text) as one batched run, `concurrency` sequences at once (continuous\n"
          "batching), as `specdec batch` does; rate= requests/s of Poisson arrivals drawn from seed (None: all at once).\n"
          "Request i draws with sequence id i; each decodes exactly as alone. Returns {'requests': [dict per request:\n"
          "output_tokens, output_text, stop_reason, acceptance, timing: ttft_s, tpot_s, queue_s, ...], 'summary': dict}.");
  mod.def("record",
          [](const py::object& model, const py::object& prompt, const std::filesystem::path& out, const std::string& logits,
             int logit_top_k, const py::object& backend, SPECDEC_METHOD_PARAMS) {
            return record(model, prompt, out.string(), logits, logit_top_k, backend, SPECDEC_METHOD_VALUES);
          },
          py::arg("model"), py::arg("prompt"), py::kw_only(), py::arg("out"), py::arg("logits") = "topk", py::arg("logit_top_k") = 20,
          py::arg("backend") = py::none(), SPECDEC_METHOD_ARGS(32),
          "Decodes and writes every step to an HDF5 trace `out`, as `specdec record` does; returns its summary as a dict.");
  mod.def("validate",
          [](const py::object& model, const py::object& prompt, const py::object& trace, const std::string& against,
             const py::object& backend, SPECDEC_METHOD_PARAMS) {
            return validate(model, prompt, trace, against, backend, SPECDEC_METHOD_VALUES);
          },
          py::arg("model"), py::arg("prompt") = py::none(), py::kw_only(), py::arg("trace") = py::none(),
          py::arg("against") = "reference", py::arg("backend") = py::none(), SPECDEC_METHOD_ARGS(32),
          "Compares a backend with the reference (against=) or with a recorded trace (trace=), as `specdec validate` does;\n"
          "returns its report as a dict (validation::to_json, as --json prints it) with passed = True | False added.");
  mod.def("draft_free", &specdec::python::draft_free, py::arg("method"), py::arg("history"), py::kw_only(), py::arg("k") = 4,
          py::arg("prompt_length") = py::none(), py::arg("max_length") = 0, py::arg("max_model_len") = 2048,
          py::arg("responses") = py::list(), py::arg("eos_token_ids") = py::list(),
          "One proposal of a draft-free method (ngram | prompt-lookup | ngram-tree | suffix | suffix-tree, with parameters as\n"
          "--method takes them, e.g. 'ngram,n_min=2,n_max=3') after `history` (L ids, the last one pending), as a decoding\n"
          "step drafts it: k = K; prompt_length = the prompt's length in history (default L - 1); max_length = the length\n"
          "the sequence may reach (prompt-lookup; 0: none); max_model_len = the model's context; responses = earlier\n"
          "finished responses (lists of ids), the run's shared tree of the suffix methods, oldest first; eos_token_ids =\n"
          "the model's EOS ids (prompt-lookup cuts its drafts before one, as transformers does). Returns\n"
          "{'tokens': (N) ids, 'parents': (N) node index or -1 (after the pending token), 'sources': (N) dicts\n"
          "{'origin': 'context' | 'responses', 'position', 'match_length', 'request'}}.");
#undef SPECDEC_METHOD_PARAMS
#undef SPECDEC_METHOD_VALUES
#undef SPECDEC_METHOD_ARGS
}
