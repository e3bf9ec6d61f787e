// The specdec command line end to end: init-model, generate, record, inspect, and the errors a
// user can hit. Commands run in-process through run_cli with captured output.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "reference/io/vocabulary.hpp"
#include "tests/cli/cli_runner.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run;

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("specdec_cli_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const CliRun r = run({"init-model", "--preset", "tiny", "--seed", "3", "--out", (dir_ / "tiny").string()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string model() { return (dir_ / "tiny").string(); }
  static fs::path dir_;
};
fs::path Cli::dir_;

TEST_F(Cli, GenerateTextPromptJson) {
  const CliRun r = run({"generate", "--model", model(), "--prompt", "Hello", "--max-new-tokens", "6", "--ignore-eos", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["output_tokens"].size(), 6u);
  EXPECT_EQ(j["prompt_tokens"].size(), 6u);  // <bos> + 5 bytes
  EXPECT_EQ(j["prompt_tokens"][0], 0);
  EXPECT_EQ(j["prompt_tokens"][1], 'H' + 3);
  EXPECT_EQ(j["stop_reason"], "max_tokens");
  EXPECT_EQ(j["stats"]["target_forwards"], 6);
  // Sequential decoding: every decode forward is a step of one token (the prefill gives the first).
  EXPECT_EQ(j["stats"]["steps"], 5);
  EXPECT_EQ(j["stats"]["acceptance_length"], 1.0);
  EXPECT_EQ(j["stats"]["drafted_tokens"], 0);
  // Deterministic: the same command gives the same tokens, with any thread count.
  const CliRun again = run({"generate", "--model", model(), "--prompt", "Hello", "--max-new-tokens", "6", "--ignore-eos", "--json", "--threads", "1"});
  EXPECT_EQ(nlohmann::json::parse(again.out)["output_tokens"], j["output_tokens"]);
}

TEST_F(Cli, GenerateTextOutputAndHelp) {
  const CliRun r = run({"generate", "--model", model(), "--prompt-ids", "0,40,41", "--max-new-tokens", "3", "--sampling", "coupled", "--temperature", "0.8", "--seed", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stats    3 tokens"), std::string::npos) << r.out;
  const CliRun h = run({"generate", "--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--max-new-tokens"), std::string::npos);
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"--help"}).code, 0);
}

TEST_F(Cli, RecordThenInspectTrace) {
  const std::string trace = (dir_ / "run.h5").string();
  CliRun r = run({"record", "--model", model(), "--prompt", "abc", "--max-new-tokens", "5", "--ignore-eos", "--out", trace, "--logits", "full"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Trace t = read_trace(trace);
  EXPECT_EQ(t.steps.size(), 5u);
  EXPECT_EQ(t.output.size(), 5u);
  EXPECT_TRUE(t.steps[0].target_logits[0].is_full());
  EXPECT_EQ(t.steps[0].target_logits[0].full.size(), 259u);
  EXPECT_EQ(t.meta.method, "sequential");
  // The recorded output is what generate prints.
  const CliRun g = run({"generate", "--model", model(), "--prompt", "abc", "--max-new-tokens", "5", "--ignore-eos", "--json"});
  EXPECT_EQ(nlohmann::json::parse(g.out)["output_tokens"].get<std::vector<int32_t>>(), t.output);

  r = run({"inspect", trace, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "trace");
  EXPECT_EQ(j["steps"], 5);
  EXPECT_EQ(j["target_logit_rows"]["full"], 5);
  EXPECT_EQ(j["exactness_contract"], exact::kContractVersion);
  EXPECT_EQ(t.meta.exactness_contract, exact::kContractVersion);
  // With the recorded model's tokenizer at hand, the prompt and output as text too.
  EXPECT_EQ(j["output_text"], nlohmann::json::parse(g.out)["output_text"]) << j.dump();
  EXPECT_EQ(j["prompt_text"].get<std::string>().substr(j["prompt_text"].get<std::string>().size() - 3), "abc") << j.dump();
  r = run({"inspect", trace});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("contract   exactness contract ") + exact::kContractVersion + "\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("abc\"\noutput"), std::string::npos) << r.out;

  // What specdec forward writes is inspected too: what ran, the tokens with their text, the shapes.
  const std::string forward = (dir_ / "forward.h5").string();
  ASSERT_EQ(run({"forward", "--model", model(), "--prompt", "abc", "--out", forward}).code, 0);
  r = run({"inspect", forward});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("forward    " + forward + " (specdec forward: one causal forward pass over /tokens)\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nlogits     (4, 259)\n"), std::string::npos) << r.out;
  const auto fj = nlohmann::json::parse(run({"inspect", forward, "--json"}).out);
  EXPECT_EQ(fj["kind"], "forward");
  EXPECT_EQ(fj["tokens"].size(), 4u);
  EXPECT_EQ(fj["logits_shape"], nlohmann::json({4, 259}));
  EXPECT_EQ(fj["model_fingerprint"], j["models"]["target"]["fingerprint"]);
  EXPECT_FALSE(fj.contains("draft"));
}

// Traces of another exactness contract, or of none, are still inspected; the contract is shown.
TEST_F(Cli, InspectShowsTheContractOfOlderTraces) {
  const std::string trace = (dir_ / "contract.h5").string();
  ASSERT_EQ(run({"record", "--model", model(), "--prompt", "abc", "--max-new-tokens", "3", "--out", trace}).code, 0);
  Trace t = read_trace(trace);
  t.meta.exactness_contract = "1";
  const std::string older = (dir_ / "contract_1.h5").string();
  write_trace(older, t);
  t.meta.exactness_contract.clear();
  const std::string none = (dir_ / "contract_none.h5").string();
  write_trace(none, t);

  CliRun r = run({"inspect", older, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["exactness_contract"], "1");
  r = run({"inspect", older});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("exactness contract 1 (this specdec: ") + exact::kContractVersion), std::string::npos)
      << r.out;
  r = run({"inspect", none, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["exactness_contract"].is_null()) << r.out;
  r = run({"inspect", none});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("exactness contract none recorded (this specdec: "), std::string::npos) << r.out;
}

TEST_F(Cli, InspectCheckpoint) {
  const CliRun r = run({"inspect", model(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "checkpoint");
  EXPECT_EQ(j["config"]["vocab_size"], 259);
  EXPECT_EQ(j["tensors"].size(), 1u + 4u * 9u + 1u + 1u);  // embed, 4 layers x 9, norm, lm_head
  const CliRun text = run({"inspect", model(), "--tensors"});
  EXPECT_NE(text.out.find("model.layers.3.mlp.down_proj.weight"), std::string::npos) << text.out;
}

TEST_F(Cli, GenerateStreamPrintsTheSameText) {
  for (const char* method : {"sequential", "draft"}) {
    std::vector<std::string> args = {"generate", "--model", model(), "--prompt", "Hello", "--max-new-tokens", "12", "--ignore-eos",
                                     "--method", method};
    if (std::string(method) == "draft") args.insert(args.end(), {"--drafter", model(), "--k", "3"});
    const CliRun plain = run(args);
    args.push_back("--stream");
    const CliRun streamed = run(args);
    ASSERT_EQ(plain.code, 0) << plain.err;
    ASSERT_EQ(streamed.code, 0) << streamed.err;
    const auto line = [](const std::string& out, const char* label) {
      const std::size_t at = out.find(label);
      return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
    };
    EXPECT_EQ(line(streamed.out, "output   "), line(plain.out, "output   ")) << method;
    EXPECT_EQ(line(streamed.out, "tokens   "), line(plain.out, "tokens   ")) << method;
  }
  const CliRun json = run({"generate", "--model", model(), "--prompt", "Hi", "--stream", "--json"});
  EXPECT_EQ(json.code, 1);
  EXPECT_NE(json.err.find("--stream"), std::string::npos) << json.err;
}

TEST_F(Cli, TokenizeEncodesAndDecodes) {
  const CliRun r = run({"tokenize", "--model", model(), "--text", "Hi\xC3\xA9", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json({0, 'H' + 3, 'i' + 3, 0xC3 + 3, 0xA9 + 3}));  // <bos>, then bytes
  EXPECT_EQ(j["tokens"][0], "<bos>");
  const CliRun bare = run({"tokenize", "--model", model(), "--text", "Hi", "--no-special", "--json"});
  EXPECT_EQ(nlohmann::json::parse(bare.out)["ids"], nlohmann::json({'H' + 3, 'i' + 3}));
  const CliRun d = run({"tokenize", "--model", model(), "--decode", "0,75,108", "--json"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["text"], "<bos>Hi");
  const CliRun skipped = run({"tokenize", "--model", model(), "--decode", "0,75,108", "--skip-special"});
  EXPECT_EQ(skipped.out, "Hi\n");
  const CliRun text = run({"tokenize", "--model", model(), "--text", "a"});
  EXPECT_NE(text.out.find("vocab.json (bytes, 259 token ids)"), std::string::npos) << text.out;
  // Each token's text is quoted, so a space, a newline or a quote shows; ids are right-aligned.
  const CliRun spaced = run({"tokenize", "--model", model(), "--text", "a \n\"\\", "--no-special"});
  ASSERT_EQ(spaced.code, 0) << spaced.err;
  EXPECT_NE(spaced.out.find(R"(  100  "a"
   35  " "
   13  "\n"
   37  "\""
   95  "\\"
)"), std::string::npos) << spaced.out;
  // Errors: no input, two inputs, a bad id, a directory without a tokenizer, a tokenizer too big.
  EXPECT_EQ(run({"tokenize", "--model", model()}).code, 1);
  EXPECT_EQ(run({"tokenize", "--model", model(), "--text", "a", "--decode", "1"}).code, 1);
  const CliRun bad = run({"tokenize", "--model", model(), "--decode", "1,x"});
  EXPECT_NE(bad.err.find("--decode: 'x' is not a token id"), std::string::npos) << bad.err;
  const fs::path none = dir_ / "no-tokenizer";
  fs::create_directories(none);
  const CliRun missing = run({"tokenize", "--model", none.string(), "--text", "a"});
  EXPECT_NE(missing.err.find("has no tokenizer"), std::string::npos) << missing.err;
  const fs::path big = dir_ / "big-vocab";
  fs::copy(model(), big);
  Vocabulary::bytes(3, {{"<bos>", 0}, {"<eos>", 1}, {"<big>", 400}}).save(big / "vocab.json");
  const CliRun too_big = run({"generate", "--model", big.string(), "--prompt", "a"});
  EXPECT_EQ(too_big.code, 1);
  EXPECT_NE(too_big.err.find("has token ids up to 400, but the model's config has vocab_size 259"), std::string::npos) << too_big.err;
  const CliRun text_without = run({"generate", "--model", none.string(), "--prompt", "a"});
  EXPECT_EQ(text_without.code, 1);
}

TEST_F(Cli, InitModelIsDeterministicAndRefusesOverwrite) {
  // Same preset and seed: the same weights (fingerprint), whatever the storage layout.
  const std::string same = (dir_ / "tiny_again").string();
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--seed", "3", "--out", same, "--shard-mb", "2"}).code, 0);
  EXPECT_TRUE(fs::exists(fs::path(same) / "model.safetensors.index.json"));
  const auto fp = [](const std::string& m) { return nlohmann::json::parse(run({"inspect", m, "--json"}).out)["fingerprint"]; };
  EXPECT_EQ(fp(same), fp(model()));
  const std::string bf16 = (dir_ / "tiny_bf16").string();
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--seed", "3", "--out", bf16, "--dtype", "BF16"}).code, 0);
  EXPECT_NE(fp(bf16), fp(model()));  // rounded weights are other weights
  EXPECT_EQ(run({"generate", "--model", bf16, "--prompt", "x", "--max-new-tokens", "2"}).code, 0);
  const CliRun again = run({"init-model", "--preset", "tiny", "--out", same});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
}

TEST_F(Cli, DraftMethodMatchesSequentialAndReportsAcceptance) {
  const auto seq = nlohmann::json::parse(
      run({"generate", "--model", model(), "--prompt", "The", "--max-new-tokens", "10", "--ignore-eos", "--json"}).out);
  // The model drafting for itself: every draft is accepted, AL = K + 1.
  const CliRun self = run({"generate", "--model", model(), "--method", "draft", "--drafter", model(), "--k", "3",
                           "--prompt", "The", "--max-new-tokens", "10", "--ignore-eos", "--json"});
  ASSERT_EQ(self.code, 0) << self.err;
  const auto j = nlohmann::json::parse(self.out);
  EXPECT_EQ(j["output_tokens"], seq["output_tokens"]);
  EXPECT_DOUBLE_EQ(j["stats"]["acceptance_length"].get<double>(), 4.0);
  EXPECT_EQ(j["method"]["k"], 3);
}

TEST_F(Cli, RecordedSpeculativeTraceReplaysIdentically) {
  const std::string a = (dir_ / "draft_a.h5").string(), b = (dir_ / "draft_b.h5").string();
  for (const std::string& out : {a, b}) {
    const CliRun r = run({"record", "--model", model(), "--method", "draft", "--drafter", model(), "--k", "2",
                          "--sampling", "sample", "--seed", "11", "--prompt", "ab", "--max-new-tokens", "9", "--ignore-eos",
                          "--out", out});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const Trace ta = read_trace(a), tb = read_trace(b);
  std::string diff;
  EXPECT_TRUE(semantically_equal(ta, tb, &diff)) << diff;
  EXPECT_EQ(ta.meta.method, "draft");
  ASSERT_GE(ta.steps.size(), 2u);
  EXPECT_EQ(ta.steps[1].draft_tokens.size(), 2u);
  EXPECT_EQ(ta.steps[1].target_logits.size(), 3u);
  EXPECT_FALSE(ta.steps[1].accept_uniforms.empty());
  EXPECT_EQ(ta.meta.models.count("drafter"), 1u);
}

// A draft-free method's generate --json summarises where its drafts came from, consistently with
// the stats and with the sources its trace records; other methods have no such key.
TEST(GenerateJson, DraftFreeMethodsSummariseTheirSources) {
  const std::string target = std::string(SPECDEC_SOURCE_DIR) + "/models/target";
  const fs::path trace = fs::temp_directory_path() / ("specdec_cli_sources_" + std::to_string(::getpid()) + ".h5");
  for (const std::string method : {"ngram,n_min=1,n_max=3", "suffix"}) {
    const std::vector<std::string> args = {"--model", target, "--method", method, "--k", "4", "--prompt",
                                           "the light, and the light was good; the light", "--max-new-tokens", "20", "--ignore-eos"};
    std::vector<std::string> gen = {"generate", "--json"}, rec = {"record", "--out", trace.string()};
    gen.insert(gen.end(), args.begin(), args.end());
    rec.insert(rec.end(), args.begin(), args.end());
    const CliRun g = run(gen);
    ASSERT_EQ(g.code, 0) << method << ": " << g.err;
    const auto j = nlohmann::json::parse(g.out);
    ASSERT_TRUE(j.contains("draft_sources")) << method << ": " << g.out;
    const auto& d = j["draft_sources"];
    EXPECT_EQ(d["steps"], j["stats"]["steps"]) << method;
    EXPECT_EQ(d["with_match"].get<int>() + d["without_match"].get<int>(), d["steps"].get<int>()) << method;
    EXPECT_EQ(d["drafts_from_context"].get<int>() + d["drafts_from_responses"].get<int>(), j["stats"]["drafted_tokens"].get<int>()) << method;
    EXPECT_GT(d["with_match"].get<int>(), 0) << method;
    ASSERT_EQ(run(rec).code, 0) << method;
    const Trace t = read_trace(trace);
    int with = 0;
    double sum = 0;
    for (const StepRecord& s : t.steps) {
      if (s.draft_sources.empty()) continue;
      ++with;
      sum += s.draft_sources.front().match_length;
    }
    EXPECT_EQ(d["with_match"], with) << method;
    EXPECT_DOUBLE_EQ(d["mean_match_length"].get<double>(), sum / with) << method;
  }
  fs::remove(trace);
  const CliRun eagle = run({"generate", "--json", "--model", target, "--method", "eagle", "--drafter", std::string(SPECDEC_SOURCE_DIR) + "/models/eagle1",
                            "--prompt", "And", "--max-new-tokens", "4"});
  ASSERT_EQ(eagle.code, 0) << eagle.err;
  EXPECT_FALSE(nlohmann::json::parse(eagle.out).contains("draft_sources"));
}

TEST_F(Cli, ExplainShowsDecisions) {
  const CliRun r = run({"explain", "--model", model(), "--method", "draft", "--drafter", model(), "--k", "2", "--prompt", "a",
                        "--max-new-tokens", "5", "--ignore-eos", "--sampling", "sample", "--seed", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("accept d1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("u="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("AL "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "colour codes when not on a terminal";
  const CliRun colored = run({"explain", "--model", model(), "--prompt", "a", "--max-new-tokens", "2", "--color", "always"});
  EXPECT_NE(colored.out.find("\033["), std::string::npos);
}

// Every method through the command line: greedy output equals sequential, and a recorded trace
// (sample mode, so acceptance draws are recorded) reads back and re-runs to identical decisions.
TEST_F(Cli, EveryMethodMatchesSequentialAndReplaysItsTrace) {
  for (const std::string kind : {"eagle1", "eagle3", "peagle"}) {
    const CliRun r = run({"init-model", "--head", kind, "--target", model(), "--aux-layers", "1,2,3", "--seed", "9",
                          "--out", (dir_ / kind).string()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::string eagle1 = (dir_ / "eagle1").string(), eagle3 = (dir_ / "eagle3").string(), peagle = (dir_ / "peagle").string();
  const std::vector<std::vector<std::string>> methods = {
      {"--method", "sequential"},
      {"--method", "draft", "--drafter", model(), "--k", "3"},
      {"--method", "eagle", "--drafter", eagle1, "--k", "4"},
      {"--method", "eagle", "--drafter", eagle1, "--tree", "dynamic", "--depth", "3", "--tree-top-k", "3", "--total-tokens", "10"},
      {"--method", "eagle3", "--drafter", eagle3, "--tree", "mc_sim_7b_63"},
      {"--method", "peagle", "--drafter", peagle, "--k", "5"},
      {"--method", "peagle", "--drafter", peagle, "--tree", "mc_sim_7b_63"},
  };
  const std::vector<std::string> common = {"--model", model(), "--prompt", "To be", "--max-new-tokens", "12", "--ignore-eos"};
  auto with = [&](std::vector<std::string> head, const std::vector<std::string>& m, std::vector<std::string> tail) {
    head.insert(head.end(), common.begin(), common.end());
    head.insert(head.end(), m.begin(), m.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const auto sequential = nlohmann::json::parse(run(with({"generate"}, methods[0], {"--json"})).out)["output_tokens"];
  for (size_t i = 0; i < methods.size(); ++i) {
    const std::string name = methods[i][1] + " #" + std::to_string(i);
    const CliRun g = run(with({"generate"}, methods[i], {"--json"}));
    ASSERT_EQ(g.code, 0) << name << ": " << g.err;
    EXPECT_EQ(nlohmann::json::parse(g.out)["output_tokens"], sequential) << name;
    std::string stem = "method";  // appended: GCC 12 warns falsely (-Wrestrict) on "m" + temporary
    stem += std::to_string(i);
    const std::string a = (dir_ / (stem + "a.h5")).string(), b = (dir_ / (stem + "b.h5")).string();
    for (const std::string& out : {a, b}) {
      const CliRun r = run(with({"record"}, methods[i], {"--sampling", "sample", "--seed", "21", "--out", out}));
      ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    }
    const Trace ta = read_trace(a), tb = read_trace(b);
    std::string diff;
    EXPECT_TRUE(semantically_equal(ta, tb, &diff)) << name << ": " << diff;
    EXPECT_EQ(ta.meta.method, methods[i][1]) << name;
  }
  // A head of the wrong kind for the method is refused with a clear message.
  const CliRun wrong = run(with({"generate"}, {"--method", "eagle3", "--drafter", eagle1}, {}));
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("needs an eagle3 head"), std::string::npos) << wrong.err;
}

// compare runs one prompt through several methods; drafters default to the bundled layout
// (siblings of the target directory: draft, eagle1, eagle3, peagle).
TEST_F(Cli, CompareRunsMethodsSideBySideAndChecksAgreement) {
  const fs::path zoo = dir_ / "zoo";
  fs::create_directories(zoo);
  fs::copy(model(), zoo / "target", fs::copy_options::recursive);
  fs::copy(model(), zoo / "draft", fs::copy_options::recursive);
  for (const std::string kind : {"eagle1", "peagle"}) {
    const CliRun r = run({"init-model", "--head", kind, "--target", (zoo / "target").string(), "--aux-layers", "1,2,3",
                          "--seed", "4", "--out", (zoo / kind).string()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::vector<std::string> base = {"compare", "--model", (zoo / "target").string(), "--prompt", "To be",
                                         "--max-new-tokens", "10", "--ignore-eos"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const CliRun text = run(with({"--methods", "sequential,draft,eagle,peagle"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("all outputs agree token for token"), std::string::npos) << text.out;
  for (const char* m : {"sequential", "draft", "eagle", "peagle"}) EXPECT_NE(text.out.find(m), std::string::npos) << m;

  const CliRun coupled = run(with({"--methods", "sequential,peagle=" + (zoo / "peagle").string(), "--sampling", "coupled",
                                   "--temperature", "0.9", "--json"}));
  ASSERT_EQ(coupled.code, 0) << coupled.err;
  const auto j = nlohmann::json::parse(coupled.out);
  EXPECT_TRUE(j["all_outputs_agree"].get<bool>());
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["output_tokens"], j["runs"][1]["output_tokens"]);
  EXPECT_GE(j["runs"][1]["acceptance_length"].get<double>(), 1.0);

  // Two variants of one method side by side, each with its shape and drafter shown.
  const CliRun variants = run(with({"--methods", "sequential,eagle:k=2,eagle:tree=dynamic:depth=3:tree-top-k=2:total-tokens=6"}));
  ASSERT_EQ(variants.code, 0) << variants.err;
  EXPECT_NE(variants.out.find("drafter  eagle k=2: " + (zoo / "eagle1").string() + "\n"), std::string::npos) << variants.out;
  EXPECT_NE(variants.out.find("\neagle k=2 "), std::string::npos) << variants.out;
  EXPECT_NE(variants.out.find("\neagle tree=dynamic depth=3 top_k=2 total_tokens=6 "), std::string::npos) << variants.out;
  EXPECT_NE(variants.out.find("all outputs agree token for token"), std::string::npos) << variants.out;
  const auto vj = nlohmann::json::parse(run(with({"--methods", "eagle:k=2,ngram:n_min=2", "--json"})).out);
  EXPECT_EQ(vj["runs"][0]["method"]["k"], 2);
  EXPECT_EQ(vj["runs"][1]["method"]["n_min"], 2);
  for (const auto& [methods, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"eagle:k=x", "--methods eagle:k=x: k: 'x' is not an integer"},
           {"eagle:deep", "--methods eagle:deep: 'deep' is not KEY=VALUE"},
           {"ngram:n_mni=2", "n_mni"},
           {"eagle:k=0", "--k must be >= 1"}}) {
    const CliRun bad = run(with({"--methods", methods}));
    EXPECT_EQ(bad.code, 1) << methods;
    EXPECT_NE(bad.err.find(fragment), std::string::npos) << methods << ": " << bad.err;
  }

  const CliRun unknown = run(with({"--methods", "sequential,hydra"}));
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("unknown method 'hydra'"), std::string::npos) << unknown.err;
  const CliRun missing = run(with({"--methods", "eagle3"}));  // no zoo/eagle3
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("eagle3"), std::string::npos) << missing.err;
  const CliRun stray = run(with({"--method", "eagle"}));
  EXPECT_EQ(stray.code, 1);
  EXPECT_NE(stray.err.find("--methods"), std::string::npos) << stray.err;

  // inspect summarises a drafter head from its config alone.
  const CliRun head = run({"inspect", (zoo / "peagle").string()});
  ASSERT_EQ(head.code, 0) << head.err;
  EXPECT_NE(head.out.find("peagle (aws layout)"), std::string::npos) << head.out;
  EXPECT_NE(head.out.find("trained depth"), std::string::npos) << head.out;
  const auto hj = nlohmann::json::parse(run({"inspect", (zoo / "eagle1").string(), "--json"}).out);
  EXPECT_EQ(hj["kind"], "drafter_head");
  EXPECT_EQ(hj["head"], "eagle1");
}

// A bundled model or drafter (models/NAME).
std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

TEST_F(Cli, UserErrorsGiveMessagesAndExitCodes) {
  // A target with no drafter beside it (other tests put heads beside model()).
  const std::string alone = (dir_ / "alone" / "tiny").string();
  if (!fs::exists(alone)) {
    fs::create_directories(dir_ / "alone");
    fs::copy(model(), alone, fs::copy_options::recursive);
  }
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"generate", "--model", (dir_ / "missing").string(), "--prompt", "x"}, "missing"},
      {{"generate", "--model", model(), "--prompt-ids", "1,x"}, "'x' is not a token id"},
      {{"generate", "--model", model(), "--prompt-ids", "999"}, "'999' is not a token id in [0, 259)"},
      {{"generate", "--model", model()}, "no prompt"},
      {{"generate", "--model", model(), "--prompt", "a", "--sampling", "beam"}, "beam"},
      {{"generate", "--model", model(), "--prompt", "a", "--sampling", "sample", "--temperature", "0"}, "temperature"},
      {{"generate", "--model", model(), "--prompt", "a", "--method", "medusa2"}, "known methods"},
      {{"generate", "--model", model(), "--prompt", "a", "--method", "medusa"}, "--method medusa needs --drafter DIR (Medusa heads)"},
      {{"generate", "--model", model(), "--prompt", "a", "--method", "eagel3"}, "unknown method 'eagel3'; known methods: sequential, draft, eagle, eagle3, peagle, mtp, medusa, ngram, prompt-lookup, ngram-tree, suffix, suffix-tree; did you mean eagle3?"},
      {{"generate", "--model", model(), "--prompt", "a", "--method", "mtp,variant=vlm"}, "variant must be checkpoint, vllm or sglang, got 'vlm'; did you mean vllm?"},
      // An alias names its method (the registry's spellings, in every command).
      {{"generate", "--model", model(), "--prompt", "a", "--method", "EAGLE-1"}, "--method eagle needs --drafter DIR (an EAGLE-1 head)"},
      {{"generate", "--model", model(), "--prompt", "a", "--bogus"}, "bogus"},
      {{"generate", "--prompt", "a"}, "--model"},
      {{"record", "--model", model(), "--prompt", "a", "--out", (dir_ / "no_dir" / "t.h5").string()}, "no_dir"},
      {{"record", "--model", model(), "--prompt", "a", "--out", (dir_ / "t.h5").string(), "--logits", "some"}, "--logits"},
      {{"inspect", (dir_ / "nothing").string()}, "no such file"},
      {{"init-model", "--preset", "huge", "--out", (dir_ / "h").string()}, "known presets"},
      {{"generate", "--model", model(), "--prompt", "a", "--method", "draft"}, "--drafter"},
      {{"generate", "--model", model(), "--prompt", "a", "--method", "draft", "--drafter", model(), "--k", "0"}, "--k must be >= 1"},
      {{"explain", "--model", model(), "--prompt", "a", "--color", "pink"}, "--color"},
      // What a user mistypes or mixes up is named, with what was meant.
      {{"generate", "--model", model() + "/config.json", "--prompt", "a"},
       "config.json' is a JSON file, not weights: give the checkpoint directory that holds it ('" + model() + "')"},
      {{"generate", "--model", model(), "--prompt", "a", "--temprature", "0.5"}, "unrecognised option '--temprature'; did you mean --temperature?"},
      {{"generate", "--model", model(), "--prompt", "a", "--max_new_tokens=4"}, "unrecognised option '--max_new_tokens'; did you mean --max-new-tokens?"},
      {{"compare", "--model", model(), "--prompt", "a", "--method", "eagle", "--drafterr", "x"}, "did you mean --drafter?"},
      {{"simulate", "--modl", "llama-3.1-8b"}, "unrecognised option '--modl'; did you mean --model?"},
      {{"generate", "--model", bundled("target"), "--prompt", "a", "--method", "draft", "--drafter", bundled("eagle1")},
       "holds an EAGLE-1 head (decode with --method eagle), not the draft language model --method draft needs"},
      {{"generate", "--model", bundled("target"), "--prompt", "a", "--method", "draft", "--drafter", bundled("medusa")},
       "holds Medusa heads (decode with --method medusa)"},
      {{"generate", "--model", bundled("target"), "--prompt", "a", "--method", "eagle", "--drafter", bundled("eagle1"), "--tree", "mc_sim_7b_64"},
       "tree 'mc_sim_7b_64' is neither a named tree (chain, dynamic, mc_sim_7b_63; did you mean mc_sim_7b_63?) nor a file"},
      {{"generate", "--model", bundled("target"), "--prompt", "a", "--method", "peagle", "--drafter", bundled("peagle"), "--k", "12"},
       "allow them with --force-depth"},
      {{"compare", "--model", alone, "--prompt", "a", "--methods", "sequential,eagle"},
       "--methods eagle: no drafter given, and the bundled layout's '" + (dir_ / "alone" / "eagle1").string() + "' (beside --model) does not exist; name one as eagle=DIR"},
  };
  for (const Case& c : cases) {
    const CliRun r = run(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    EXPECT_EQ(r.code, 1) << cmd << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << cmd << "\nstderr: " << r.err;
  }
  const CliRun typo = run({"genrate", "--model", model()});
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.err.find("unknown command 'genrate'; did you mean generate?"), std::string::npos) << typo.err;
  EXPECT_FALSE(fs::exists(dir_ / "t.h5"));
  EXPECT_EQ(run({"frobnicate"}).code, 2);
}

}  // namespace
}  // namespace specdec
