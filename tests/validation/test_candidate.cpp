// Validation of another engine's recorded trace (specdec validate --candidate): the reference
// runs live under the trace's configuration and is the reference of the comparison, so margins
// and near-ties come from its rows, not the candidate's; a changed draft fails unless the drafts
// are forced; --force-drafts checks a candidate's target forwards and acceptance whatever drafted.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "validation/observed_model.hpp"
#include "validation/run_recorder.hpp"
#include "validation/validator.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::run;

const std::string kModels = SPECDEC_SOURCE_DIR "/models/";
const std::string kGolden = SPECDEC_SOURCE_DIR "/traces/golden/";

nlohmann::json validate_json(std::vector<std::string> args, int expected_code) {
  args.insert(args.begin(), "validate");
  args.push_back("--json");
  const CliRun r = run(args);
  EXPECT_EQ(r.code, expected_code) << r.out << r.err;
  if (r.code != 0 && r.code != 1) return {};
  return nlohmann::json::parse(r.out);
}

std::string drafter_of(const std::string& trace) {
  if (trace.rfind("draft_", 0) == 0) return kModels + "draft";
  if (trace.rfind("eagle3", 0) == 0) return kModels + "eagle3";
  if (trace.rfind("eagle", 0) == 0) return kModels + "eagle1";
  if (trace.rfind("peagle", 0) == 0) return kModels + "peagle";
  return "";
}

// Golden traces, taken as an outside engine's, pass against the live reference, with the
// sides named as they are.
TEST(Candidate, GoldenTracesPass) {
  // One per method and drafting shape, across the sampling modes and domains (the golden replay
  // tests run them all against the reference already).
  for (const std::string name : {"sequential_code_sample.h5", "draft_prose_greedy.h5", "eagle-chain_code_sample.h5",
                                 "eagle-dynamic_prose_coupled.h5", "eagle3-chain_prose_sample.h5", "peagle-chain_code_coupled.h5",
                                 "peagle-tree_prose_sample.h5"}) {
    const std::filesystem::path p = kGolden + name;
    std::vector<std::string> args = {"--model", kModels + "target", "--candidate", p.string()};
    if (!drafter_of(name).empty()) args.insert(args.end(), {"--drafter", drafter_of(name)});
    const auto j = validate_json(args, 0);
    EXPECT_EQ(j["result"], "pass") << name;
    EXPECT_EQ(j["candidate"], "candidate " + p.string()) << name;
    EXPECT_EQ(j["reference"], "reference") << name;
    EXPECT_EQ(j["steps_compared"], j["reference_steps"]) << name;
  }
}

class CandidateTraces : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<testing::ScratchDir>("candidate"); }
  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }
  std::string record(const std::string& name, std::vector<std::string> method, int tokens = 48) const {
    std::vector<std::string> args = {"record", "--model", kModels + "target", "--prompt", "And God said", "--max-new-tokens", std::to_string(tokens),
                                     "--ignore-eos", "--logits", "full", "--out", path(name)};
    args.insert(args.end(), method.begin(), method.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return path(name);
  }
  std::unique_ptr<testing::ScratchDir> dir_;
};

// A candidate that picked its runner-up where its own rows show a near-tie but the reference's
// rows do not: validating it as the candidate fails (the reference's margin decides); taking its
// trace as the reference, as before there was --candidate, would have excused it.
TEST_F(CandidateTraces, MarginsComeFromTheReferencesRows) {
  const std::string clean = record("clean.h5", {}, 96);
  Trace t = read_trace(clean);
  // A step whose reference margin is above the near-tie threshold (0.01) but small enough that
  // closing it keeps the row well within the logits tolerance (NMSE 1e-6).
  int step = -1;
  int32_t top = -1, second = -1;
  float margin = 0;
  for (std::size_t s = 1; s < t.steps.size() && step < 0; ++s) {
    const std::vector<float>& row = t.steps[s].target_logits[0].full;
    std::vector<int32_t> order(row.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    const float m = row[order[0]] - row[order[1]];
    double energy = 0;
    for (float x : row) energy += static_cast<double>(x) * x;
    const double nmse = (m + 0.002) * (m + 0.002) / energy;
    if (m > 0.011f && nmse < 0.6e-6) step = static_cast<int>(s), top = order[0], second = order[1], margin = m;
  }
  ASSERT_GE(step, 0) << "no step of the recording has a reference margin above 0.011 that a change within tolerance closes";
  ASSERT_EQ(t.steps[step].emitted_tokens[0], top);
  t.steps[step].target_logits[0].full[second] += margin + 0.002f;  // the candidate's own margin: 0.002
  t.steps[step].emitted_tokens[0] = second;
  t.output[static_cast<std::size_t>(step)] = second;
  const std::string tampered = path("tampered.h5");
  write_trace(tampered, t);

  const auto j = validate_json({"--model", kModels + "target", "--candidate", tampered}, 1);
  ASSERT_EQ(j["result"], "fail") << j.dump();
  EXPECT_EQ(j["failure"]["step"], step);
  EXPECT_EQ(j["failure"]["what"], "token");
  EXPECT_EQ(j["failure"]["reference_token"], top);
  EXPECT_EQ(j["failure"]["candidate_token"], second);
  EXPECT_NEAR(j["failure"]["margin"].get<double>(), margin, 1e-6) << "the margin is the reference's";
  EXPECT_TRUE(j["near_ties"].empty());
  // The roles reversed (the engine's trace as the reference): its own margin excuses the step as a
  // near-tie (what fails later is only that the rest of the record followed the original token).
  const auto reversed = validate_json({"--model", kModels + "target", "--trace", tampered}, 1);
  ASSERT_EQ(reversed["near_ties"].size(), 1u) << reversed.dump();
  EXPECT_EQ(reversed["near_ties"][0]["step"], step);
  EXPECT_GT(reversed["failure"]["step"].get<int>(), step);
}

TEST_F(CandidateTraces, ATamperedTokenIsNamedWithItsPosition) {
  const std::string clean = record("eagle.h5", {"--method", "eagle", "--drafter", kModels + "eagle1", "--k", "4"});
  Trace t = read_trace(clean);
  // A step that accepted drafts: its last token (the correction or bonus) is changed.
  int step = -1;
  for (std::size_t s = 1; s < t.steps.size() && step < 0; ++s)
    if (t.steps[s].emitted_tokens.size() >= 2) step = static_cast<int>(s);
  ASSERT_GE(step, 0);
  StepRecord& r = t.steps[static_cast<std::size_t>(step)];
  const std::size_t k = r.emitted_tokens.size() - 1;
  const int32_t original = r.emitted_tokens[k];
  const int32_t changed = original == 100 ? 101 : 100;
  const auto at = std::find(t.output.begin(), t.output.end(), original);  // not needed to be unique: rewrite by offset below
  (void)at;
  std::size_t offset = 0;
  for (int s = 0; s < step; ++s) offset += t.steps[static_cast<std::size_t>(s)].emitted_tokens.size();
  t.output[offset + k] = changed;
  r.emitted_tokens[k] = changed;
  if (r.bonus_token == original) r.bonus_token = changed;
  const std::string tampered = path("tampered_token.h5");
  write_trace(tampered, t);
  const auto j = validate_json({"--model", kModels + "target", "--drafter", kModels + "eagle1", "--candidate", tampered}, 1);
  EXPECT_EQ(j["failure"]["step"], step);
  EXPECT_EQ(j["failure"]["position"], r.position + static_cast<int64_t>(k));
  EXPECT_EQ(j["failure"]["reference_token"], original);
  EXPECT_NE(j["failure"]["detail"].get<std::string>().find("emitted_tokens: candidate ["), std::string::npos) << j.dump();
}

// Drafts of another drafter: a changed draft fails without --force-drafts (no drafter inputs to
// excuse it); with it, and without any --drafter, the target forwards and acceptance pass.
TEST_F(CandidateTraces, ForcedDraftsCheckTargetAndAcceptanceWhateverDrafted) {
  for (const std::string sampling : {"greedy", "sample"}) {
    const std::string trace =
        record("draft_" + sampling + ".h5", {"--method", "draft", "--drafter", kModels + "draft", "--k", "3", "--sampling", sampling,
                                              "--temperature", "0.9", "--seed", "4"});
    // A draft token the reference's draft LM would not have drafted.
    // (a node after the accepted path, so that the record stays self-consistent).
    Trace t = read_trace(trace);
    int step = -1;
    for (std::size_t s = 1; s < t.steps.size() && step < 0; ++s)
      if (t.steps[s].accepted_path.size() < t.steps[s].draft_tokens.size()) step = static_cast<int>(s);
    ASSERT_GE(step, 0) << sampling;
    StepRecord& r = t.steps[static_cast<std::size_t>(step)];
    int32_t& node = r.draft_tokens[r.accepted_path.size()];
    node = (node + 7) % 259 == r.emitted_tokens.back() ? (node + 8) % 259 : (node + 7) % 259;
    const std::string changed = path("changed_draft_" + sampling + ".h5");
    write_trace(changed, t);
    const auto differ = validate_json({"--model", kModels + "target", "--drafter", kModels + "draft", "--candidate", changed}, 1);
    EXPECT_EQ(differ["failure"]["what"], "draft") << sampling << ": " << differ.dump();
    EXPECT_EQ(differ["failure"]["step"], step) << sampling;
    EXPECT_NE(differ["failure"]["detail"].get<std::string>().find("--force-drafts"), std::string::npos) << differ.dump();
    const auto forced = validate_json({"--model", kModels + "target", "--candidate", trace, "--force-drafts"}, 0);
    EXPECT_EQ(forced["result"], "pass") << sampling << ": " << forced.dump();
    EXPECT_EQ(forced["steps_compared"], forced["reference_steps"]) << sampling;
  }
  // Forced drafts still fail a wrong verification: the correction (or bonus) token of a step changed.
  Trace t = read_trace(path("draft_greedy.h5"));
  const int step = 3;
  StepRecord& r = t.steps[step];
  const std::size_t k = r.emitted_tokens.size() - 1;
  std::size_t offset = 0;
  for (int s = 0; s < step; ++s) offset += t.steps[static_cast<std::size_t>(s)].emitted_tokens.size();
  const int32_t changed = r.emitted_tokens[k] == 100 ? 101 : 100;
  if (r.bonus_token == r.emitted_tokens[k]) r.bonus_token = changed;
  r.emitted_tokens[k] = t.output[offset + k] = changed;
  const std::string wrong = path("wrong_correction.h5");
  write_trace(wrong, t);
  const auto j = validate_json({"--model", kModels + "target", "--candidate", wrong, "--force-drafts"}, 1);
  EXPECT_EQ(j["failure"]["step"], step) << j.dump();
  EXPECT_EQ(j["failure"]["position"], r.position + static_cast<int64_t>(k)) << j.dump();
}

// An engine whose layer `layer` computes one block wrong: its trace, with its per-layer states,
// fails at the first step, naming that layer and the sub-step where its state first departs.
TEST(CandidateLocalisation, TheFirstLayerAndSubStepOutOfToleranceAreNamed) {
  const LlamaModel loaded = load_llama_checkpoint(kModels + "target");
  const Transformer reference(loaded.config, loaded.weights);
  struct Case {
    const char* what;
    int layer;
    const char* substep;
    std::function<void(LayerWeights&)> perturb;
  };
  const std::vector<Case> cases = {
      {"attention output projection", 3, "attention", [](LayerWeights& w) { w.o_proj *= 1.2f; }},
      {"MLP down projection", 1, "mlp", [](LayerWeights& w) { w.down_proj *= 1.2f; }},
      {"input norm weight", 5, "input_norm", [](LayerWeights& w) { w.input_layernorm *= 1.2f; }},
      {"post-attention norm weight", 2, "post_attention_norm", [](LayerWeights& w) { w.post_attention_layernorm *= 1.2f; }},
  };
  const int L = loaded.config.num_hidden_layers, H = loaded.config.hidden_size;
  for (const Case& c : cases) {
    LlamaWeights weights = loaded.weights;
    c.perturb(weights.layers[static_cast<std::size_t>(c.layer)]);
    const Transformer engine(loaded.config, weights);
    validation::ValidationSetup setup;
    setup.prompt = {0, 68, 113, 103, 35, 74, 114, 103};
    setup.options.max_new_tokens = 6;
    setup.options.stop_at_eos = false;
    // The engine's run, with its per-layer states at the row each step decides from.
    const validation::ObservedModel observed(engine, false, nullptr, true);
    validation::RunRecorder recorder(TraceMeta{}, setup.sampling, 0);
    decode_sequential(observed, setup.prompt, setup.sampling, setup.options, &recorder);
    Trace t = recorder.take().trace;
    t.target_layers = {L, H, {"input_norm", "attention", "post_attention_norm", "mlp"}};
    ASSERT_EQ(observed.records().size(), t.steps.size()) << c.what;
    for (std::size_t s = 0; s < t.steps.size(); ++s) {
      const validation::ForwardRecord& f = observed.records()[s];
      const Eigen::Index row = static_cast<Eigen::Index>(f.tokens.size()) - 1;
      t.steps[s].layer_row_nodes = {-1};
      for (int l = 0; l < L; ++l)
        for (int u = 0; u < 4; ++u) {
          const Matrix& m = f.layer_states[static_cast<std::size_t>(4 * l + u)];
          t.steps[s].layer_hidden.insert(t.steps[s].layer_hidden.end(), m.row(row).data(), m.row(row).data() + H);
        }
    }
    const validation::ValidationReport r =
        validation::validate_candidate_trace(setup, {"reference", &reference}, t, "candidate", false);
    ASSERT_FALSE(r.passed) << c.what;
    EXPECT_EQ(r.failure->step, 0) << c.what;
    EXPECT_EQ(r.failure->layer, c.layer) << c.what << ": " << r.failure->detail;
    EXPECT_EQ(r.failure->substep, c.substep) << c.what << ": " << r.failure->detail;
    std::ostringstream text;
    validation::print_report(r, text);
    EXPECT_NE(text.str().find("first out of tolerance inside the target forward: layer " + std::to_string(c.layer) + ", " + c.substep),
              std::string::npos) << text.str();
  }
}

// A candidate is loaded as trace check reads it: whatever check rejects (drafter token ids outside
// the vocabulary, drafter rows at positions the run never reached, a row recorded 2,000 times, a
// stop reason its run cannot have had) is refused before anything runs, naming the file and the
// problem, by validate --candidate and trace diff alike.
TEST_F(CandidateTraces, WhatTraceCheckRejectsIsRefusedOnLoad) {
  const std::string clean = record("eagle.h5", {"--method", "eagle", "--drafter", kModels + "eagle1", "--k", "3"}, 16);
  Trace t = read_trace(clean);
  t.drafter_io = {true, 0, 0, 0};  // tokens, positions and calls only
  for (std::size_t s = 1; s < t.steps.size(); ++s) {
    StepRecord& r = t.steps[s];
    for (std::size_t j = 0; j < r.draft_tokens.size(); ++j) {
      r.drafter_tokens.push_back(r.draft_tokens[j]);
      r.drafter_positions.push_back(r.position + static_cast<int64_t>(j));
      r.drafter_calls.push_back(static_cast<int32_t>(j));
    }
  }
  const std::string rows = path("rows.h5");
  write_trace(rows, t);
  ASSERT_EQ(run({"trace", "check", rows}).code, 0) << run({"trace", "check", rows}).out;

  // Each file: one edit of rows.h5, made in memory or (where the writer refuses it) in the file.
  auto edited = [&](const std::string& name, const std::function<void(h5::File&)>& edit) {
    const std::string p = path(name);
    std::filesystem::copy_file(rows, p, std::filesystem::copy_options::overwrite_existing);
    h5::File f = h5::File::open_read_write(p);
    edit(f);
    f.close();
    return p;
  };
  auto rewrite = []<class T>(h5::File& f, const char* name, const std::function<void(std::vector<T>&)>& change) {
    h5::Group io = f.open_group("steps/drafter_io");
    std::vector<T> v = io.read_vector<T>(name);
    change(v);
    io.remove(name);
    io.write_vector<T>(name, v);
  };
  Trace bad_token = t;
  bad_token.steps[2].drafter_tokens[0] = 999;
  write_trace(path("token.h5"), bad_token);
  const std::string far = edited("far.h5", [&](h5::File& f) {
    rewrite(f, "positions", std::function<void(std::vector<int64_t>&)>([](auto& v) { std::fill(v.begin(), v.end(), int64_t{1000000000}); }));
  });
  const std::string copies = edited("copies.h5", [&](h5::File& f) {
    rewrite(f, "tokens", std::function<void(std::vector<int32_t>&)>([](auto& v) { v.insert(v.begin(), 2000, v[0]); }));
    rewrite(f, "positions", std::function<void(std::vector<int64_t>&)>([](auto& v) { v.insert(v.begin(), 2000, v[0]); }));
    rewrite(f, "calls", std::function<void(std::vector<int32_t>&)>([](auto& v) { v.insert(v.begin(), 2000, v[0]); }));
    rewrite(f, "row_offsets", std::function<void(std::vector<int64_t>&)>([](auto& v) {
      for (std::size_t i = 2; i < v.size(); ++i) v[i] += 2000;  // step 1's rows grow
    }));
  });
  const std::string stop = edited("stop.h5", [](h5::File& f) {
    h5::Group o = f.open_group("output");
    o.remove("stop_reason");
    o.write_string("stop_reason", "eos");
  });
  struct Case {
    std::string file, fragment;
  };
  const std::vector<Case> cases = {
      {path("token.h5"), ": not a valid trace: /steps/drafter_io/tokens: entry "},
      {path("token.h5"), "is token id 999, expected 0 <= id < vocab_size 259"},
      {far, "drafter_positions: entry 0 is position 1000000000, expected 0 <= position <= "},
      {copies, "steps[1].drafter_tokens: entry 1 repeats entry 0"},
      {stop, ": not a valid trace: /output/stop_reason: is \"eos\", but /meta/config_json stop_at_eos is false"},
  };
  for (const Case& c : cases) {
    const CliRun v = run({"validate", "--model", kModels + "target", "--drafter", kModels + "eagle1", "--candidate", c.file});
    EXPECT_EQ(v.code, 2) << c.file << "\n" << v.out << v.err;
    EXPECT_NE(v.err.find(c.file), std::string::npos) << v.err;
    EXPECT_NE(v.err.find(c.fragment), std::string::npos) << c.fragment << "\n" << v.err;
    const CliRun d = run({"trace", "diff", clean, c.file});
    EXPECT_EQ(d.code, 2) << c.file << "\n" << d.out << d.err;
    EXPECT_NE(d.err.find(c.fragment), std::string::npos) << c.fragment << "\n" << d.err;
    EXPECT_EQ(run({"trace", "check", c.file}).code, 1) << c.file;
  }
}

TEST_F(CandidateTraces, OptionErrors) {
  const std::string trace = kGolden + "sequential_code_greedy.h5";
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"validate", "--model", kModels + "target", "--candidate", trace, "--trace", trace}, "not both"},
      {{"validate", "--model", kModels + "target", "--prompt", "x", "--force-drafts"}, "--force-drafts needs --candidate"},
      {{"validate", "--model", kModels + "target", "--candidate", trace, "--backend", "cpu"}, "choose the live side with --against"},
      {{"validate", "--model", kModels + "draft", "--candidate", trace}, "fingerprint"},
      {{"validate", "--model", kModels + "target", "--candidate", path("missing.h5")}, "missing.h5"},
  };
  for (const Case& c : cases) {
    const CliRun r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.fragment << "\n" << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace specdec
