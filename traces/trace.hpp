#pragma once
// A decoding trace: everything a run observed, step by step, kept apart from how long it took.
// One trace records one sequence. The on-disk form (HDF5) is specified in traces/SCHEMA.md; this
// is its in-memory form. One StepRecord serves every method: fields a method does not produce
// stay empty and are not written.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "reference/core/exact_math.hpp"
#include "traces/logit_summary.hpp"

namespace specdec {

inline constexpr const char* kTraceFormat = "specdec-trace";
// major.minor: readers refuse a newer major and accept a newer minor (ignoring what they do not
// know). Adding an optional dataset or attribute bumps the minor; anything else bumps the major.
inline constexpr int kTraceSchemaMajor = 1;
inline constexpr int kTraceSchemaMinor = 3;
std::string trace_schema_version();  // "1.3"

// One model taking part in the run, by role ("target", "drafter").
struct ModelInfo {
  std::string path;              // where it was loaded from: provenance only, not compared
  std::string fingerprint;       // identifies weights and configuration
  std::string config_json = "{}";
};

struct TraceMeta {
  std::string method = "sequential";  // sequential | draft | eagle | eagle3 | peagle
  std::string specdec_version;        // empty: written as this build's version
  std::string created_utc;            // ISO 8601 "YYYY-MM-DDTHH:MM:SSZ"; empty: written as now
  std::string schema_version;         // set by read_trace; write_trace always writes the current one
  // The exactness contract (reference/core/exact_math.hpp) the trace's numbers were computed
  // under; bitwise comparisons need this build's. read_trace leaves it empty for a file that
  // records none (written before traces carried it); write_trace writes it unless empty.
  std::string exactness_contract = exact::kContractVersion;
  std::string config_json = "{}";     // the full run configuration
  std::string sampling_json = "{}";   // the sampling configuration (greedy, temperature, ...)
  uint64_t seed = 0;
  std::map<std::string, ModelInfo> models;  // role -> model
};

// One row of logits, kept either in full or as a top-k summary. Within one trace all rows of a
// logits group (target or draft) use the same form, the same V and, for summaries, the same k.
struct LogitRecord {
  std::vector<float> full;  // (V) every logit; empty when the row is summarized
  LogitSummary summary;     // used when `full` is empty

  bool is_full() const { return !full.empty(); }
  static LogitRecord full_row(const float* row, int V);
  static LogitRecord topk_row(const float* row, int V, int k);
};

// Where a draft-free drafter (n-gram lookup, suffix decoding) found one draft node's token: the
// earlier occurrence whose continuation it copied (schema 1.3, /steps/draft_sources; the trace's
// form of reference/drafting/proposer.hpp's DraftSource).
struct DraftSourceRecord {
  enum class Origin : uint8_t { context = 0, responses = 1 };
  Origin origin = Origin::context;  // context: this sequence (prompt + output); responses: an earlier response of the run
  int64_t position = -1;            // the copied token's index in the sequence (context) or in response `request`; -1 unknown
  int32_t match_length = 0;         // the length of the matched suffix (n-gram) that led there
  int64_t request = -1;             // responses: the request, in the order the run started them; -1 for context
  bool operator==(const DraftSourceRecord&) const = default;
};

// One decoding step = one target forward that emits tokens. Step 0 is the prefill forward over
// the prompt, which emits the first token. Draft nodes are numbered 0..n-1 in the order drafted;
// a parent always precedes its children.
struct StepRecord {
  int64_t position = 0;                 // absolute position of the first token this step emits
  std::vector<int32_t> emitted_tokens;  // appended to the output, in order (sequential: one)
  // Target logits rows: row 0 predicts the token after the context, row j >= 1 the token after
  // draft node j-1. Empty in every step, or 1 + draft_tokens.size() rows in every step.
  std::vector<LogitRecord> target_logits;

  // Speculative methods (empty otherwise).
  std::vector<int32_t> draft_tokens;       // target-vocabulary token id of each draft node
  std::vector<int32_t> draft_parents;      // parent node of each draft node, -1 = root; chain: -1,0,1,..
  std::vector<LogitRecord> draft_logits;   // drafter logits rows (over the drafter's own vocabulary)
  std::vector<int32_t> draft_logit_nodes;  // per draft_logits row: the node it was computed at, -1 = root
  std::vector<int32_t> accepted_path;      // accepted draft nodes, root to leaf
  std::vector<uint8_t> accept_decisions;   // each acceptance test in evaluation order: 1 accept, 0 reject
  std::vector<int32_t> accept_nodes;       // the node each decision judged: recorded in no step, or in all
  std::vector<double> accept_uniforms;     // uniforms drawn for acceptance tests, in draw order
  int32_t bonus_token = -1;                // token sampled from the target after the accepted path, -1 = none
  std::vector<std::array<uint32_t, 4>> random_counters;  // Philox4x32 counter blocks used, in order
  // Draft-free methods (schema 1.3): where each draft node's token was copied from, in node order;
  // empty (a model drafter, or nothing drafted) or one per draft node.
  std::vector<DraftSourceRecord> draft_sources;

  // Optional diagnostics (schema 1.2), for naming the first layer where an engine departs from
  // the reference. Empty in every step, or set in every step; see Trace::target_layers.
  // Target hidden states inside this step's target forward, for the rows `layer_row_nodes`
  // names (-1 = the root input, i.e. the last context token; j = draft node j):
  // (R, L, U, H) row-major, R = layer_row_nodes.size(), U = Trace::target_layers.substeps.size().
  std::vector<int32_t> layer_row_nodes;
  std::vector<float> layer_hidden;
  // What the drafter was fed and produced in this step, one entry per input row in call order
  // (several rows per call for a tree level or a P-EAGLE forward).
  std::vector<int32_t> drafter_tokens;     // (N) token ids fed to the drafter
  std::vector<int64_t> drafter_positions;  // (N) their absolute positions
  std::vector<int32_t> drafter_calls;      // (N) which drafter forward of the step (0, 1, ...) the row was in
  std::vector<float> drafter_features;     // (N, Trace::drafter_io.feature_size) feature rows fed in, or empty
  std::vector<float> drafter_hidden;       // (N, Trace::drafter_io.hidden_size) the drafter's last hidden state, or empty
  std::vector<float> drafter_logits;       // (N, Trace::drafter_io.vocab_size) the drafter's raw logits, or empty
};

// The shape of the optional per-layer target tensors (schema 1.2). num_layers == 0: none recorded.
struct TargetLayersLayout {
  int64_t num_layers = 0;               // L: decoder layers, in order
  int64_t hidden_size = 0;              // H
  std::vector<std::string> substeps;    // U names in forward order, from layer_substep_names()
};
// Sub-steps a decoder layer may record, in forward order: the input RMSNorm's output, the
// residual stream after the attention block (residual added), the post-attention RMSNorm's
// output, the residual stream after the MLP block (= the layer's output).
inline const std::vector<std::string>& layer_substep_names() {
  static const std::vector<std::string> names = {"input_norm", "attention", "post_attention_norm", "mlp"};
  return names;
}

// The widths of the optional drafter input/output rows (schema 1.2). A width of 0: not recorded.
struct DrafterIOLayout {
  bool present = false;       // the drafter_* step fields are recorded
  int64_t feature_size = 0;   // F of drafter_features (EAGLE-1: H; EAGLE-3 / P-EAGLE: the fused 3H input)
  int64_t hidden_size = 0;    // width of drafter_hidden
  int64_t vocab_size = 0;     // width of drafter_logits (the drafter's output vocabulary)
};

// Wall-clock measurements, never part of semantic comparisons.
struct TraceTiming {
  int64_t prefill_ns = 0;
  int64_t total_ns = 0;
  std::map<std::string, std::vector<int64_t>> step_ns;  // phase ("step", "draft", "verify", ...) -> (S)
};

struct Trace {
  TraceMeta meta;
  std::vector<int32_t> prompt;
  std::vector<StepRecord> steps;
  std::vector<int32_t> output;  // the generated tokens = the concatenation of all emitted_tokens
  std::string stop_reason;      // max_tokens | eos
  TraceTiming timing;
  TargetLayersLayout target_layers;  // optional per-layer target tensors (StepRecord::layer_*)
  DrafterIOLayout drafter_io;        // optional drafter inputs / outputs (StepRecord::drafter_*)
};

// The invariants of the optional 1.2 fields (per-layer target tensors, drafter inputs/outputs):
// sizes agree with the layouts, every step or none records them. Called by validate_trace's
// callers write_trace and read_trace; throws specdec::Error "invalid trace: <field>: <what>".
void validate_trace_diagnostics(const Trace& trace);

// Throws specdec::Error "invalid trace: <field>: <what>" for a trace that breaks the schema's
// invariants (listed in SCHEMA.md).
void validate_trace(const Trace& trace);

// Validates, then writes atomically: a temporary file in the same directory, renamed over `path`
// on success and removed on any failure.
void write_trace(const std::filesystem::path& path, const Trace& trace);

// Reads and validates; throws specdec::Error naming the file and the object at fault.
Trace read_trace(const std::filesystem::path& path);

// Refuses (specdec::Error naming `file`, the trace's contract version and this build's, and how to
// re-record it) a trace whose numbers were computed under another exactness contract, or under
// none recorded: its logits cannot be compared with this build's. Call it wherever a trace's
// numbers are compared; reading or inspecting a trace needs no check.
void check_exactness_contract(const Trace& trace, const std::string& file);

// Exact equality of everything a run computed: method, seed, sampling, model fingerprints and
// configs, prompt, every step field (floats bit for bit), output and stop reason. Ignores timing,
// created_utc, specdec_version, schema_version, exactness_contract, the run config_json and model
// paths. On a
// difference, `first_difference` (if given) receives e.g. "steps[2].emitted_tokens[0]: 5 vs 7".
bool semantically_equal(const Trace& a, const Trace& b, std::string* first_difference = nullptr);

}  // namespace specdec
