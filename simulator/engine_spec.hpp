#pragma once
// An inference engine (the software stack that drives the device: vLLM, SGLang, TensorRT-LLM,
// Hugging Face eager PyTorch, transformers-neuronx, this project's cpu backend) as the cost model
// sees it: host time per target forward, per drafter forward and per speculative iteration;
// whether kernels are replayed from CUDA graphs or launched one by one from the host; which
// methods it runs and whether it verifies draft trees. Hardware stays in HardwareSpec.
// Loaded from simulator/specs/engines/*.json.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "simulator/kernel_fusion.hpp"
#include "simulator/method.hpp"

namespace specdec::sim {

// Host time of a draft-free method's lookup in one decoding step (the n-gram scan over the token
// history, the suffix tree's speculation and update): the engine's own code on the host, in the
// critical path between two target forwards. For a batch of B sequences at C cached tokens that
// emitted AL tokens each in the last step:
//   per_step_s + ⌈B / threads⌉ · (per_sequence_s + per_context_token_s · C + per_emitted_token_s · AL)
// (sequences split evenly over `threads` host threads).
struct LookupCost {
  double per_step_s = 0;           // once per step, whatever the batch (a kernel, a call into C++)
  double per_sequence_s = 0;       // per sequence: its lookup's fixed cost
  double per_context_token_s = 0;  // per sequence and cached token: a scan over the history
  double per_emitted_token_s = 0;  // per sequence and emitted token: appending to an index
  int threads = 1;                 // sequences looked up in parallel
  double seconds(int batch, double context, double emitted) const;
  bool operator==(const LookupCost&) const = default;
};

// Host and small-kernel work that a draft tree adds to a step beyond a chain of its depth (the
// operators price the drafter's wider rows, the top-k over the vocabulary and the larger verify):
// per drafted level, the top-k over the level's cumulative scores and the frontier's gather; for a
// dynamic tree, rebuilt every step, the reranking to the node budget once and the attention mask,
// positions and retrieve indices per node (a static tree's are built once, before decoding).
struct TreeCost {
  double per_step_s = 0;   // dynamic trees: reranking and index building, once per step
  double per_level_s = 0;  // every tree: per drafter forward of the tree
  double per_node_s = 0;   // dynamic trees: per node of the verified tree
  // The tree's host time for one step: `levels` drafter forwards, `nodes` nodes, dynamic or static.
  double seconds(int levels, int nodes, bool dynamic) const;
  bool operator==(const TreeCost&) const = default;
};

// The engine's per-step host work in one release range (scheduling the next batch, preparing its
// metadata, processing the previous step's outputs): its size (step_s, the engine's overhead.step_s
// unless the range gives its own, plus request_s per running request) and whether it is hidden
// behind the device's forward, as an overlap ("zero-overhead") scheduler does, in plain and in
// speculative decoding. Hidden work costs nothing while it is shorter than the device's step and
// its excess beyond; work that is not hidden adds to the step in full.
struct HostWork {
  bool sequential = false;   // hidden in plain decoding
  bool speculative = false;  // hidden in speculative decoding
  double request_s = 0;      // seconds per running request and step
  double step_s = -1;        // seconds per step; < 0: the engine's overhead.step_s
  // The range's own speculative and sampling terms, where a calibration fitted them to rows of these
  // releases (a release's drafting loop and sampler change as its scheduler does): by method as the
  // engine's overhead maps (a method absent here takes the engine's), and < 0: the engine's.
  std::map<std::string, double> draft_step_s, spec_step_s;
  double sampling_s_per_row = -1, sampling_saturation_rows = -1;
  std::string source;        // where the range's behaviour and figures come from
  bool operator==(const HostWork&) const = default;
};

// The host work of a range of engine versions [from, until): either bound may be empty (open).
// Versions are dotted numbers ("0.4.4", "v0.14.0").
struct HostWorkEra {
  std::string from, until;
  HostWork work;
  bool operator==(const HostWorkEra&) const = default;
};

// A version's numeric components ("v0.4.4" -> {0, 4, 4}); throws naming `where` on anything else.
std::vector<int> parse_engine_version(const std::string& version, const std::string& where);
// <0, 0, >0 as a is older than, the same as, newer than b (missing components count as 0).
int compare_engine_versions(const std::string& a, const std::string& b);

struct EngineSpec {
  std::string name = "ideal";  // no overheads, every method, trees
  std::string description = "no host overheads: the device's time alone";
  // Host/engine time, seconds (fitted by calibration).
  double step_overhead_s = 0;  // per target forward: scheduling, input preparation, output handling
  // By method, with "default" for the rest; an EAGLE-family method without its own term takes a
  // sibling's (draft_step_overhead, spec_step_overhead).
  std::map<std::string, double> draft_step_overhead_s;  // per drafter forward
  std::map<std::string, double> spec_step_overhead_s;   // per speculative iteration (acceptance, KV fix-up)
  // Sampling and acceptance per verified logit row of each sequence (softmax, top-k/p, the
  // acceptance test) beyond what the operators price: large in eager engines, ~0 when fused.
  double sampling_s_per_row = 0;
  // Where that per-row time saturates: engines sample and accept every row of a batch in one
  // vectorised pass, so the host time of R rows is sampling_s_per_row · R / (1 + R / this) — linear
  // for few rows, tending to sampling_s_per_row · this for many. 0: no saturation (linear).
  double sampling_saturation_rows = 0;
  // Host time of sampling and acceptance for `rows` verified rows in one step (all sequences) on
  // release `version` (its range's terms where it has its own, else the engine's; "": the current
  // release, as everywhere a version is taken).
  double sampling_seconds(double rows, const std::string& version = "") const;
  // The per-step host work by release (the spec's host_work): the current release's (`host_work`,
  // used when no version is named; without host_work in the spec none per request and nothing
  // hidden) and, by version range, older releases' (`host_work_eras`; a version in no range behaves
  // as the current release).
  HostWork host_work;
  std::vector<HostWorkEra> host_work_eras;
  const HostWork& host_work_for(const std::string& version) const;
  HostWork& host_work_for(const std::string& version);
  // The step's host work for `batch` running requests on `version`: step_s + request_s · batch.
  double host_seconds(const std::string& version, int batch) const;
  // The host term per target forward on `version`: its range's step_s, else overhead.step_s.
  double step_overhead(const std::string& version = "") const;
  // Draft-free methods' host lookup per step, by method ("default" for the rest; a method without
  // its own term takes its registry cost siblings' first, as the per-method overheads do).
  std::map<std::string, LookupCost> lookup;
  TreeCost tree_cost;  // what drafting a tree adds to a step (overhead.tree)
  // Kernel launches. With CUDA graphs (or a compiled graph) a forward is replayed without host
  // work per kernel; without, the host launches each kernel and a kernel cannot start before its
  // launch: each operator takes at least kernels_per_operator × kernel_launch_s.
  bool cuda_graphs = true;
  double kernel_launch_s = 0;
  double kernels_per_operator = 1;  // kernels an eager framework launches per modelled operator
  // How the engine fuses a layer's kernels (kernels.fusion; simulator/kernel_fusion.hpp).
  KernelFusion fusion;
  // What it runs: the methods (empty = all) and whether it verifies draft trees, and how: in one
  // forward over all nodes with a tree attention mask, or flattened into one sequence per
  // root-to-leaf path (an engine without tree masks: leaves × (depth + 1) tokens, shared prefixes
  // recomputed).
  std::set<Method> methods;
  bool trees = true;
  bool flatten_trees = false;
  // Tensor parallelism over heads a degree does not divide: padded with empty heads to a multiple of
  // the degree (AWS Neuron's stack), instead of refused (vLLM, SGLang: the degree must divide them).
  bool pads_attention_heads = false;
  // Prompts' prefills run inside the decode steps (chunked prefill: vLLM V1, TensorRT-LLM's in-flight
  // batching), their rows added to the step's target forward, rather than as forwards of their own that
  // stall every running sequence's decoding (SGLang unless --enable-mixed-chunk, which speculative
  // decoding turns off). Either way a prompt's prefill lengthens the steps of the requests already
  // decoding; a separate forward also pays its own step overhead (simulator/batching.hpp).
  bool interleaves_prefill = true;

  // Per drafter forward and per speculative iteration of `method` on release `version` (its range's
  // term where the range has one for the method or a sibling, else the engine's).
  double draft_step_overhead(const std::string& method, const std::string& version = "") const;
  double spec_step_overhead(const std::string& method, const std::string& version = "") const;
  // The lookup term of `method` (zero when the engine gives none).
  LookupCost lookup_cost(const std::string& method) const;
  // Smallest time of one operator from launching it (0 with CUDA graphs).
  double launch_floor_s() const { return cuda_graphs ? 0.0 : kernels_per_operator * kernel_launch_s; }
  bool runs(Method m) const { return m == Method::sequential || methods.empty() || methods.count(m) > 0; }
};

// A per-method term of `m`: the method's own; else, for the EAGLE family, its nearest sibling's;
// else "default"; else 0.
double method_term(const std::map<std::string, double>& m, const std::string& method);

EngineSpec parse_engine_spec(const nlohmann::json& j, const std::string& source);
// An engine's (or the shared defaults') overhead.tree object; throws naming `where` and the field.
TreeCost parse_tree_cost(const nlohmann::json& v, const std::string& where);
EngineSpec load_engine_spec(const std::filesystem::path& path);
// The JSON form parse_engine_spec reads (sources are not kept; pass them in `sources`).
nlohmann::json engine_spec_to_json(const EngineSpec& e, const nlohmann::json& sources = nullptr);

// The engine a hardware kind is simulated with when none is named: gpu → vllm,
// neuron → transformers-neuronx, cpu → specdec-cpu.
std::string default_engine_for(const std::string& hardware_kind);

}  // namespace specdec::sim
