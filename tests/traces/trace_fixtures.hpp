#pragma once
// Shared test helpers: a fresh temporary directory and synthetic, schema-valid traces built from
// a fixed seed (sequential with full or top-k logits, and a speculative tree-shaped one).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace specdec::trace_test {

// A fresh directory under the system temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("specdec-traces-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Every entry in the directory, by file name.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline std::vector<float> random_logits(std::mt19937& rng, int V) {
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> row(static_cast<std::size_t>(V));
  for (float& x : row) x = n(rng);
  return row;
}

inline int32_t argmax(const std::vector<float>& row) {
  int32_t best = 0;
  for (int32_t i = 1; i < static_cast<int32_t>(row.size()); ++i) {
    if (row[static_cast<std::size_t>(i)] > row[static_cast<std::size_t>(best)]) best = i;
  }
  return best;
}

inline TraceMeta synthetic_meta(const std::string& method, uint64_t seed) {
  TraceMeta m;
  m.method = method;
  m.specdec_version = "0.1.0-test";
  m.created_utc = "2024-05-01T12:00:00Z";
  m.config_json = R"({"method":")" + method + R"(","max_tokens":6,"backend":"reference"})";
  m.sampling_json = R"({"mode":"greedy","temperature":0.0})";
  m.seed = seed;
  m.models["target"] = ModelInfo{"models/tiny-target", "fnv1a64:0123456789abcdef", R"({"vocab_size":50})"};
  return m;
}

// Greedy sequential decoding over random logits: P prompt tokens, S steps, V = 50.
// full_logits: every row stored in full; otherwise top-k (k = 5) summaries.
inline Trace sequential_trace(uint64_t seed, bool full_logits, int S = 6) {
  constexpr int V = 50;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  Trace t;
  t.meta = synthetic_meta("sequential", seed);
  t.prompt = {1, 17, 4, 33, 8};
  for (int s = 0; s < S; ++s) {
    const std::vector<float> row = random_logits(rng, V);
    StepRecord st;
    st.position = static_cast<int64_t>(t.prompt.size()) + s;
    st.emitted_tokens = {argmax(row)};
    st.target_logits.push_back(full_logits ? LogitRecord::full_row(row.data(), V)
                                           : LogitRecord::topk_row(row.data(), V, 5));
    t.output.push_back(st.emitted_tokens[0]);
    t.steps.push_back(std::move(st));
    t.timing.step_ns["step"].push_back(1000 + 10 * s);
  }
  t.stop_reason = "max_tokens";
  t.timing.prefill_ns = 5000;
  t.timing.total_ns = 20000;
  return t;
}

// A speculative, tree-shaped trace (EAGLE-like): step 0 is the prefill; each later step drafts
// the tree parents {-1, -1, 0, 0, 2} (nodes 0..4), accepts the path 0 -> 2 and emits the two
// accepted tokens plus a bonus token. Target logits: 1 + 5 rows per step (top-k, k = 4); draft
// logits at the root and nodes 0 and 2 (top-k, k = 3, drafter vocabulary 40).
inline Trace speculative_trace(uint64_t seed, int S = 4) {
  constexpr int V = 50, Vd = 40;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_int_distribution<int32_t> token(0, V - 1);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Trace t;
  t.meta = synthetic_meta("eagle", seed);
  t.meta.models["drafter"] = ModelInfo{"models/tiny-eagle", "fnv1a64:fedcba9876543210", R"({"num_hidden_layers":1})"};
  t.prompt = {2, 9, 14};
  int64_t position = static_cast<int64_t>(t.prompt.size());
  for (int s = 0; s < S; ++s) {
    StepRecord st;
    st.position = position;
    if (s == 0) {
      const std::vector<float> row = random_logits(rng, V);
      st.emitted_tokens = {argmax(row)};
      st.target_logits.push_back(LogitRecord::topk_row(row.data(), V, 4));
      st.random_counters.push_back({static_cast<uint32_t>(seed), 0u, 3u, 1u});
    } else {
      st.draft_parents = {-1, -1, 0, 0, 2};
      for (int j = 0; j < 5; ++j) st.draft_tokens.push_back(token(rng));
      for (int r = 0; r < 6; ++r) {
        const std::vector<float> row = random_logits(rng, V);
        st.target_logits.push_back(LogitRecord::topk_row(row.data(), V, 4));
      }
      for (int32_t node : {-1, 0, 2}) {
        const std::vector<float> row = random_logits(rng, Vd);
        st.draft_logits.push_back(LogitRecord::topk_row(row.data(), Vd, 3));
        st.draft_logit_nodes.push_back(node);
      }
      st.accepted_path = {0, 2};
      st.accept_decisions = {1, 1, 0};
      st.accept_nodes = {0, 2, 4};
      st.accept_uniforms = {uniform(rng), uniform(rng), uniform(rng)};
      st.bonus_token = token(rng);
      st.emitted_tokens = {st.draft_tokens[0], st.draft_tokens[2], st.bonus_token};
      for (uint32_t c = 0; c < 4; ++c) {
        st.random_counters.push_back({static_cast<uint32_t>(seed), static_cast<uint32_t>(s), c, 0xfffffff0u + c});
      }
    }
    position += static_cast<int64_t>(st.emitted_tokens.size());
    t.output.insert(t.output.end(), st.emitted_tokens.begin(), st.emitted_tokens.end());
    t.timing.step_ns["draft"].push_back(s == 0 ? 0 : 300 + s);
    t.timing.step_ns["verify"].push_back(900 + s);
    t.steps.push_back(std::move(st));
  }
  t.stop_reason = "eos";
  t.timing.prefill_ns = 4000;
  t.timing.total_ns = 9000;
  return t;
}

}  // namespace specdec::trace_test
