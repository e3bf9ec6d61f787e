// The optional diagnostic tensors of schema 1.2: per-layer target hidden states and the
// drafter's inputs and outputs, per step.
#include "traces/trace_diagnostics.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "reference/core/error.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {
namespace {
namespace L = trace_layout;

[[noreturn]] void invalid(const std::string& field, const std::string& what) {
  throw Error("invalid trace: " + field + ": " + what);
}

std::string step_field(std::size_t s, const char* name) { return "steps[" + std::to_string(s) + "]." + name; }

bool any_layers(const Trace& t) {
  return std::any_of(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return !s.layer_row_nodes.empty() || !s.layer_hidden.empty(); });
}
bool any_drafter_io(const Trace& t) {
  return std::any_of(t.steps.begin(), t.steps.end(), [](const StepRecord& s) {
    return !s.drafter_tokens.empty() || !s.drafter_positions.empty() || !s.drafter_calls.empty() ||
           !s.drafter_features.empty() || !s.drafter_hidden.empty() || !s.drafter_logits.empty();
  });
}

// Rows of a (N, width) block: width 0 means the block is not recorded and must be empty.
void check_block(std::size_t s, const char* name, const std::vector<float>& v, std::size_t n, int64_t width, const char* layout) {
  const std::size_t want = width > 0 ? n * static_cast<std::size_t>(width) : 0;
  if (v.size() != want) {
    invalid(step_field(s, name), std::to_string(v.size()) + " values, expected " + std::to_string(n) + " rows x " +
                                     std::to_string(width) + " (" + layout + ")");
  }
}

// Reads a float32 [rows, width] block whose row count must be `rows`; returns its width.
uint64_t read_rows_block(const h5::Group& g, const char* name, uint64_t rows, const std::vector<int64_t>& off,
                         std::vector<StepRecord>& steps, std::vector<float> StepRecord::*field, uint64_t unit = 1) {
  uint64_t r = 0, c = 0;
  const std::vector<float> flat = g.read_matrix<float>(name, &r, &c);
  if (r != rows) {
    g.open_dataset(name).fail("has " + std::to_string(r) + " rows, expected " + std::to_string(rows));
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const uint64_t a = static_cast<uint64_t>(off[s]) * unit * c, b = static_cast<uint64_t>(off[s + 1]) * unit * c;
    (steps[s].*field).assign(flat.begin() + static_cast<std::ptrdiff_t>(a), flat.begin() + static_cast<std::ptrdiff_t>(b));
  }
  return c;
}

std::vector<int64_t> read_row_offsets(const h5::Group& g, std::size_t S, uint64_t R) {
  const std::vector<int64_t> off = g.read_vector<int64_t>(L::kRowOffsets);
  const h5::Dataset ds = g.open_dataset(L::kRowOffsets);
  if (off.size() != S + 1) ds.fail(std::to_string(off.size()) + " offsets, expected " + std::to_string(S + 1) + " (number of steps + 1)");
  if (off[0] != 0) ds.fail("first offset is " + std::to_string(off[0]) + ", expected 0");
  for (std::size_t i = 1; i < off.size(); ++i) {
    if (off[i] < off[i - 1]) ds.fail("offsets decrease at index " + std::to_string(i) + "; offsets must be non-decreasing");
  }
  if (static_cast<uint64_t>(off.back()) != R) {
    ds.fail("last offset is " + std::to_string(off.back()) + ", expected " + std::to_string(R) + " (the number of rows)");
  }
  return off;
}

// Step s's drafter rows are rows a drafter can have run, each recorded once. A step drafts from its
// context (positions before the step's) up to the deepest draft specdec supports past it, so a row
// beyond that was fed nothing of this run; a row repeated exactly (same forward, token, position,
// and every recorded input and output) is one forward's row counted twice. Either would be passed
// over by validation without being compared, and so must not be in a trace.
void check_drafter_rows(const Trace& t, std::size_t s) {
  const StepRecord& st = t.steps[s];
  const DrafterIOLayout& d = t.drafter_io;
  const int64_t last = st.position + kMaxDraftDepth;
  for (std::size_t i = 0; i < st.drafter_positions.size(); ++i) {
    const int64_t p = st.drafter_positions[i];
    if (p < 0 || p > last) {
      invalid(step_field(s, "drafter_positions"), "entry " + std::to_string(i) + " is position " + std::to_string(p) + ", expected 0 <= position <= " +
                                                      std::to_string(last) + " (the step's position " + std::to_string(st.position) + " plus " +
                                                      std::to_string(kMaxDraftDepth) + ", the deepest draft specdec supports)");
    }
  }
  // Rows keyed by a hash of everything recorded about them; equal hashes compared in full.
  auto row_bytes = [](const std::vector<float>& block, int64_t width, std::size_t i) {
    return std::string_view(reinterpret_cast<const char*>(block.data() + i * static_cast<std::size_t>(width)),
                            static_cast<std::size_t>(width) * sizeof(float));
  };
  auto same = [&](std::size_t i, std::size_t j) {
    return st.drafter_calls[i] == st.drafter_calls[j] && st.drafter_tokens[i] == st.drafter_tokens[j] &&
           st.drafter_positions[i] == st.drafter_positions[j] &&
           row_bytes(st.drafter_features, d.feature_size, i) == row_bytes(st.drafter_features, d.feature_size, j) &&
           row_bytes(st.drafter_hidden, d.hidden_size, i) == row_bytes(st.drafter_hidden, d.hidden_size, j) &&
           row_bytes(st.drafter_logits, d.vocab_size, i) == row_bytes(st.drafter_logits, d.vocab_size, j);
  };
  std::unordered_map<std::size_t, std::vector<std::size_t>> seen;
  for (std::size_t i = 0; i < st.drafter_tokens.size(); ++i) {
    std::size_t h = std::hash<int64_t>()(st.drafter_positions[i]);
    auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(std::hash<int32_t>()(st.drafter_tokens[i]));
    mix(std::hash<int32_t>()(st.drafter_calls[i]));
    mix(std::hash<std::string_view>()(row_bytes(st.drafter_features, d.feature_size, i)));
    mix(std::hash<std::string_view>()(row_bytes(st.drafter_hidden, d.hidden_size, i)));
    mix(std::hash<std::string_view>()(row_bytes(st.drafter_logits, d.vocab_size, i)));
    std::vector<std::size_t>& earlier = seen[h];
    for (std::size_t j : earlier) {
      if (same(i, j)) {
        invalid(step_field(s, "drafter_tokens"), "entry " + std::to_string(i) + " repeats entry " + std::to_string(j) + " (drafter forward " +
                                                     std::to_string(st.drafter_calls[i]) + ", token " + std::to_string(st.drafter_tokens[i]) +
                                                     " at position " + std::to_string(st.drafter_positions[i]) +
                                                     ", every recorded value equal), expected each row a drafter forward ran once");
      }
    }
    earlier.push_back(i);
  }
}

}  // namespace

std::vector<std::string> split_substeps(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::size_t end = comma == std::string::npos ? list.size() : comma;
    out.push_back(list.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join_substeps(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + names[i];
  return out;
}

void validate_trace_diagnostics(const Trace& t) {
  const TargetLayersLayout& tl = t.target_layers;
  if (tl.num_layers == 0 && tl.hidden_size == 0 && tl.substeps.empty()) {
    if (any_layers(t)) invalid("steps[].layer_hidden", "recorded, but target_layers has no num_layers / hidden_size / substeps");
  } else {
    if (tl.num_layers < 1) invalid("target_layers.num_layers", std::to_string(tl.num_layers) + ", expected >= 1");
    if (tl.hidden_size < 1) invalid("target_layers.hidden_size", std::to_string(tl.hidden_size) + ", expected >= 1");
    if (tl.substeps.empty()) invalid("target_layers.substeps", "empty, expected some of " + join_substeps(layer_substep_names()));
    const auto& known = layer_substep_names();
    std::size_t last = 0;
    for (std::size_t i = 0; i < tl.substeps.size(); ++i) {
      const auto it = std::find(known.begin(), known.end(), tl.substeps[i]);
      if (it == known.end()) {
        invalid("target_layers.substeps", "unknown sub-step '" + tl.substeps[i] + "', expected some of " + join_substeps(known));
      }
      const auto idx = static_cast<std::size_t>(it - known.begin());
      if (i > 0 && idx <= last) invalid("target_layers.substeps", "'" + join_substeps(tl.substeps) + "' is not in forward order (" + join_substeps(known) + ") or repeats one");
      last = idx;
    }
    const auto per_row = static_cast<std::size_t>(tl.num_layers) * tl.substeps.size() * static_cast<std::size_t>(tl.hidden_size);
    for (std::size_t s = 0; s < t.steps.size(); ++s) {
      const StepRecord& st = t.steps[s];
      if (st.layer_hidden.size() != st.layer_row_nodes.size() * per_row) {
        invalid(step_field(s, "layer_hidden"), std::to_string(st.layer_hidden.size()) + " values, expected " +
                                                    std::to_string(st.layer_row_nodes.size()) + " rows x L x U x H = " +
                                                    std::to_string(st.layer_row_nodes.size() * per_row));
      }
      std::set<int32_t> seen;
      for (int32_t node : st.layer_row_nodes) {
        if (node < -1 || node >= static_cast<int32_t>(st.draft_tokens.size())) {
          invalid(step_field(s, "layer_row_nodes"), "node " + std::to_string(node) + " is not -1 (root) or a draft node of the step (0.." +
                                                          std::to_string(static_cast<int64_t>(st.draft_tokens.size()) - 1) + ")");
        }
        if (!seen.insert(node).second) invalid(step_field(s, "layer_row_nodes"), "node " + std::to_string(node) + " appears twice");
      }
    }
  }

  const DrafterIOLayout& d = t.drafter_io;
  if (!d.present) {
    if (any_drafter_io(t)) invalid("steps[].drafter_tokens", "recorded, but drafter_io.present is false");
    return;
  }
  if (d.feature_size < 0 || d.hidden_size < 0 || d.vocab_size < 0) invalid("drafter_io", "negative width");
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    const StepRecord& st = t.steps[s];
    const std::size_t n = st.drafter_tokens.size();
    if (st.drafter_positions.size() != n) invalid(step_field(s, "drafter_positions"), std::to_string(st.drafter_positions.size()) + " entries, expected " + std::to_string(n) + " (one per drafter_tokens entry)");
    if (st.drafter_calls.size() != n) invalid(step_field(s, "drafter_calls"), std::to_string(st.drafter_calls.size()) + " entries, expected " + std::to_string(n) + " (one per drafter_tokens entry)");
    for (std::size_t i = 0; i < n; ++i) {
      const int32_t c = st.drafter_calls[i];
      if (c < 0 || (i > 0 && c < st.drafter_calls[i - 1]) || (i > 0 && c > st.drafter_calls[i - 1] + 1) || (i == 0 && c != 0)) {
        invalid(step_field(s, "drafter_calls"), "entry " + std::to_string(i) + " is " + std::to_string(c) + "; calls must count 0, 1, 2, ... in order");
      }
    }
    check_block(s, "drafter_features", st.drafter_features, n, d.feature_size, "drafter_io.feature_size");
    check_block(s, "drafter_hidden", st.drafter_hidden, n, d.hidden_size, "drafter_io.hidden_size");
    check_block(s, "drafter_logits", st.drafter_logits, n, d.vocab_size, "drafter_io.vocab_size");
    check_drafter_rows(t, s);
  }
}

void write_trace_diagnostics(h5::Group& steps, const Trace& t) {
  const auto& all = t.steps;
  if (t.target_layers.num_layers > 0) {
    h5::Group g = steps.create_group(L::kTargetLayers);
    g.write_attribute(L::kNumLayers, t.target_layers.num_layers);
    g.write_attribute(L::kHiddenSize, t.target_layers.hidden_size);
    g.write_attribute(L::kSubsteps, join_substeps(t.target_layers.substeps));
    std::vector<int64_t> off{0};
    std::vector<int32_t> nodes;
    std::vector<float> hidden;
    for (const StepRecord& s : all) {
      nodes.insert(nodes.end(), s.layer_row_nodes.begin(), s.layer_row_nodes.end());
      hidden.insert(hidden.end(), s.layer_hidden.begin(), s.layer_hidden.end());
      off.push_back(static_cast<int64_t>(nodes.size()));
    }
    g.write_vector<int64_t>(L::kRowOffsets, off);
    g.write_vector<int32_t>(L::kRowNodes, nodes);
    const auto H = static_cast<uint64_t>(t.target_layers.hidden_size);
    g.write_matrix<float>(L::kHidden, hidden.size() / H, H, hidden.data());
  }
  if (t.drafter_io.present) {
    h5::Group g = steps.create_group(L::kDrafterIO);
    std::vector<int64_t> off{0}, positions;
    std::vector<int32_t> tokens, calls;
    std::vector<float> features, hidden, logits;
    for (const StepRecord& s : all) {
      tokens.insert(tokens.end(), s.drafter_tokens.begin(), s.drafter_tokens.end());
      positions.insert(positions.end(), s.drafter_positions.begin(), s.drafter_positions.end());
      calls.insert(calls.end(), s.drafter_calls.begin(), s.drafter_calls.end());
      features.insert(features.end(), s.drafter_features.begin(), s.drafter_features.end());
      hidden.insert(hidden.end(), s.drafter_hidden.begin(), s.drafter_hidden.end());
      logits.insert(logits.end(), s.drafter_logits.begin(), s.drafter_logits.end());
      off.push_back(static_cast<int64_t>(tokens.size()));
    }
    g.write_vector<int64_t>(L::kRowOffsets, off);
    g.write_vector<int32_t>(L::kTokens, tokens);
    g.write_vector<int64_t>(L::kPositionsIO, positions);
    g.write_vector<int32_t>(L::kCalls, calls);
    const auto N = static_cast<uint64_t>(tokens.size());
    if (t.drafter_io.feature_size > 0) g.write_matrix<float>(L::kFeatures, N, static_cast<uint64_t>(t.drafter_io.feature_size), features.data());
    if (t.drafter_io.hidden_size > 0) g.write_matrix<float>(L::kHidden, N, static_cast<uint64_t>(t.drafter_io.hidden_size), hidden.data());
    if (t.drafter_io.vocab_size > 0) g.write_matrix<float>(L::kLogitsIO, N, static_cast<uint64_t>(t.drafter_io.vocab_size), logits.data());
  }
}

void read_trace_diagnostics(const h5::Group& steps_group, Trace& t) {
  auto& steps = t.steps;
  if (steps_group.has(L::kTargetLayers)) {
    const h5::Group g = steps_group.open_group(L::kTargetLayers);
    TargetLayersLayout& tl = t.target_layers;
    tl.num_layers = g.read_int64_attribute(L::kNumLayers);
    tl.hidden_size = g.read_int64_attribute(L::kHiddenSize);
    tl.substeps = split_substeps(g.read_string_attribute(L::kSubsteps));
    if (tl.num_layers < 1 || tl.num_layers > 100000) g.fail("attribute 'num_layers' is " + std::to_string(tl.num_layers) + ", expected 1..100000");
    if (tl.hidden_size < 1 || tl.hidden_size > (1 << 20)) g.fail("attribute 'hidden_size' is " + std::to_string(tl.hidden_size) + ", expected 1..1048576");
    const std::vector<int32_t> nodes = g.read_vector<int32_t>(L::kRowNodes);
    const std::vector<int64_t> off = read_row_offsets(g, steps.size(), nodes.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
      steps[s].layer_row_nodes.assign(nodes.begin() + off[s], nodes.begin() + off[s + 1]);
    }
    const h5::Dataset hidden = g.open_dataset(L::kHidden);
    const std::vector<uint64_t> shape = hidden.shape();
    const uint64_t unit = static_cast<uint64_t>(tl.num_layers) * tl.substeps.size();
    if (shape.size() != 2 || shape[1] != static_cast<uint64_t>(tl.hidden_size)) {
      hidden.fail("expected shape (rows x num_layers x substeps, " + std::to_string(tl.hidden_size) + ") matching attribute 'hidden_size'");
    }
    const uint64_t c = read_rows_block(g, L::kHidden, nodes.size() * unit, off, steps, &StepRecord::layer_hidden, unit);
    (void)c;
  }
  if (steps_group.has(L::kDrafterIO)) {
    const h5::Group g = steps_group.open_group(L::kDrafterIO);
    DrafterIOLayout& d = t.drafter_io;
    d.present = true;
    const std::vector<int32_t> tokens = g.read_vector<int32_t>(L::kTokens);
    const std::vector<int64_t> positions = g.read_vector<int64_t>(L::kPositionsIO);
    const std::vector<int32_t> calls = g.read_vector<int32_t>(L::kCalls);
    const uint64_t N = tokens.size();
    if (positions.size() != N) g.open_dataset(L::kPositionsIO).fail(std::to_string(positions.size()) + " entries, expected " + std::to_string(N) + " (one per entry of tokens)");
    if (calls.size() != N) g.open_dataset(L::kCalls).fail(std::to_string(calls.size()) + " entries, expected " + std::to_string(N) + " (one per entry of tokens)");
    const std::vector<int64_t> off = read_row_offsets(g, steps.size(), N);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      steps[s].drafter_tokens.assign(tokens.begin() + off[s], tokens.begin() + off[s + 1]);
      steps[s].drafter_positions.assign(positions.begin() + off[s], positions.begin() + off[s + 1]);
      steps[s].drafter_calls.assign(calls.begin() + off[s], calls.begin() + off[s + 1]);
    }
    if (g.has(L::kFeatures)) d.feature_size = static_cast<int64_t>(read_rows_block(g, L::kFeatures, N, off, steps, &StepRecord::drafter_features));
    if (g.has(L::kHidden)) d.hidden_size = static_cast<int64_t>(read_rows_block(g, L::kHidden, N, off, steps, &StepRecord::drafter_hidden));
    if (g.has(L::kLogitsIO)) d.vocab_size = static_cast<int64_t>(read_rows_block(g, L::kLogitsIO, N, off, steps, &StepRecord::drafter_logits));
  }
}

}  // namespace specdec
