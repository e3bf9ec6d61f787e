// --typical-acceptance on `specdec generate` with the bundled target and EAGLE-1 head: the option
// alone gives Medusa's defaults, --json reports "typical_acceptance" and "lossless": false, stderr
// warns that the output is not guaranteed to be the target's, a threshold no draft passes gives
// the lossless run's tokens (coupled sampling), and the exclusivity with --forced-acceptance,
// greedy sampling, a non-speculative method and bad values exit non-zero with a clear message.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::run;

std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

// generate with EAGLE-1, coupled sampling at T = 0.7, seed 3; `extra` appended.
std::vector<std::string> generate_args(const std::vector<std::string>& extra, const std::string& sampling = "coupled") {
  std::vector<std::string> a = {"generate", "--model", bundled("target"), "--method", "eagle", "--drafter", bundled("eagle1"), "--k", "4",
                                "--prompt", "And God said", "--max-new-tokens", "32", "--ignore-eos", "--sampling", sampling,
                                "--temperature", "0.7", "--seed", "3", "--json"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += a + " ";
  return s;
}

TEST(TypicalAcceptanceCli, GenerateReportsItAndWarns) {
  for (const char* sampling : {"coupled", "sample"}) {
    const std::vector<std::string> args = generate_args({"--typical-acceptance"}, sampling);
    const CliRun r = run(args);
    ASSERT_EQ(r.code, 0) << joined(args) << "\n" << r.err;
    EXPECT_NE(r.err.find("warning: --typical-acceptance epsilon=0.09,delta=0.3: lossy; the output is not guaranteed to be the target's"),
              std::string::npos)
        << sampling << " seed 3: " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["typical_acceptance"], nlohmann::json::parse(R"({"epsilon":0.09,"delta":0.3,"spec":"epsilon=0.09,delta=0.3"})"))
        << sampling << " seed 3";
    EXPECT_EQ(j["lossless"], false) << sampling << " seed 3";
    EXPECT_FALSE(j.contains("forced_acceptance")) << sampling << " seed 3";
    EXPECT_FALSE(j.contains("output_meaningful")) << sampling << " seed 3";
    EXPECT_EQ(j["output_tokens"].size(), 32u) << sampling << " seed 3";
    // Deterministic: the same seed gives the same tokens and steps.
    const CliRun again = run(args);
    ASSERT_EQ(again.code, 0) << again.err;
    const auto k = nlohmann::json::parse(again.out);
    EXPECT_EQ(k["output_tokens"], j["output_tokens"]) << sampling << " seed 3";
    EXPECT_EQ(k["stats"]["accepted_per_step"], j["stats"]["accepted_per_step"]) << sampling << " seed 3";
  }
  // A value, either key alone, as the next argument or after '='.
  for (const std::vector<std::string>& opt : {std::vector<std::string>{"--typical-acceptance", "epsilon=0.2"},
                                              std::vector<std::string>{"--typical-acceptance=delta=0.5"}}) {
    const CliRun r = run(generate_args(opt));
    ASSERT_EQ(r.code, 0) << joined(opt) << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const bool eps = opt.size() == 2;
    EXPECT_EQ(j["typical_acceptance"]["epsilon"], eps ? 0.2 : 0.09) << joined(opt);
    EXPECT_EQ(j["typical_acceptance"]["delta"], eps ? 0.3 : 0.5) << joined(opt);
  }
  // Without the option: no such keys.
  const CliRun plain = run(generate_args({}));
  ASSERT_EQ(plain.code, 0) << plain.err;
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(p.contains("lossless"));
  EXPECT_FALSE(p.contains("typical_acceptance"));
  // A threshold no draft passes (epsilon = 1, delta = 1000: tau = 1): the tokens are the lossless
  // (coupled) run's, and nothing is accepted.
  const CliRun none = run(generate_args({"--typical-acceptance", "epsilon=1,delta=1000"}));
  ASSERT_EQ(none.code, 0) << none.err;
  const auto n = nlohmann::json::parse(none.out);
  EXPECT_EQ(n["output_tokens"], p["output_tokens"]) << "coupled seed 3";
  EXPECT_EQ(n["stats"]["accepted_tokens"], 0) << "coupled seed 3";
  // Text output says so too.
  std::vector<std::string> t = generate_args({"--typical-acceptance"});
  t.erase(std::find(t.begin(), t.end(), "--json"));
  const CliRun text = run(t);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("note     lossy: typical acceptance epsilon=0.09,delta=0.3; the output is not guaranteed to be the target's"),
            std::string::npos)
      << text.out;
}

TEST(TypicalAcceptanceCli, ErrorsExitWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {generate_args({"--typical-acceptance", "--forced-acceptance", "al=2"}),
       "--typical-acceptance and --forced-acceptance both decide which drafts are accepted; give one"},
      {generate_args({"--forced-acceptance", "al=2", "--typical-acceptance", "epsilon=0.1"}),
       "--typical-acceptance and --forced-acceptance both decide which drafts are accepted; give one"},
      {generate_args({"--typical-acceptance"}, "greedy"), "--typical-acceptance needs --sampling sample or coupled"},
      {{"generate", "--model", bundled("target"), "--prompt", "And", "--sampling", "sample", "--typical-acceptance"},
       "needs a speculative --method, not sequential"},
      {generate_args({"--typical-acceptance", "epsilon=2"}),
       "--typical-acceptance: typical acceptance 'epsilon=2': epsilon 2 is outside (0, 1]"},
      {generate_args({"--typical-acceptance", "alpha=0.3"}), "unknown key 'alpha'"},
      {generate_args({"--typical-acceptance", "delta=0"}), "delta 0 is outside (0, 1e3]"},
  };
  for (const Case& c : cases) {
    const CliRun r = run(c.args);
    EXPECT_EQ(r.code, 1) << joined(c.args) << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << joined(c.args) << "\nstderr: " << r.err;
  }
  const CliRun help = run({"generate", "--help"});
  EXPECT_NE(help.out.find("--typical-acceptance"), std::string::npos);
}

}  // namespace
}  // namespace specdec
