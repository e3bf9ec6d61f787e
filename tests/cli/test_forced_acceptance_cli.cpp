// --forced-acceptance on `specdec bench` and `specdec generate` with the bundled target and draft
// model: the run reports the forced acceptance and that its output is not meaningful text, the
// whole-count forms give exact tokens per step, a fractional count (TensorRT-LLM's float) lands
// between its neighbours, and a bad specification exits non-zero with the parser's message. No
// timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "runtime/backend.hpp"
#include "tests/cli/cli_runner.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::run;

std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

std::vector<std::string> bench_args(const std::string& spec, bool json) {
  std::vector<std::string> a = {"bench", "--model", bundled("target"), "--draft-model", bundled("draft"), "--methods", "sequential,draft",
                                "--backends", "reference", "--tokens", "12", "--repeat", "1", "--prompt-length", "4", "--max-verify", "4",
                                "--bandwidth-mb", "16", "--k", "3", "--forced-acceptance", spec};
  if (json) a.push_back("--json");
  return a;
}

std::vector<std::string> generate_args(const std::string& spec, const std::string& backend = "reference") {
  return {"generate", "--model", bundled("target"), "--method", "draft", "--drafter", bundled("draft"), "--k", "4", "--prompt",
          "And God said", "--max-new-tokens", "40", "--ignore-eos", "--backend", backend, "--json", "--forced-acceptance", spec};
}

TEST(ForcedAcceptanceCli, BenchReportsTheForcedAcceptance) {
  const CliRun r = run(bench_args("al=2.5", true));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["forced_acceptance"], nlohmann::json::parse(R"({"kind":"al","al":2.5,"spec":"al=2.5"})"));
  EXPECT_EQ(j["output_meaningful"], false);
  EXPECT_EQ(j["options"]["acceptance"], "forced al=2.5");
  ASSERT_EQ(j["methods"].size(), 2u);
  EXPECT_EQ(j["methods"][1]["method"], "draft");
  EXPECT_EQ(j["methods"][1]["acceptance"], "forced al=2.5");
  EXPECT_GE(j["methods"][1]["acceptance_length"].get<double>(), 1.0);

  // A fixed count: K = 3, accepted = 2 gives 3 tokens every step.
  const CliRun fixed = run(bench_args("accepted=2", true));
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  const auto f = nlohmann::json::parse(fixed.out);
  EXPECT_DOUBLE_EQ(f["methods"][1]["acceptance_length"].get<double>(), 3.0) << f["methods"][1].dump();
  EXPECT_EQ(f["forced_acceptance"]["accepted"], 2);

  // TensorRT-LLM's fractional count: 1 or 2 drafts a step, so 2 to 3 tokens per step.
  const CliRun frac = run(bench_args("accepted=1.5", true));
  ASSERT_EQ(frac.code, 0) << frac.err;
  const auto fr = nlohmann::json::parse(frac.out);
  EXPECT_EQ(fr["forced_acceptance"], nlohmann::json::parse(R"({"kind":"accepted","accepted":1.5,"spec":"accepted=1.5"})"));
  EXPECT_EQ(fr["methods"][1]["acceptance"], "forced accepted=1.5");
  const double al = fr["methods"][1]["acceptance_length"].get<double>();
  EXPECT_GE(al, 2.0) << fr["methods"][1].dump();
  EXPECT_LE(al, 3.0) << fr["methods"][1].dump();

  // vLLM's unconditional rates: non-increasing.
  const CliRun text = run(bench_args("rates=0.9,0.5", false));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("outputs are not meaningful text: forced acceptance"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("acceptance: forced rates=0.9,0.5"), std::string::npos) << text.out;
}

TEST(ForcedAcceptanceCli, GenerateMarksItsOutput) {
  const CliRun r = run(generate_args("al=2.5"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: --forced-acceptance al=2.5: the output is not the model's text"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["output_meaningful"], false);
  EXPECT_EQ(j["forced_acceptance"]["kind"], "al");
  EXPECT_EQ(j["forced_acceptance"]["al"], 2.5);
  EXPECT_EQ(j["output_tokens"].size(), 40u);
  // Same seed, same decisions; and on another backend too (they depend on positions and K only).
  const CliRun again = run(generate_args("al=2.5"));
  EXPECT_EQ(nlohmann::json::parse(again.out)["stats"]["accepted_per_step"], j["stats"]["accepted_per_step"]);
  if (backend_available("cpu")) {
    const CliRun cpu = run(generate_args("al=2.5", "cpu"));
    ASSERT_EQ(cpu.code, 0) << cpu.err;
    EXPECT_EQ(nlohmann::json::parse(cpu.out)["stats"]["accepted_per_step"], j["stats"]["accepted_per_step"]);
  }
  // accepted=4 with K = 4, and al=6 (capped at K + 1 = 5 tokens): every step accepts all drafts.
  for (const char* spec : {"accepted=4", "al=6"}) {
    const CliRun all = run(generate_args(spec));
    ASSERT_EQ(all.code, 0) << spec << ": " << all.err;
    EXPECT_DOUBLE_EQ(nlohmann::json::parse(all.out)["stats"]["acceptance_length"].get<double>(), 5.0) << spec;
  }
  // al=3 with K = 4: exactly 2 drafts a step (a whole length draws nothing).
  const CliRun three = run(generate_args("al=3"));
  ASSERT_EQ(three.code, 0) << three.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(three.out)["stats"]["acceptance_length"].get<double>(), 3.0);

  // Text output says so too; a run without the option has no such keys.
  std::vector<std::string> t = generate_args("rates=0.8");
  t.erase(std::find(t.begin(), t.end(), "--json"));
  const CliRun text = run(t);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("outputs are not meaningful text: forced acceptance rates=0.8"), std::string::npos) << text.out;
  std::vector<std::string> plain = generate_args("al=2");
  plain.resize(plain.size() - 2);
  const CliRun p = run(plain);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_FALSE(nlohmann::json::parse(p.out).contains("output_meaningful"));
}

// Forced acceptance goes through the same run as the real rule: a drafter that fails is switched
// off and reported, and the later steps are plain (nothing left to force).
TEST(ForcedAcceptanceCli, ADrafterFaultFallsBackUnderForcedAcceptance) {
  std::vector<std::string> args = generate_args("accepted=3");
  args.insert(args.end(), {"--drafter-fault", "throw@3"});
  const CliRun r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["fallbacks"].size(), 1u) << r.out;
  EXPECT_EQ(j["fallbacks"][0]["step"], 3);
  EXPECT_EQ(j["fallbacks"][0]["next"], "plain decoding");
  EXPECT_EQ(j["output_meaningful"], false);
  // Steps 1 and 2 drafted and forced 3 acceptances each; every later step was plain.
  const auto& depths = j["draft_depth_per_step"];
  EXPECT_GT(depths.at(0).get<int>(), 0) << depths;
}

TEST(ForcedAcceptanceCli, BadSpecificationsExitWithTheMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  std::vector<std::string> both = bench_args("al=2", true);
  both.insert(both.end(), {"--acceptance-trace", "missing.h5"});
  const std::vector<std::string> sequential = {"generate", "--model", bundled("target"), "--prompt", "And", "--forced-acceptance", "al=2"};
  const std::vector<Case> cases = {
      {bench_args("al=0.5", true), "--forced-acceptance: forced acceptance 'al=0.5': acceptance length 0.5 is below 1"},
      {bench_args("rates=0.9,1.2", true), "rate 2 = 1.2 is outside [0, 1]"},
      {bench_args("rates=0.5,0.9", true), "rate 2 = 0.9 is above rate 1 = 0.5; the rates are unconditional"},
      {bench_args("accepted=5000", true), "--forced-acceptance: forced acceptance 'accepted=5000': accepted count 5000 is outside [0, 4096]"},
      {bench_args("often", true), "expected FORM=VALUE"},
      {generate_args("accepted=x"), "--forced-acceptance: forced acceptance 'accepted=x': accepted count 'x' is not a number; expected a number in [0, 4096]"},
      {generate_args("speed=9"), "unknown form 'speed'"},
      {both, "--forced-acceptance and --acceptance-trace both set the acceptance"},
      {sequential, "needs a speculative --method"},
  };
  for (const Case& c : cases) {
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    const CliRun r = run(c.args);
    EXPECT_EQ(r.code, 1) << cmd << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << cmd << "\nstderr: " << r.err;
  }
  const CliRun help = run({"bench", "--help"});
  EXPECT_NE(help.out.find("--forced-acceptance"), std::string::npos);
}

}  // namespace
}  // namespace specdec
