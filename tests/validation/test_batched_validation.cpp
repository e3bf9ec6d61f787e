// Batched traces end to end: `specdec record --prompts FILE --concurrency B` writes one, `trace
// check` passes it, and `validate --trace` / `--candidate` replay every sequence alone under its
// own sequence id and pass. A batched candidate with a bug planted in one sequence (its logits
// perturbed at one step; its decode positions off by one, with per-layer states) fails naming
// that sequence, the step and, with layer states, the layer; a malformed one is a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/decoding/sequential.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "traces/batched_trace.hpp"
#include "traces/hdf5.hpp"
#include "validation/observed_model.hpp"
#include "validation/run_recorder.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::run;

const std::string kModels = SPECDEC_SOURCE_DIR "/models/";

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "wanted: " << (part) << "\ngot: " << (text)

// An engine whose decode steps feed RoPE the position one past the truth (its prefill is right):
// the classic off-by-one of a pending token's position.
class ShiftedDecodePositions final : public LanguageModel {
 public:
  explicit ShiftedDecodePositions(const LanguageModel& inner) : inner_(inner) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override {
    if (cache.length() == 0) return inner_.forward(cache, request);
    ForwardRequest r = request;
    if (r.positions.empty())
      for (std::size_t t = 0; t < r.tokens.size(); ++t) r.positions.push_back(cache.length() + static_cast<int32_t>(t));
    for (int32_t& p : r.positions) ++p;
    return inner_.forward(cache, r);
  }

 private:
  const LanguageModel& inner_;
};

class BatchedTraces : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<testing::ScratchDir>("batched-validation");
    std::ofstream(path("prompts.json")) << R"({"prose": ["And God said", "In the beginning"], "code": ["def main():"]})";
  }
  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }

  // `specdec record --prompts` of the three prompts, two at a time.
  std::string record(const std::string& name, std::vector<std::string> method) const {
    std::vector<std::string> args = {"record", "--model", kModels + "target", "--prompts", path("prompts.json"), "--concurrency", "2",
                                     "--max-new-tokens", "8", "--ignore-eos", "--logits", "full", "--out", path(name)};
    args.insert(args.end(), method.begin(), method.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return path(name);
  }

  static nlohmann::json validate_json(std::vector<std::string> args, int expected_code) {
    args.insert(args.begin(), {"validate", "--model", kModels + "target"});
    args.push_back("--json");
    const CliRun r = run(args);
    EXPECT_EQ(r.code, expected_code) << r.out << r.err;
    if (r.code != 0 && r.code != 1) return {};
    return nlohmann::json::parse(r.out);
  }

  std::unique_ptr<testing::ScratchDir> dir_;
};

TEST_F(BatchedTraces, RecordCheckAndValidateRoundTrip) {
  const std::vector<std::string> eagle = {"--method", "eagle", "--drafter", kModels + "eagle1", "--k", "3",
                                          "--sampling", "sample", "--temperature", "0.9", "--seed", "4"};
  const std::string trace = record("batch.h5", eagle);
  const CliRun check = run({"trace", "check", trace});
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_CONTAINS(check.out, "valid specdec trace (schema 2.1, batched, 3 sequences");

  // Request i is sequence i; its steps are scheduled two sequences at a time.
  const BatchedTrace b = read_batched_trace(trace);
  ASSERT_EQ(b.sequences.size(), 3u);
  EXPECT_EQ(b.max_in_flight, 2);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.sequences[i].id, i);
    EXPECT_EQ(nlohmann::json::parse(b.sequences[i].trace.meta.config_json)["sequence"], i);
  }
  EXPECT_EQ(b.schedule[0].size(), 2u);

  const auto j = validate_json({"--trace", trace}, 0);
  EXPECT_EQ(j["result"], "pass") << j.dump();
  EXPECT_EQ(j["kind"], "trace");
  ASSERT_EQ(j["sequences"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["sequences"][i]["sequence"], i);
    EXPECT_EQ(j["sequences"][i]["result"], "pass");
    EXPECT_EQ(j["sequences"][i]["steps_compared"], j["sequences"][i]["reference_steps"]);
  }
  EXPECT_TRUE(j["failure"].is_null());
  const CliRun text = run({"validate", "--model", kModels + "target", "--candidate", trace});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "PASS  batched candidate " + trace + ": 3 sequences");
  for (int i = 0; i < 3; ++i) {
    EXPECT_CONTAINS(text.out, "PASS  candidate " + trace + " sequence " + std::to_string(i) + " against reference, method eagle");
  }

  // One sequence written alone (schema 1.2, sequence 2) replays alone under its id too.
  write_trace(path("alone.h5"), sequence_trace(b, 2));
  const auto alone = validate_json({"--trace", path("alone.h5")}, 0);
  EXPECT_EQ(alone["result"], "pass") << alone.dump();
}

TEST_F(BatchedTraces, PerturbedLogitsInOneSequenceFailNamingItAndTheStep) {
  const std::string trace = record("draft.h5", {"--method", "draft", "--drafter", kModels + "draft", "--k", "3"});
  BatchedTrace b = read_batched_trace(trace);
  ASSERT_GE(b.sequences[1].trace.steps.size(), 3u);
  std::vector<float>& row = b.sequences[1].trace.steps[2].target_logits[0].full;
  *std::min_element(row.begin(), row.end()) += 1.0f;  // no decision changes; the row is beyond the NMSE bound
  write_batched_trace(path("bug.h5"), b);

  const auto j = validate_json({"--candidate", path("bug.h5")}, 1);
  EXPECT_EQ(j["result"], "fail");
  EXPECT_EQ(j["sequences_failed"], nlohmann::json::array({1}));
  EXPECT_EQ(j["failure"]["sequence"], 1) << j.dump();
  EXPECT_EQ(j["failure"]["step"], 2);
  EXPECT_EQ(j["failure"]["what"], "target logits");
  EXPECT_EQ(j["sequences"][0]["result"], "pass");
  EXPECT_EQ(j["sequences"][2]["result"], "pass");
  const CliRun text = run({"validate", "--model", kModels + "target", "--candidate", path("bug.h5")});
  EXPECT_EQ(text.code, 1);
  EXPECT_CONTAINS(text.out, "FAIL  batched candidate " + path("bug.h5") + ": 3 sequences");
  EXPECT_CONTAINS(text.out, "1 diverge; first: sequence 1 at step 2 (target logits)");
  EXPECT_CONTAINS(text.out, "FAIL  candidate " + path("bug.h5") + " sequence 1 against reference");
}

TEST_F(BatchedTraces, OneSequencesPositionsOffByOneAreNamedWithStepAndLayer) {
  const std::string trace = record("sequential.h5", {});
  BatchedTrace b = read_batched_trace(trace);
  TraceSequence& q = b.sequences[2];

  // Sequence 2 as the buggy engine decodes it, with its per-layer states at each step's last row.
  const LlamaModel loaded = load_llama_checkpoint(kModels + "target");
  const Transformer reference(loaded.config, loaded.weights);
  const ShiftedDecodePositions engine(reference);
  const validation::ObservedModel observed(engine, false, nullptr, true);
  const SamplingParams sampling;
  GenerationOptions options;
  options.max_new_tokens = 8;
  options.stop_at_eos = false;
  options.sequence = q.id;
  validation::RunRecorder recorder(q.trace.meta, sampling, q.id);
  decode_sequential(observed, q.trace.prompt, sampling, options, &recorder);
  Trace t = recorder.take().trace;
  const int L = loaded.config.num_hidden_layers, H = loaded.config.hidden_size;
  t.target_layers = {L, H, {"input_norm", "attention", "post_attention_norm", "mlp"}};
  ASSERT_EQ(observed.records().size(), t.steps.size());
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    const validation::ForwardRecord& f = observed.records()[s];
    const Eigen::Index last = static_cast<Eigen::Index>(f.tokens.size()) - 1;
    t.steps[s].layer_row_nodes = {-1};
    for (const Matrix& m : f.layer_states) t.steps[s].layer_hidden.insert(t.steps[s].layer_hidden.end(), m.row(last).data(), m.row(last).data() + H);
  }
  ASSERT_EQ(t.steps.size(), q.trace.steps.size());  // same schedule: one token per step
  q.trace.steps = t.steps;
  q.trace.output = t.output;
  q.trace.target_layers = t.target_layers;
  write_batched_trace(path("positions.h5"), b);

  const auto j = validate_json({"--candidate", path("positions.h5")}, 1);
  EXPECT_EQ(j["failure"]["sequence"], 2) << j.dump();
  EXPECT_EQ(j["failure"]["step"], 1);  // the first decode step; the prefill is right
  EXPECT_EQ(j["failure"]["layer"], 0);
  EXPECT_EQ(j["failure"]["substep"], "attention");
  EXPECT_EQ(j["sequences_failed"], nlohmann::json::array({2}));
  const CliRun text = run({"validate", "--model", kModels + "target", "--candidate", path("positions.h5")});
  EXPECT_CONTAINS(text.out, "first: sequence 2 at step 1 (target logits, layer 0 attention)");
  EXPECT_CONTAINS(text.out, "first out of tolerance inside the target forward: layer 0, attention");
}

TEST_F(BatchedTraces, MalformedOnesAreClearErrors) {
  const std::string trace = record("plain.h5", {});
  {
    h5::File f = h5::File::open_read_write(trace);
    f.open_group("sequences").remove("1");
    f.close();
  }
  for (const char* mode : {"--trace", "--candidate"}) {
    const CliRun r = run({"validate", "--model", kModels + "target", mode, trace});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_CONTAINS(r.err, trace + ": not a valid trace: /sequences/1: missing, expected the group of sequence 1");
  }
  const CliRun check = run({"trace", "check", trace});
  EXPECT_EQ(check.code, 1);
  EXPECT_CONTAINS(check.out, trace + ": /sequences/1: missing, expected the group of sequence 1");

  // A batched trace is named as such where a tool reads one sequence.
  const CliRun diff = run({"trace", "diff", trace, trace});
  EXPECT_EQ(diff.code, 2);
  EXPECT_CONTAINS(diff.err, "a batched trace (schema 2.1");

  const std::vector<std::vector<std::string>> options = {
      {"record", "--model", kModels + "target", "--prompt", "x", "--concurrency", "2", "--out", path("x.h5")},
      {"record", "--model", kModels + "target", "--prompts", path("prompts.json"), "--prompt", "x", "--out", path("x.h5")},
      {"record", "--model", kModels + "target", "--prompts", path("prompts.json"), "--concurrency", "0", "--out", path("x.h5")},
      {"record", "--model", kModels + "target", "--prompts", path("missing.json"), "--out", path("x.h5")},
  };
  const std::vector<std::string> fragments = {"--concurrency needs --prompts", "not both", "--concurrency must be in [1,",
                                              "missing.json"};
  for (std::size_t i = 0; i < options.size(); ++i) {
    const CliRun r = run(options[i]);
    EXPECT_NE(r.code, 0) << fragments[i];
    EXPECT_CONTAINS(r.err, fragments[i]);
  }
  EXPECT_FALSE(std::filesystem::exists(path("x.h5")));
}

}  // namespace
}  // namespace specdec
