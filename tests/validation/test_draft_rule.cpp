// Draft-free methods under validate --candidate: an engine's drafts must be the method's rule for
// the recorded history at every step. A trace recorded by specdec passes (with and without
// --force-drafts, under a speculation policy too); one whose drafts were altered at step N fails
// at step N as a "draft rule" divergence naming both draft lists and the rule's match.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "traces/batched_trace.hpp"
#include "traces/trace.hpp"
#include "validation/draft_rule.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::run;

const std::string kModels = SPECDEC_SOURCE_DIR "/models/";
// Repeats itself, so that every rule finds earlier occurrences to copy from.
const std::string kPrompt = "the light, and the light was good; the light";

class DraftRule : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<testing::ScratchDir>("draft-rule"); }
  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }
  std::string record(const std::string& name, std::vector<std::string> method) const {
    std::vector<std::string> args = {"record", "--model", kModels + "target", "--prompt", kPrompt, "--max-new-tokens", "24",
                                     "--ignore-eos", "--logits", "full", "--out", path(name)};
    args.insert(args.end(), method.begin(), method.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return path(name);
  }
  static nlohmann::json validate(const std::string& trace, bool force_drafts, int expected_code) {
    std::vector<std::string> args = {"validate", "--model", kModels + "target", "--candidate", trace, "--json"};
    if (force_drafts) args.push_back("--force-drafts");
    const CliRun r = run(args);
    EXPECT_EQ(r.code, expected_code) << r.out << r.err;
    if (r.code != 0 && r.code != 1) return {};
    return nlohmann::json::parse(r.out);
  }
  std::unique_ptr<testing::ScratchDir> dir_;
};

// The first step with a draft node the target rejected or never reached (changing its token
// keeps the trace consistent: no emitted token depends on it), and that node.
std::pair<int, int> rejected_node(const Trace& t) {
  for (std::size_t s = 1; s < t.steps.size(); ++s) {
    const StepRecord& st = t.steps[s];
    for (std::size_t n = 0; n < st.draft_tokens.size(); ++n) {
      if (std::find(st.accepted_path.begin(), st.accepted_path.end(), static_cast<int32_t>(n)) == st.accepted_path.end())
        return {static_cast<int>(s), static_cast<int>(n)};
    }
  }
  return {-1, -1};
}

TEST_F(DraftRule, RecordedTracesOfEveryDraftFreeMethodPass) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"ngram.h5", {"--method", "ngram,n_min=1,n_max=3", "--k", "4"}},
      {"prompt-lookup.h5", {"--method", "prompt-lookup", "--k", "3"}},
      {"ngram-tree.h5", {"--method", "ngram-tree,nodes=6", "--k", "3"}},
      {"suffix.h5", {"--method", "suffix", "--k", "4"}},
      {"suffix-tree.h5", {"--method", "suffix-tree", "--k", "5"}},
      // A policy sets each step's depth: the rule is replayed under it (hf-heuristic: K from the
      // accepted lengths; schedule: plain steps in between).
      {"ngram-policy.h5", {"--method", "ngram,n_min=1,n_max=3", "--k", "6", "--policy", "hf-heuristic,start=2"}},
      {"ngram-schedule.h5", {"--method", "ngram,n_min=1,n_max=3", "--k", "4", "--policy", "schedule,depths=3/0/1"}},
  };
  for (const auto& [name, method] : cases) {
    const std::string trace = record(name, method);
    const Trace t = read_trace(trace);
    int with_sources = 0;
    for (const StepRecord& s : t.steps) with_sources += !s.draft_sources.empty();
    EXPECT_GT(with_sources, 0) << name << ": a draft-free run records its sources";
    for (const bool force : {false, true}) {
      const auto j = validate(trace, force, 0);
      EXPECT_EQ(j["result"], "pass") << name << (force ? " --force-drafts" : "") << "\n" << j.dump();
      EXPECT_EQ(j["steps_compared"], j["reference_steps"]) << name;
    }
  }
}

// Suffix decoding in a batch: later sequences draft from the responses of those that finished
// before (the run's shared tree). Each sequence is validated alone with the others' responses
// joining as the schedule says they did, so specdec's own batch passes, drafts and rule alike.
TEST_F(DraftRule, BatchedSuffixDecodingDraftsFromEarlierResponses) {
  const std::string prompts = path("prompts.json");
  std::ofstream(prompts) << R"({"rep": ["the light, and the light was good; the light", "the light was good, and the light",
                                        "and the light was good; the light", "was good; the light was"]})";
  const std::string trace = path("batch.h5");
  const CliRun rec = run({"record", "--model", kModels + "target", "--method", "suffix", "--k", "4", "--prompts", prompts, "--concurrency", "2",
                          "--max-new-tokens", "16", "--ignore-eos", "--logits", "full", "--out", trace});
  ASSERT_EQ(rec.code, 0) << rec.err;
  const BatchedTrace batch = read_batched_trace(trace);
  int from_responses = 0;
  for (const TraceSequence& q : batch.sequences)
    for (const StepRecord& s : q.trace.steps)
      for (const DraftSourceRecord& d : s.draft_sources) from_responses += d.origin == DraftSourceRecord::Origin::responses;
  EXPECT_GT(from_responses, 0) << "the case must draft from an earlier response";
  for (const bool force : {false, true}) {
    const auto j = validate(trace, force, 0);
    EXPECT_EQ(j["result"], "pass") << (force ? "--force-drafts " : "") << j.dump();
  }
  const CliRun replay = run({"validate", "--model", kModels + "target", "--trace", trace, "--json"});
  ASSERT_EQ(replay.code, 0) << replay.out << replay.err;
  // Parsed into a local: a range-for over parse(...)["sequences"] would read the temporary after it is destroyed.
  const nlohmann::json report = nlohmann::json::parse(replay.out);
  ASSERT_TRUE(report.contains("sequences")) << replay.out;
  for (const auto& q : report.at("sequences")) EXPECT_TRUE(q.at("near_ties").empty()) << q.dump();
}

TEST_F(DraftRule, AlteredDraftFailsAtItsStep) {
  for (const std::vector<std::string>& method : {std::vector<std::string>{"--method", "ngram,n_min=1,n_max=3", "--k", "4"},
                                                 std::vector<std::string>{"--method", "suffix", "--k", "4"}}) {
    const std::string where = method[1].substr(0, method[1].find(','));  // the method's name
    Trace t = read_trace(record("clean.h5", method));
    const auto [step, node] = rejected_node(t);
    ASSERT_GE(step, 1) << where << ": no step with a rejected draft to alter";
    StepRecord& st = t.steps[static_cast<std::size_t>(step)];
    const std::vector<int32_t> original = st.draft_tokens;
    const int32_t vocab = nlohmann::json::parse(t.meta.models.at("target").config_json)["vocab_size"].get<int32_t>();
    st.draft_tokens[static_cast<std::size_t>(node)] = (st.draft_tokens[static_cast<std::size_t>(node)] + 1) % vocab;
    const std::string altered = path("altered.h5");
    write_trace(altered, t);

    for (const bool force : {false, true}) {
      const std::string at = where + (force ? " --force-drafts" : "");
      const auto j = validate(altered, force, 1);
      ASSERT_EQ(j["result"], "fail") << at;
      const auto& f = j["failure"];
      EXPECT_EQ(f["step"], step) << at << ": the step whose drafts were altered\n" << f.dump();
      EXPECT_EQ(f["what"], "draft rule") << at << "\n" << f.dump();
      ASSERT_TRUE(f.contains("draft_rule")) << at;
      const auto& r = f["draft_rule"];
      EXPECT_EQ(r["node"], node) << at;
      EXPECT_EQ(r["rule_drafts"], original) << at << ": the rule drafts what specdec drafted";
      EXPECT_EQ(r["candidate_drafts"], st.draft_tokens) << at;
      EXPECT_EQ(r["history_length"], st.position) << at;
      EXPECT_GT(r["match_length"].get<int>(), 0) << at;
      ASSERT_TRUE(r["copied_from"].is_number()) << at;
      if (r["request"].is_null()) {  // from the sequence itself: the match lies before the copied token
        ASSERT_TRUE(r["match_position"].is_number()) << at;
        EXPECT_EQ(r["match_position"].get<int64_t>() + r["match_length"].get<int64_t>(), r["copied_from"].get<int64_t>()) << at;
        EXPECT_LT(r["copied_from"].get<int64_t>(), st.position) << at;
      }
      EXPECT_EQ(r["candidate_copied_from"], st.draft_sources.front().position) << at << ": the trace's own record";
      const std::string detail = f["detail"];
      EXPECT_NE(detail.find("not " + where + "'s rule for the history before step " + std::to_string(step)), std::string::npos) << detail;
      EXPECT_NE(detail.find("first difference at node " + std::to_string(node)), std::string::npos) << detail;
    }
    // The text report names the step, both lists and the match.
    const CliRun r = run({"validate", "--model", kModels + "target", "--candidate", altered});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.out.find("first divergence: draft rule at step " + std::to_string(step)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(where + " rule drafts: ["), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("candidate drafted: ["), std::string::npos) << r.out;
  }
}

// Where the rule finds no earlier occurrence it drafts nothing: a candidate that drafted there fails,
// and the report says the rule found nothing.
TEST_F(DraftRule, DraftsWhereTheRuleFindsNothingFail) {
  Trace t = read_trace(record("clean.h5", {"--method", "ngram,n_min=1,n_max=3", "--k", "4"}));
  // A step with no drafts (no match in the history) given one rejected draft: the target's rows
  // grow by one (the row after the new node, copied from the root's) and the test's decision.
  int step = -1;
  for (std::size_t s = 1; s < t.steps.size() && step < 0; ++s)
    if (t.steps[s].draft_tokens.empty()) step = static_cast<int>(s);
  if (step < 0) GTEST_SKIP() << "every step of the recording found a match";
  StepRecord& st = t.steps[static_cast<std::size_t>(step)];
  const int32_t emitted = st.emitted_tokens[0];
  const int32_t vocab = nlohmann::json::parse(t.meta.models.at("target").config_json)["vocab_size"].get<int32_t>();
  st.draft_tokens = {(emitted + 1) % vocab};
  st.draft_parents = {-1};
  st.accept_decisions = {0};
  st.accept_nodes = {0};
  st.target_logits.push_back(st.target_logits[0]);
  const std::string altered = path("drafted.h5");
  write_trace(altered, t);
  const auto j = validate(altered, true, 1);
  ASSERT_EQ(j["result"], "fail");
  EXPECT_EQ(j["failure"]["step"], step);
  EXPECT_EQ(j["failure"]["what"], "draft rule");
  EXPECT_EQ(j["failure"]["draft_rule"]["rule_drafts"], nlohmann::json::array());
  EXPECT_TRUE(j["failure"]["draft_rule"]["match_position"].is_null());
  const std::string detail = j["failure"]["detail"];
  EXPECT_NE(detail.find("finds no earlier occurrence"), std::string::npos) << detail;
}

}  // namespace
}  // namespace specdec
