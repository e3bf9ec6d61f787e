#include "experiments/sweep/sweep_runner.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "runtime/batch_job.hpp"
#include "runtime/method_runner.hpp"
#include "runtime/backend.hpp"
#include "experiments/sweep/dir_lock.hpp"
#include "experiments/sweep/progress.hpp"
#include "experiments/sweep/results_store.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequence_decoder.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/registry.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/fingerprint.hpp"
#include "reference/methods/draft_schedule.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sweep {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Wall time spent drafting and verifying, and the drafts accepted per step (what a trace of the
// run records, and what the simulator replays).
struct RunObserver final : DecodeObserver {
  int64_t draft_ns = 0, verify_ns = 0;
  std::vector<int> accepted;
  int max_depth = 0;
  void on_sequential_step(const SequentialStep& s) override {
    if (s.index > 0) verify_ns += s.step_ns;  // step 0's forward is the prefill
  }
  void on_speculative_step(const SpeculativeStep& s) override {
    draft_ns += s.draft_ns;
    verify_ns += s.verify_ns;
    accepted.push_back(static_cast<int>(s.verify->accepted_nodes.size()));
    for (int n = 0; n < s.tree->size(); ++n) max_depth = std::max(max_depth, s.tree->depth(n));
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

DecodeArgs decode_args(const SweepSpec& spec, const Cell& c, const Prompt& p) {
  DecodeArgs a;
  a.model = spec.model;
  a.prompt = p.text;
  a.method = c.method;
  a.policy = c.policy;
  a.drafter = c.drafter;
  a.sampling = c.sampling;
  a.temperature = c.temperature;
  a.top_k = c.top_k;
  a.top_p = c.top_p;
  a.seed = static_cast<uint64_t>(c.seed < 0 ? p.index : c.seed);
  a.max_new_tokens = spec.max_new_tokens;
  a.ignore_eos = spec.ignore_eos;
  a.backend = c.backend;
  return a;
}

// The simulator's prediction for this run: its accepted lengths replayed on the spec's hardware
// and model, with the run's own method and draft shape.
json predict_run(const SweepSpec& spec, const sim::SpecLibrary& lib, const Cell& c, const RunObserver& obs,
                 int prompt_tokens, int generated) {
  sim::Scenario s;
  s.target = lib.model(spec.predict.model);
  s.hardware = lib.hardware(spec.predict.hardware);
  s.engine = lib.engine_for(spec.predict.engine, s.hardware);
  s.workload.batch = spec.predict.batch;
  s.workload.prompt_len = prompt_tokens;
  s.workload.output_len = std::max(1, generated);
  const MethodSpec& m = c.method;
  s.plan.method = sim::parse_method(m.name, "method");
  if (s.plan.method != sim::Method::sequential) {
    if (!sim::draft_free(s.plan.method)) s.drafter = lib.drafter(spec.predict.drafters[m.name].get<std::string>(), s.target);
    if (obs.accepted.empty()) return nullptr;  // no step to replay
    const int recorded = std::max({obs.max_depth, 1, sim::draft_free(s.plan.method) ? m.k : 0});  // draft-free: K caps
    s.acceptance = sim::replay_acceptance(obs.accepted, recorded);
    s.plan.k = m.tree == "chain" ? m.k : recorded;
    if (m.tree == "dynamic") {
      // The plan counts draft levels; the method spec counts expansions after the first.
      sim::set_dynamic_tree(s.plan, *s.acceptance, m.total_tokens, step_shape(m).max_depth(), m.tree_top_k);
    } else if (m.tree != "chain") {
      s.plan.tree = make_tree_shape(tree_choices_from_spec(m.tree), m.tree);
    }
  }
  const sim::Prediction p = sim::predict(s);
  return {{"hardware", s.hardware.name}, {"engine", s.engine.name}, {"model", s.target.name}, {"speedup", p.speedup},
          {"tokens_per_step", p.tokens_per_step}, {"tpot_ms", p.tpot_s * 1e3}};
}

std::string target_key(const std::string& backend) { return "target|" + backend; }
std::string drafter_key(const std::string& method, const std::string& drafter, const std::string& backend) {
  return "drafter|" + method + "|" + drafter + "|" + backend;
}

// The weights each checkpoint had when rows were computed: target_key / drafter_key -> the
// fingerprint of its weights. Resume (rows already in --out against the checkpoints loaded now)
// and merge (shard against shard) compare these maps with first_conflict, so both refuse the same
// thing.
using Fingerprints = std::map<std::string, std::string>;

// What a key names, for messages: "the target model[ on backend B]", "drafter D of method M[ on backend B]".
std::string checkpoint_of(const std::string& key) {
  std::vector<std::string> part;
  for (size_t start = 0;;) {
    const size_t bar = key.find('|', start);
    part.push_back(key.substr(start, bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  const auto on = [](const std::string& backend) { return backend == "reference" ? std::string() : " on backend " + backend; };
  if (part.size() == 2) return "the target model" + on(part[1]);
  if (part.size() == 4) return "drafter " + part[2] + " of method " + part[1] + on(part[3]);
  return key;
}

// The fingerprints `rows` (of results directory `dir`) record. Rows of one directory that disagree
// were not written by specdec sweep, which refuses to mix them.
Fingerprints row_fingerprints(const std::vector<json>& rows, const fs::path& dir) {
  Fingerprints out;
  const auto add = [&](const std::string& key, const json& fingerprint) {
    if (!fingerprint.is_string()) throw Error((dir / "rows.jsonl").string() + ": a row's fingerprint of " + checkpoint_of(key) + " is not a string");
    const auto [it, added] = out.emplace(key, fingerprint.get<std::string>());
    if (!added && it->second != fingerprint.get<std::string>()) {
      throw Error((dir / "rows.jsonl").string() + ": its rows were computed with two different weights of " + checkpoint_of(key) + " (" +
                  it->second + " and " + fingerprint.get<std::string>() + "); the file was changed by something else than specdec sweep");
    }
  };
  for (const json& r : rows) {
    const std::string backend = r.value("backend", std::string("reference"));
    if (r.contains("model_fingerprint")) add(target_key(backend), r["model_fingerprint"]);
    if (r.contains("drafter_fingerprint")) {
      add(drafter_key(r.value("method", std::string()), r.value("drafter", std::string()), backend), r["drafter_fingerprint"]);
    }
  }
  return out;
}

// A checkpoint both maps record, with different weights.
struct FingerprintConflict {
  std::string key, earlier, later;
};
std::optional<FingerprintConflict> first_conflict(const Fingerprints& earlier, const Fingerprints& later) {
  for (const auto& [key, fingerprint] : later) {
    const auto it = earlier.find(key);
    if (it != earlier.end() && it->second != fingerprint) return FingerprintConflict{key, it->second, fingerprint};
  }
  return std::nullopt;
}

// Models and drafters are loaded once per backend and reused by every run. A checkpoint whose
// weights differ from those the results directory's rows were computed with (expect()) is refused.
class ModelCache {
 public:
  ModelCache(std::string model, fs::path out) : model_(std::move(model)), out_(std::move(out)) {}
  // The fingerprints of the rows already in --out: checkpoints loaded now and later must match them.
  void expect(Fingerprints known) {
    known_ = std::move(known);
    for (const auto& [backend, m] : targets_) check(target_key(backend), model_, m.fingerprint());
    for (const auto& [k, d] : drafters_) check(drafter_key(std::get<0>(k), std::get<1>(k), std::get<2>(k)), d.path, d.fingerprint);
  }
  const LoadedModel& target(const std::string& backend) {
    auto it = targets_.find(backend);
    if (it == targets_.end()) {
      it = targets_.emplace(backend, load_model(model_, backend)).first;
      check(target_key(backend), model_, it->second.fingerprint());
    }
    return it->second;
  }
  const LoadedDrafter* drafter(const DecodeArgs& a) {
    if (a.drafter.empty()) return nullptr;  // a method without a drafter (the spec checked which need one)
    const auto key = std::make_tuple(a.method.name, a.drafter, a.backend);
    auto it = drafters_.find(key);
    if (it == drafters_.end()) {
      it = drafters_.emplace(key, *load_drafter(a, target(a.backend))).first;
      check(drafter_key(a.method.name, a.drafter, a.backend), a.drafter, it->second.fingerprint);
    }
    return &it->second;
  }

 private:
  void check(const std::string& key, const std::string& path, const std::string& fingerprint) const {
    if (const auto c = first_conflict(known_, {{key, fingerprint}})) {
      throw Error(path + ": the checkpoint changed since the rows in " + out_.string() + " were computed (" + c->earlier +
                  " then, " + c->later + " now); results of two different models are not mixed: give a new --out directory");
    }
  }

  std::string model_;
  Fingerprints known_;
  fs::path out_;
  std::map<std::string, LoadedModel> targets_;
  std::map<std::tuple<std::string, std::string, std::string>, LoadedDrafter> drafters_;
};

// The row of `run` without its timing: the configuration, the prompt, the output's hash and the
// acceptance statistics of `first` (the first repeat), and the prediction from its steps.
json result_row(const SweepSpec& spec, int64_t run, const DecodeArgs& a, std::size_t prompt_tokens,
                const GenerationResult& first, const RunObserver& first_obs, const LoadedModel& target,
                const LoadedDrafter* drafter, const sim::SpecLibrary* lib) {
  const Cell& c = spec.cell_of(run);
  const Prompt& p = spec.prompt_of(run);
  const GenerationStats& st = first.stats;
  Fnv1a64 h;
  h.update(first.tokens.data(), first.tokens.size() * sizeof(int32_t));
  json row = {{"run", run},
              {"cell", run / static_cast<int64_t>(spec.prompts.size())},
              {"label", c.label()},
              {"prompt_set", p.set},
              {"prompt_id", p.id},
              {"category", p.category},
              {"seed_used", a.seed},
              {"prompt_tokens", prompt_tokens},
              {"generated_tokens", first.tokens.size()},
              {"stop_reason", first.stop_reason},
              {"output_fnv1a64", h.str()},
              {"target_forwards", st.target_forwards},
              {"drafter_forwards", st.drafter_forwards},
              {"steps", st.steps},
              {"drafted_tokens", st.drafted_tokens},
              {"accepted_tokens", st.accepted_tokens},
              {"emitted_in_steps", st.emitted_in_steps},
              {"acceptance_length", st.steps ? st.acceptance_length() : 1.0},
              {"acceptance_by_depth", st.acceptance_by_depth()},
              {"depth_attempts", st.depth_attempts},
              {"depth_accepts", st.depth_accepts},
              {"tokens_per_target_forward", static_cast<double>(first.tokens.size()) / st.target_forwards},
              {"mean_draft_depth", st.mean_draft_depth()},
              {"draft_depth_per_step", st.draft_depth_per_step}};
  const json config = c.to_json();
  for (const auto& [k, v] : config.items()) row[k] = v;
  row["policy"] = c.policy.label();  // the label ("fixed", "trtllm,window=8,..."); the manifest's cell holds the object
  row["model_fingerprint"] = target.fingerprint();
  if (drafter) row["drafter_fingerprint"] = drafter->fingerprint;
  if (lib) {
    try {
      const json pred = predict_run(spec, *lib, c, first_obs, static_cast<int>(prompt_tokens), static_cast<int>(first.tokens.size()));
      if (!pred.is_null()) row["predicted"] = pred;
    } catch (const std::exception& e) {
      throw Error(spec.source + ": predict for " + c.label() + ": " + e.what());
    }
  }
  return row;
}

// Wall times of one run over the repeats (medians are reported).
struct RunTimes {
  std::vector<double> draft_ms, verify_ms, decode_ms, prefill_ms, tps;
  void add(const RunObserver& obs, const GenerationResult& r) {
    draft_ms.push_back(obs.draft_ns / 1e6);
    verify_ms.push_back(obs.verify_ns / 1e6);
    decode_ms.push_back(r.stats.decode_ns / 1e6);
    prefill_ms.push_back(r.stats.prefill_ns / 1e6);
    tps.push_back(r.decode_tokens_per_second());
  }
  json to_json(int repeats) const {
    return {{"repeats", repeats},
            {"draft_ms", median(draft_ms)},
            {"verify_ms", median(verify_ms)},
            {"decode_ms", median(decode_ms)},
            {"prefill_ms", median(prefill_ms)},
            {"tokens_per_s", median(tps)}};
  }
};

std::string repeat_mismatch(const SweepSpec& spec, int64_t run, int rep) {
  return "run " + std::to_string(run) + " (" + spec.cell_of(run).label() + ", prompt " + spec.prompt_of(run).id +
         ") gave different tokens on repeat " + std::to_string(rep + 1) + "; decoding must be deterministic";
}

json run_one(const SweepSpec& spec, int64_t run, ModelCache& cache, const sim::SpecLibrary* lib) {
  const Cell& c = spec.cell_of(run);
  const Prompt& p = spec.prompt_of(run);
  const DecodeArgs a = decode_args(spec, c, p);
  const LoadedModel& target = cache.target(a.backend);
  const LoadedDrafter* drafter = cache.drafter(a);
  const std::vector<int32_t> prompt = prompt_tokens(a, target);
  const SamplingParams sampling = sampling_params(a);
  const GenerationOptions options = generation_options(a);

  GenerationResult first;
  RunObserver first_obs;
  RunTimes times;
  for (int rep = 0; rep < spec.repeats; ++rep) {
    RunObserver obs;
    GenerationResult r = run_method(a, target, prompt, sampling, options, &obs, drafter);
    if (rep == 0) {
      first = r;
      first_obs = obs;
    } else if (r.tokens != first.tokens) {
      throw Error(repeat_mismatch(spec, run, rep));
    }
    times.add(obs, r);
  }
  json row = result_row(spec, run, a, prompt.size(), first, first_obs, target, drafter, lib);
  row["timing"] = times.to_json(spec.repeats);
  return row;
}

// The runs of a batched cell (all its prompts, or those a resumed sweep still lacks) decoded as one
// batched run of the cell's concurrency, `repeats` times. Each request keeps sequence id 0, so it
// draws what the cell's prompt draws at concurrency 1 and its row's results are those of the
// unbatched cell; only the timing differs: the request's TTFT, TPOT and queueing delay, and the
// batch it ran in (first run, requests, generated tokens, wall time, throughput), medians over the
// repeats.
std::vector<json> run_batched_cell(const SweepSpec& spec, const std::vector<int64_t>& runs, ModelCache& cache,
                                   const sim::SpecLibrary* lib) {
  const Cell& c = spec.cell_of(runs.front());
  std::vector<DecodeArgs> args;
  for (const int64_t run : runs) args.push_back(decode_args(spec, c, spec.prompt_of(run)));
  const DecodeArgs& method = args.front();  // the cell's method and drafter; seeds differ per prompt
  const LoadedModel& target = cache.target(method.backend);
  const LoadedDrafter* drafter = cache.drafter(method);
  std::vector<BatchRequest> requests;
  for (const DecodeArgs& a : args) {
    requests.push_back(batch_requests(a, {prompt_tokens(a, target)}, /*sequence_per_request=*/false).front());
  }
  const std::size_t n = runs.size();
  std::vector<GenerationResult> first(n);
  std::vector<RunObserver> first_obs(n);
  std::vector<RunTimes> times(n);
  std::vector<std::vector<double>> ttft(n), tpot(n), queue(n);
  std::vector<double> wall, throughput;
  std::size_t generated = 0;
  for (int rep = 0; rep < spec.repeats; ++rep) {
    std::vector<RunObserver> obs(n);
    BatchRunOptions o;
    o.concurrency = c.concurrency;
    o.observer_for = [&obs](std::size_t i) -> DecodeObserver* { return &obs[i]; };
    const BatchResult b = run_batched(method, target, requests, o, drafter);
    for (std::size_t i = 0; i < n; ++i) {
      const RequestResult& r = b.requests[i];
      if (rep == 0) {
        first[i] = r.generation;
        first_obs[i] = obs[i];
        generated += r.generation.tokens.size();
      } else if (r.generation.tokens != first[i].tokens) {
        throw Error(repeat_mismatch(spec, runs[i], rep));
      }
      times[i].add(obs[i], r.generation);
      ttft[i].push_back(r.ttft_s());
      tpot[i].push_back(r.tpot_s());
      queue[i].push_back(r.queue_s());
    }
    wall.push_back(b.wall_s);
    throughput.push_back(b.throughput());
  }
  const json batch = {{"first_run", runs.front()},
                      {"requests", n},
                      {"generated_tokens", generated},
                      {"wall_s", median(wall)},
                      {"throughput_tok_s", median(throughput)}};
  std::vector<json> rows;
  for (std::size_t i = 0; i < n; ++i) {
    json row = result_row(spec, runs[i], args[i], requests[i].prompt.size(), first[i], first_obs[i], target, drafter, lib);
    json timing = times[i].to_json(spec.repeats);
    timing["ttft_s"] = median(ttft[i]);
    if (first[i].tokens.size() >= 2) timing["tpot_s"] = median(tpot[i]);  // TPOT needs two tokens
    timing["queue_s"] = median(queue[i]);
    timing["batch"] = batch;
    row["timing"] = timing;
    rows.push_back(std::move(row));
  }
  return rows;
}

// Whether this shard runs `run`, from the manifest (a batched cell goes whole to one shard).
bool owns(const Shard& shard, const json& manifest, int64_t run) {
  const int64_t prompts = static_cast<int64_t>(manifest["prompts"].size());
  const json& cell = manifest["cells"][static_cast<std::size_t>(run / prompts)];
  return shard_owns(shard, run, prompts, cell.value("concurrency", 1) > 1);
}

// The runs a directory's rows cover, checked against its manifest.
std::set<int64_t> done_runs(const std::vector<json>& rows, const json& manifest, const fs::path& dir) {
  std::set<int64_t> done;
  const int64_t runs = manifest["runs"].get<int64_t>();
  const int64_t prompts = static_cast<int64_t>(manifest["prompts"].size());
  for (const json& r : rows) {
    const int64_t run = r["run"].get<int64_t>();  // read_rows checked the types of run, cell and prompt_id
    if (run < 0 || run >= runs || r["cell"].get<int64_t>() != run / prompts ||
        r["prompt_id"].get<std::string>() != manifest["prompts"][run % prompts]["id"].get<std::string>()) {
      throw Error((dir / "rows.jsonl").string() + ": row of run " + std::to_string(run) + " does not belong to this sweep's manifest");
    }
    if (!done.insert(run).second) throw Error((dir / "rows.jsonl").string() + ": run " + std::to_string(run) + " appears twice");
  }
  return done;
}

std::vector<json> sorted_by_run(std::vector<json> rows) {
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return a["run"].get<int64_t>() < b["run"].get<int64_t>(); });
  return rows;
}

// What can be checked before anything is loaded, so that a typo fails now rather than hours in:
// the target and drafter directories, the backends and the simulator's specs.
void check_before_running(const SweepSpec& spec, const std::optional<sim::SpecLibrary>& lib) {
  if (!fs::is_directory(spec.model)) throw Error(spec.source + ": model '" + spec.model + "' is not a directory");
  std::set<std::string> checked;
  for (const Cell& c : spec.cells) {
    check_backend(c.backend, spec.source + ": backend of " + c.label());
    if (!c.drafter.empty() && checked.insert(c.drafter).second && !fs::exists(c.drafter)) {
      throw Error(spec.source + ": drafter '" + c.drafter + "' of " + c.label() + " does not exist");
    }
  }
  if (lib) {
    lib->hardware(spec.predict.hardware);
    lib->model(spec.predict.model);
    for (const auto& [method, drafter] : spec.predict.drafters.items()) lib->drafter_spec(drafter.get<std::string>());
  }
}

// f(), its errors prefixed with `where`.
template <class F>
auto named(const std::string& where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw Error(where + ": " + e.what());
  }
}

// Every cell as its runs will meet it, before the first run and before --out is touched, so that
// no error waits behind hours of earlier rows: the target (per backend) and the drafters load, each
// distinct method shape builds its proposer (K, depth and top-k limits, tree files and their ranks
// against the drafter's vocabulary, method parameters, the head's trained depth), the policy and
// sampling settings are made, and every prompt is tokenized: the longest, with max_new_tokens and
// the cell's draft headroom, must fit the model's context. Errors name the spec and the cell.
void check_every_cell(const SweepSpec& spec, ModelCache& cache) {
  const LoadedModel* first = nullptr;
  try {
    first = &cache.target(spec.cells.front().backend);
  } catch (const std::exception& e) {
    throw Error(spec.source + ": model '" + spec.model + "': " + e.what());
  }
  // The prompts as the runs tokenize them (the checkpoint's tokenizer, whatever the backend).
  std::size_t longest = 0;
  const Prompt* longest_prompt = &spec.prompts.front();
  for (const Prompt& p : spec.prompts) {
    std::size_t n = 0;
    try {
      n = prompt_tokens(decode_args(spec, spec.cells.front(), p), *first).size();
    } catch (const std::exception& e) {
      throw Error(spec.source + ": prompt " + p.set + "/" + p.id + ": " + e.what());
    }
    if (n > longest) longest = n, longest_prompt = &p;
  }
  std::set<std::string> shapes;  // method shape, drafter and backend: one proposer each
  for (std::size_t i = 0; i < spec.cells.size(); ++i) {
    const Cell& c = spec.cells[i];
    const std::string cell = spec.source + ": cell " + std::to_string(i) + " (" + c.label() + ")";
    const std::string at_prompt = cell + ", prompt " + longest_prompt->set + "/" + longest_prompt->id + " (" +
                                  std::to_string(longest) + " tokens, the longest)";
    const DecodeArgs a = decode_args(spec, c, *longest_prompt);
    named(cell, [&] {
      check_method_args(a);
      sampling_params(a);
      make_policy(a.policy);
      check_concurrency(c.concurrency, "concurrency");
    });
    if (!shapes.insert(a.method.to_json().dump() + "|" + a.drafter + "|" + a.backend).second) continue;
    const LoadedModel& target = named(cell, [&]() -> const LoadedModel& { return cache.target(a.backend); });
    // The positions a run needs: the longest prompt, max_new_tokens, and the draft slots below.
    const int capacity =
        named(at_prompt, [&] { return checked_capacity(longest, a.max_new_tokens, 1, target.config.max_position_embeddings); });
    std::optional<LoadedDrafter> context_drafter;  // draft-free methods: what run_method makes per run
    std::unique_ptr<Proposer> proposer;            // (destroyed before what it drafts from)
    named(cell, [&] {
      const LoadedDrafter* drafter = cache.drafter(a);
      if (!method_entry(a.method.name).make_proposer) return;
      if (!drafter) drafter = &context_drafter.emplace(*load_drafter(a, target));
      proposer = make_proposer(a, target, drafter, capacity);
    });
    named(at_prompt, [&] { return decoder_cache_capacity(target.forward_model(), proposer.get(), longest, generation_options(a)); });
  }
}

}  // namespace

int run_sweep_spec(const SweepSpec& spec, const SweepRunOptions& o, std::ostream& log, bool log_is_terminal) {
  std::optional<sim::SpecLibrary> lib;
  if (spec.predict_enabled) lib.emplace();
  check_before_running(spec, lib);
  apply_threads(spec.threads);
  ModelCache cache(spec.model, o.out);
  check_every_cell(spec, cache);  // nothing is written to --out when a cell cannot run
  const json manifest = make_manifest(spec, o.shard);
  // One writer per results directory (dir_lock.hpp), held until the summary is written.
  check_results_dir(o.out);  // not even a lock file goes into a directory of other things
  const ResultsDirLock lock(o.out, "sweep");
  open_results_dir(o.out, manifest);
  const std::vector<json> existing = read_rows(o.out, /*repair=*/true);
  const std::set<int64_t> done = done_runs(existing, manifest, o.out);
  cache.expect(row_fingerprints(existing, o.out));  // the checkpoints the existing rows used
  std::vector<int64_t> todo;
  int64_t owned = 0;
  for (int64_t r = 0; r < spec.run_count(); ++r) {
    if (!owns(o.shard, manifest, r)) continue;
    ++owned;
    if (!done.count(r)) todo.push_back(r);
  }
  RowWriter writer(o.out);
  Progress progress(log, log_is_terminal, static_cast<int64_t>(todo.size()), owned - static_cast<int64_t>(todo.size()),
                           o.progress_interval_s);
  const int64_t prompts = static_cast<int64_t>(spec.prompts.size());
  for (std::size_t i = 0; i < todo.size();) {
    const Cell& c = spec.cell_of(todo[i]);
    if (c.concurrency == 1) {
      progress.start_run(c.label() + " " + spec.prompt_of(todo[i]).id);
      writer.append(run_one(spec, todo[i], cache, lib ? &*lib : nullptr));
      progress.finish_run();
      ++i;
      continue;
    }
    // A batched cell: its runs still to do are one batched run; its rows are appended together.
    const int64_t cell = todo[i] / prompts;
    std::vector<int64_t> runs;
    for (; i < todo.size() && todo[i] / prompts == cell; ++i) runs.push_back(todo[i]);
    progress.start_run(c.label() + " (" + std::to_string(runs.size()) + " prompts)");
    for (const json& row : run_batched_cell(spec, runs, cache, lib ? &*lib : nullptr)) {
      writer.append(row);
      progress.finish_run();
    }
  }
  progress.done();
  const std::vector<json> rows = sorted_by_run(read_rows(o.out, false));
  const json summary = write_summary(o.out, manifest, rows);
  log << "sweep: " << rows.size() << " of " << owned << " runs" << (o.shard.count > 1 ? " of shard " + o.shard.text() : "")
         << " in " << (o.out / "rows.jsonl").string() << "; summary in " << (o.out / "summary.json").string() << "\n";
  if (const std::string w = small_sample_warning(summary); !w.empty()) log << "sweep: warning: " << w << "\n";
  return 0;
}

void merge_sweep_shards(const std::vector<fs::path>& shards, const fs::path& out, std::ostream& log) {
  if (shards.empty()) throw Error("merge: no shard directories given");
  json base;
  std::map<int, fs::path> seen;
  int count = 0;
  std::vector<json> all;
  Fingerprints weights;                    // of the shards read so far
  std::map<std::string, fs::path> weighed;  // the shard each of those came from
  for (const fs::path& d : shards) {
    check_not_being_written(d, "merge");  // a shard still running is not complete
    json m = read_manifest(d);
    const Shard sh = parse_shard(m["shard"].get<std::string>());
    json general = m;
    general.erase("shard");
    if (base.is_null()) {
      base = general;
      count = sh.count;
    } else if (general != base) {
      throw Error("merge: " + d.string() + " holds a different sweep than " + shards.front().string() + " (their manifests differ)");
    } else if (sh.count != count) {
      throw Error("merge: " + d.string() + " is shard " + sh.text() + " but " + shards.front().string() + " has " + std::to_string(count) + " shards");
    }
    if (seen.count(sh.index)) throw Error("merge: shard " + sh.text() + " is given twice (" + seen[sh.index].string() + " and " + d.string() + ")");
    seen[sh.index] = d;
    const std::vector<json> rows = read_rows(d, false);
    const std::set<int64_t> done = done_runs(rows, m, d);
    for (int64_t r = 0; r < m["runs"].get<int64_t>(); ++r) {
      if (owns(sh, m, r) && !done.count(r)) {
        throw Error("merge: shard " + sh.text() + " in " + d.string() + " is incomplete (run " + std::to_string(r) + " missing); resume it first");
      }
    }
    for (const json& r : rows)
      if (!owns(sh, m, r["run"].get<int64_t>())) throw Error("merge: " + d.string() + " holds run " + r["run"].dump() + " of another shard");
    // Equal manifests name the same checkpoint paths; what was at a path may have changed between
    // shards, which resume refuses within one directory and merge refuses across them.
    const Fingerprints own = row_fingerprints(rows, d);
    if (const auto c = first_conflict(weights, own)) {
      throw Error("merge: " + weighed[c->key].string() + " and " + d.string() + " were computed with different weights of " +
                  checkpoint_of(c->key) + " (" + c->earlier + " in " + weighed[c->key].string() + ", " + c->later + " in " + d.string() +
                  "): the checkpoint changed between the shards; results of two different models are not mixed: rerun the shards "
                  "of the wrong weights into new directories");
    }
    for (const auto& [key, fingerprint] : own) {
      if (weights.emplace(key, fingerprint).second) weighed[key] = d;
    }
    all.insert(all.end(), rows.begin(), rows.end());
  }
  for (int i = 1; i <= count; ++i)
    if (!seen.count(i)) throw Error("merge: shard " + std::to_string(i) + "/" + std::to_string(count) + " is missing");
  json merged = base;
  merged["shard"] = "1/1";
  const std::vector<json> rows = sorted_by_run(std::move(all));
  check_results_dir(out);
  const ResultsDirLock lock(out, "merge");  // one writer per results directory (dir_lock.hpp)
  if (fs::exists(out / "rows.jsonl")) throw Error("merge: " + out.string() + " already holds rows; give a new --out directory");
  open_results_dir(out, merged);
  std::string text;
  for (const json& r : rows) text += r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  write_file_atomically(out / "rows.jsonl", text);
  const json summary = write_summary(out, merged, rows);
  log << "merge: " << count << " shards, " << rows.size() << " runs into " << (out / "rows.jsonl").string() << "\n";
  if (const std::string w = small_sample_warning(summary); !w.empty()) log << "merge: warning: " << w << "\n";
}

}  // namespace specdec::sweep
