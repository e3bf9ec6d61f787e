// Speculation policies and drafter fallback on the command line, with the bundled target, draft
// model and EAGLE-1 head: --policy and its errors, the JSON and text reports of generate, compare
// and batch, --drafter-fault with and without --fallback-method (the output is always the plain
// sequential output), a record + validate round trip under a policy with plain steps, and
// `specdec policies`. No timing is asserted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"
#include "reference/policies/registry.hpp"
#include "runtime/method_runner.hpp"
#include "tests/cli/cli_runner.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CliRun;
using testing::run;

std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

const std::vector<std::string> kPrompt = {"--prompt-ids", "1,5,9,14", "--max-new-tokens", "24", "--ignore-eos"};

std::vector<std::string> generate(std::vector<std::string> extra, bool json = true) {
  std::vector<std::string> a = {"generate", "--model", bundled("target")};
  a.insert(a.end(), kPrompt.begin(), kPrompt.end());
  a.insert(a.end(), extra.begin(), extra.end());
  if (json) a.push_back("--json");
  return a;
}

std::vector<std::string> draft_method() { return {"--method", "draft", "--drafter", bundled("draft"), "--k", "4"}; }

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

json run_json(const std::vector<std::string>& args) {
  const CliRun r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(r.out) : json::object();
}

const json& sequential_output() {
  static const json tokens = run_json(generate({}))["output_tokens"];
  return tokens;
}

class TempDir {
 public:
  TempDir() : dir_(fs::temp_directory_path() / ("specdec_policy_cli_" + std::to_string(::getpid()))) { fs::create_directories(dir_); }
  ~TempDir() { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

TEST(PolicyCli, GenerateReportsThePolicyAndItsDepths) {
  const json j = run_json(generate(plus(draft_method(), {"--policy", "schedule,depths=2/0"})));
  EXPECT_EQ(j["output_tokens"], sequential_output());
  EXPECT_EQ(j["policy"], json::parse(R"({"policy":"schedule","depths":[2,0]})"));
  // Steps alternate depth 2 and plain steps (depth 0), so both are counted and the mean lies between.
  const std::vector<int> h = j["draft_depth_per_step"].get<std::vector<int>>();
  ASSERT_EQ(h.size(), 3u) << j.dump();
  EXPECT_GT(h[0], 0);
  EXPECT_EQ(h[1], 0);
  EXPECT_GT(h[2], 0);
  EXPECT_NEAR(j["mean_draft_depth"].get<double>(), 2.0 * h[2] / (h[0] + h[2]), 1e-12);
  EXPECT_EQ(j["fallbacks"], json::array());
  EXPECT_EQ(j["stats"]["drafted_tokens"].get<int>(), 2 * h[2]);
  // "stats" carries them too (as the Python module's Generation.stats).
  EXPECT_EQ(j["stats"]["mean_draft_depth"], j["mean_draft_depth"]);
  EXPECT_EQ(j["stats"]["draft_depth_per_step"], j["draft_depth_per_step"]);

  // The fixed policy drafts the whole K = 4 every step.
  const json fixed = run_json(generate(draft_method()));
  EXPECT_EQ(fixed["policy"], json::parse(R"({"policy":"fixed"})"));
  EXPECT_DOUBLE_EQ(fixed["mean_draft_depth"].get<double>(), 4.0);
  EXPECT_EQ(fixed["output_tokens"], sequential_output());

  const CliRun text = run(generate(plus(draft_method(), {"--policy", "schedule,depths=2/0"}), false));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("policy   schedule,depths=2/0"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("mean draft depth "), std::string::npos) << text.out;
  const CliRun fixed_text = run(generate(draft_method(), false));
  EXPECT_EQ(fixed_text.out.find("policy "), std::string::npos) << fixed_text.out;  // the default is not announced
}

TEST(PolicyCli, PolicyErrorsNameTheOption) {
  const CliRun typo = run(generate(plus(draft_method(), {"--policy", "hf-heuristc"})));
  EXPECT_EQ(typo.code, 1);
  EXPECT_NE(typo.err.find("--policy"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("unknown policy 'hf-heuristc'"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("did you mean hf-heuristic?"), std::string::npos) << typo.err;

  for (const std::string spec : {"hf-heuristic,start=-3", "hf-heuristic,bogus=1", "schedule,depths=a/b"}) {
    const CliRun bad = run(generate(plus(draft_method(), {"--policy", spec})));
    EXPECT_EQ(bad.code, 1) << spec;
    EXPECT_NE(bad.err.find("--policy"), std::string::npos) << spec << ": " << bad.err;
    EXPECT_TRUE(bad.out.empty()) << spec;
  }
  const CliRun budget = run(generate(plus(draft_method(), {"--draft-budget-ms", "-1"})));
  EXPECT_EQ(budget.code, 1);
  EXPECT_NE(budget.err.find("--draft-budget-ms"), std::string::npos) << budget.err;
}

TEST(PolicyCli, DrafterFaultFallsBackToPlainDecoding) {
  const json j = run_json(generate(plus(draft_method(), {"--drafter-fault", "throw@2"})));
  EXPECT_EQ(j["output_tokens"], sequential_output());
  ASSERT_EQ(j["fallbacks"].size(), 1u) << j.dump();
  const json& f = j["fallbacks"][0];
  EXPECT_EQ(f["step"], 2);
  EXPECT_EQ(f["drafter"], "draft");
  EXPECT_NE(f["reason"].get<std::string>().find("injected fault"), std::string::npos) << f.dump();
  EXPECT_EQ(f["next"], "plain decoding");
  // Step 1 drafted K = 4; every later step was plain.
  const std::vector<int> h = j["draft_depth_per_step"].get<std::vector<int>>();
  ASSERT_EQ(h.size(), 5u) << j.dump();
  EXPECT_EQ(h[4], 1);
  EXPECT_EQ(h[0], j["stats"]["steps"].get<int>() - 1);

  // A NaN logit fails the drafter the way a real one does.
  const json nan = run_json(generate(plus(draft_method(), {"--drafter-fault", "nan@1"})));
  EXPECT_EQ(nan["output_tokens"], sequential_output());
  ASSERT_EQ(nan["fallbacks"].size(), 1u);
  EXPECT_EQ(nan["fallbacks"][0]["step"], 1);
  EXPECT_NE(nan["fallbacks"][0]["reason"].get<std::string>().find("non-finite logit"), std::string::npos) << nan.dump();

  const CliRun text = run(generate(plus(draft_method(), {"--drafter-fault", "throw@2"}), false));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("drafter draft switched off at step 2 (failed: injected fault"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("); then plain decoding"), std::string::npos) << text.out;
}

TEST(PolicyCli, DrafterFaultFallsBackToTheFallbackDrafter) {
  const json j = run_json(generate(plus(draft_method(), {"--drafter-fault", "throw@2", "--fallback-method", "eagle",
                                                         "--fallback-drafter", bundled("eagle1")})));
  EXPECT_EQ(j["output_tokens"], sequential_output());
  ASSERT_EQ(j["fallbacks"].size(), 1u) << j.dump();
  EXPECT_EQ(j["fallbacks"][0]["step"], 2);
  EXPECT_EQ(j["fallbacks"][0]["drafter"], "draft");
  const std::string next = j["fallbacks"][0]["next"];
  EXPECT_EQ(next.rfind("eagle", 0), 0u) << next;
  // The EAGLE head drafted from step 2 on: no plain steps, and more drafts than step 1's.
  const std::vector<int> h = j["draft_depth_per_step"].get<std::vector<int>>();
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0], 0) << j.dump();
  EXPECT_GT(j["stats"]["drafted_tokens"].get<int>(), 4);

  // Without a fault the fallback drafter is never used.
  const json held = run_json(generate(plus(draft_method(), {"--fallback-method", "eagle", "--fallback-drafter", bundled("eagle1")})));
  EXPECT_EQ(held["fallbacks"], json::array());
  EXPECT_EQ(held["output_tokens"], sequential_output());
}

TEST(PolicyCli, FallbackOptionErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--fallback-method", "sequential", "--fallback-drafter", bundled("draft")}, "does not draft"},
      {{"--fallback-method", "eagle"}, "needs --fallback-drafter"},
      {{"--fallback-drafter", bundled("eagle1")}, "--fallback-drafter needs --fallback-method"},
      {{"--fallback-method", "eagel", "--fallback-drafter", bundled("eagle1")}, "--fallback-method"},
      {{"--drafter-fault", "boom@2"}, "--drafter-fault: unknown fault kind 'boom'"},
      {{"--drafter-fault", "throw@0"}, "--drafter-fault: step '0'"},
      {{"--drafter-fault", "throw"}, "--drafter-fault: 'throw' has no '@STEP'"},
  };
  for (const auto& [extra, message] : cases) {
    const CliRun r = run(generate(plus(draft_method(), extra)));
    EXPECT_EQ(r.code, 1) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  const CliRun seq = run(generate({"--drafter-fault", "throw@1"}));
  EXPECT_EQ(seq.code, 1);
  EXPECT_NE(seq.err.find("--drafter-fault injects a fault into the drafter; --method sequential has none"), std::string::npos) << seq.err;
}

TEST(PolicyCli, CompareReportsEachRunsDepth) {
  std::vector<std::string> a = {"compare", "--model", bundled("target"), "--methods", "sequential,draft=" + bundled("draft"),
                                "--k", "4", "--policy", "schedule,depths=2/0", "--json"};
  a.insert(a.end(), kPrompt.begin(), kPrompt.end());
  const json j = run_json(a);
  EXPECT_EQ(j["all_outputs_agree"], true);
  EXPECT_EQ(j["policy"]["policy"], "schedule");
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["runs"][0]["mean_draft_depth"].get<double>(), 0.0);
  const double depth = j["runs"][1]["mean_draft_depth"].get<double>();
  EXPECT_GT(depth, 0.5);
  EXPECT_LT(depth, 2.0);
  EXPECT_EQ(j["runs"][1]["fallbacks"], json::array());

  std::vector<std::string> t = {"compare", "--model", bundled("target"), "--methods", "sequential,draft=" + bundled("draft"),
                                "--k", "4", "--drafter-fault", "throw@2"};
  t.insert(t.end(), kPrompt.begin(), kPrompt.end());
  const CliRun text = run(t);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("all outputs agree"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fallback [draft k=4] "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("switched off at step 2"), std::string::npos) << text.out;
}

TEST(PolicyCli, RecordAndValidateAPolicyWithPlainSteps) {
  TempDir dir;
  const std::string trace = dir.path("plain_steps.h5");
  std::vector<std::string> rec = {"record", "--model", bundled("target"), "--out", trace, "--logits", "full",
                                  "--policy", "schedule,depths=2/0"};
  rec = plus(plus(rec, draft_method()), kPrompt);
  const CliRun r = run(rec);
  ASSERT_EQ(r.code, 0) << r.err;
  const Trace t = read_trace(trace);
  const json config = json::parse(t.meta.config_json);
  EXPECT_EQ(config["policy"], json::parse(R"({"policy":"schedule","depths":[2,0]})"));
  EXPECT_EQ(config["fallbacks"], json::array());
  int plain = 0, drafted = 0;
  for (std::size_t s = 1; s < t.steps.size(); ++s) {
    (t.steps[s].draft_tokens.empty() ? plain : drafted) += 1;
    if (t.steps[s].draft_tokens.empty()) {
      EXPECT_EQ(t.steps[s].emitted_tokens.size(), 1u) << "step " << s;
    }
  }
  EXPECT_GT(plain, 0);
  EXPECT_GT(drafted, 0);
  EXPECT_EQ(t.output, sequential_output().get<std::vector<int32_t>>());

  const CliRun check = run({"trace", "check", trace});
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  // Replaying the trace reads the policy back: the same steps draft the same depth.
  const CliRun v = run({"validate", "--model", bundled("target"), "--trace", trace});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  // A live validation under the policy, reference against reference.
  std::vector<std::string> live = {"validate", "--model", bundled("target"), "--policy", "schedule,depths=2/0"};
  const CliRun lv = run(plus(plus(live, draft_method()), kPrompt));
  EXPECT_EQ(lv.code, 0) << lv.out << lv.err;

  // explain shows the plain steps.
  std::vector<std::string> ex = {"explain", "--model", bundled("target"), "--policy", "schedule,depths=2/0", "--color", "never"};
  const CliRun e = run(plus(plus(ex, draft_method()), {"--prompt-ids", "1,5,9,14", "--max-new-tokens", "8", "--ignore-eos"}));
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("step 2  position 8  after 'a': a plain step, nothing drafted"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("the target's own token (a plain step)"), std::string::npos) << e.out;

  // A run with a fallback records it.
  const std::string faulty = dir.path("fallback.h5");
  std::vector<std::string> rf = {"record", "--model", bundled("target"), "--out", faulty, "--drafter-fault", "throw@2"};
  const CliRun f = run(plus(plus(rf, draft_method()), kPrompt));
  ASSERT_EQ(f.code, 0) << f.err;
  const json fc = json::parse(read_trace(faulty).meta.config_json);
  ASSERT_EQ(fc["fallbacks"].size(), 1u) << fc.dump();
  EXPECT_EQ(fc["fallbacks"][0]["step"], 2);
  EXPECT_EQ(fc["fallbacks"][0]["next"], "plain decoding");
  EXPECT_EQ(fc["drafter_fault"], "throw@2");
  EXPECT_EQ(run({"trace", "check", faulty}).code, 0);
}

TEST(PolicyCli, TraceConfigWithoutPolicyReadsAsFixed) {
  DecodeArgs a;
  a.policy = parse_policy_spec("schedule,depths=1/0");
  decode_args_from_trace_config(R"({"method":{"method":"sequential"},"max_new_tokens":3,"stop_at_eos":true})", "old.h5", a);
  EXPECT_EQ(a.policy, PolicySpec{});
  decode_args_from_trace_config(
      R"({"method":{"method":"sequential"},"max_new_tokens":3,"stop_at_eos":true,"policy":{"policy":"hf-heuristic","start":3}})",
      "new.h5", a);
  EXPECT_EQ(a.policy.label(), parse_policy_spec("hf-heuristic,start=3").label());
  EXPECT_THROW(decode_args_from_trace_config(
                   R"({"method":{"method":"sequential"},"max_new_tokens":3,"stop_at_eos":true,"policy":{"policy":"nope"}})", "bad.h5", a),
               Error);
}

TEST(PolicyCli, PoliciesCommandListsTheRegistry) {
  const CliRun text = run({"policies"});
  ASSERT_EQ(text.code, 0) << text.err;
  for (const PolicyEntry& e : policy_registry()) {
    EXPECT_NE(text.out.find(e.name), std::string::npos) << e.name;
    EXPECT_NE(text.out.find(e.title), std::string::npos) << e.name;
    EXPECT_NE(text.out.find("source: " + e.source), std::string::npos) << e.name;
    for (const PolicyParam& p : e.params) EXPECT_NE(text.out.find(p.doc), std::string::npos) << e.name << " " << p.name;
  }
  EXPECT_NE(text.out.find("depths=4/0/2"), std::string::npos) << text.out;  // a list default as --policy writes it

  const json j = run_json({"policies", "--json"});
  ASSERT_EQ(j["policies"].size(), policy_registry().size());
  for (std::size_t i = 0; i < policy_registry().size(); ++i) {
    const PolicyEntry& e = policy_registry()[i];
    const json& p = j["policies"][i];
    EXPECT_EQ(p["name"], e.name);
    EXPECT_EQ(p["summary"], e.summary);
    EXPECT_EQ(p["source"], e.source);
    ASSERT_EQ(p["params"].size(), e.params.size()) << e.name;
    for (std::size_t k = 0; k < e.params.size(); ++k) {
      EXPECT_EQ(p["params"][k]["name"], e.params[k].name);
      EXPECT_EQ(p["params"][k]["default"], e.params[k].default_value);
      EXPECT_EQ(p["params"][k]["min"], e.params[k].min);
      EXPECT_EQ(p["params"][k]["max"], e.params[k].max);
    }
  }
  EXPECT_EQ(j["policies"][0]["name"], "fixed");
  // Listed in the usage.
  EXPECT_NE(run({"--help"}).out.find("policies"), std::string::npos);
}

TEST(PolicyCli, BenchReportsTheDepthOfEachMethod) {
  std::vector<std::string> a = {"bench", "--model", bundled("target"), "--draft-model", bundled("draft"), "--methods", "sequential,draft",
                                "--backends", "reference", "--tokens", "12", "--repeat", "1", "--prompt-length", "4", "--max-verify", "2",
                                "--bandwidth-mb", "16", "--k", "4"};
  const json fixed = run_json(plus(a, {"--json"}));
  ASSERT_EQ(fixed["methods"].size(), 2u);
  EXPECT_DOUBLE_EQ(fixed["methods"][1]["mean_draft_depth"].get<double>(), 4.0);
  EXPECT_EQ(fixed["options"]["policy"], json::parse(R"({"policy":"fixed"})"));
  const json j = run_json(plus(a, {"--policy", "schedule,depths=2/0", "--json"}));
  EXPECT_EQ(j["options"]["policy"]["policy"], "schedule");
  EXPECT_DOUBLE_EQ(j["methods"][0]["mean_draft_depth"].get<double>(), 0.0);
  const double depth = j["methods"][1]["mean_draft_depth"].get<double>();
  EXPECT_GT(depth, 0.5);
  EXPECT_LT(depth, 2.0);
  const CliRun text = run(plus(a, {"--policy", "schedule,depths=2/0"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("policy     schedule,depths=2/0"), std::string::npos) << text.out;
  EXPECT_EQ(run(plus(a, {"--policy", "nope"})).code, 1);
}

TEST(PolicyCli, BatchAppliesThePolicyToEveryRequest) {
  TempDir dir;
  const std::string lines = dir.path("requests.jsonl");
  std::vector<std::string> a = {"batch", "--model", bundled("target"), "--prompt-ids", "1,5,9,14", "--requests", "3",
                                "--concurrency", "2", "--max-new-tokens", "16", "--ignore-eos", "--json"};
  a = plus(a, {"--method", "draft", "--drafter", bundled("draft"), "--k", "4"});
  const json fixed = run_json(a);
  const json s = run_json(plus(a, {"--policy", "schedule,depths=2/0", "--out", lines}));
  EXPECT_EQ(s["policy"], json::parse(R"({"policy":"schedule","depths":[2,0]})"));
  EXPECT_EQ(fixed["policy"], json::parse(R"({"policy":"fixed"})"));
  EXPECT_DOUBLE_EQ(fixed["mean_draft_depth"].get<double>(), 4.0);
  const std::vector<int> h = s["draft_depth_per_step"].get<std::vector<int>>();
  ASSERT_EQ(h.size(), 3u) << s.dump();
  EXPECT_GT(h[0], 0);
  EXPECT_GT(h[2], 0);
  EXPECT_EQ(h[0] + h[2], s["sequence_steps"].get<int>());
  EXPECT_NEAR(s["mean_draft_depth"].get<double>(), 2.0 * h[2] / (h[0] + h[2]), 1e-12);
  EXPECT_EQ(s["generated_tokens"], fixed["generated_tokens"]);
  // Each request: its own mean depth and the same tokens as under the fixed policy.
  std::ifstream in(lines);
  std::string line;
  int n = 0;
  const std::vector<int> first16(sequential_output().begin(), sequential_output().begin() + 16);
  while (std::getline(in, line)) {
    const json r = json::parse(line);
    ++n;
    EXPECT_GT(r["mean_draft_depth"].get<double>(), 0.5) << line;
    EXPECT_LT(r["mean_draft_depth"].get<double>(), 2.0) << line;
    EXPECT_EQ(r["fallbacks"], json::array());
    EXPECT_EQ(r["output_tokens"].get<std::vector<int>>(), first16) << line;
  }
  EXPECT_EQ(n, 3);

  std::vector<std::string> text_args = a;
  text_args.erase(std::find(text_args.begin(), text_args.end(), "--json"));
  const CliRun text = run(plus(text_args, {"--policy", "schedule,depths=2/0"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("mean draft depth"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(policy schedule,depths=2/0)"), std::string::npos) << text.out;

  const CliRun fault = run(plus(a, {"--drafter-fault", "throw@2"}));
  EXPECT_EQ(fault.code, 1);
  EXPECT_NE(fault.err.find("--drafter-fault"), std::string::npos) << fault.err;
}

}  // namespace
}  // namespace specdec
