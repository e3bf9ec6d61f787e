// Validation of backends (experiments/validation, specdec validate) on the tiny model with random
// drafters: the reference passes against itself for every method and sampling mode; a backend
// with a deliberate error fails at the step where the error is, with both tokens and the margin;
// a planted near-tie is excused, the reference's token forced and the run continued; recorded
// traces validate, tampered ones do not; bad inputs give clear errors and exit code 2.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/method_runner.hpp"
#include "runtime/backend.hpp"
#include "validation/run_recorder.hpp"
#include "validation/validator.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/validation/perturbed_model.hpp"
#include "traces/trace.hpp"
#include "traces/trace_recorder.hpp"
#include "text/byte_tokenizer.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::PerturbedModel;
using testing::run;

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += a + " ";
  return s;
}

class Validate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::ScratchDir("validate");
    for (const auto& [name, seed] : {std::pair<std::string, std::string>{"tiny", "3"}, {"other", "4"}}) {
      const CliRun r = run({"init-model", "--preset", "tiny", "--seed", seed, "--out", path(name)});
      ASSERT_EQ(r.code, 0) << r.err;
    }
    for (const std::string kind : {"eagle1", "eagle3", "peagle"}) {
      const CliRun r = run({"init-model", "--head", kind, "--target", model(), "--aux-layers", "1,2,3", "--seed", "9", "--out", path(kind)});
      ASSERT_EQ(r.code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string path(const std::string& name) { return (dir_->path() / name).string(); }
  static std::string model() { return path("tiny"); }

  // Every method and drafting shape (the draft LM is another model, so drafts get rejected).
  static std::vector<std::vector<std::string>> methods() {
    return {
        {"--method", "sequential"},
        {"--method", "draft", "--drafter", path("other"), "--k", "3"},
        {"--method", "eagle", "--drafter", path("eagle1"), "--k", "4"},
        {"--method", "eagle", "--drafter", path("eagle1"), "--tree", "dynamic", "--depth", "3", "--tree-top-k", "3", "--total-tokens", "10"},
        {"--method", "eagle3", "--drafter", path("eagle3"), "--tree", "mc_sim_7b_63"},
        {"--method", "peagle", "--drafter", path("peagle"), "--k", "5"},
        {"--method", "peagle", "--drafter", path("peagle"), "--tree", "mc_sim_7b_63"},
    };
  }
  static std::vector<std::vector<std::string>> samplings() {
    return {{"--sampling", "greedy"},
            {"--sampling", "coupled", "--temperature", "0.8", "--seed", "5"},
            {"--sampling", "sample", "--temperature", "0.8", "--seed", "5"}};
  }
  static std::vector<std::string> command(const std::string& name, const std::vector<std::string>& method,
                                          const std::vector<std::string>& sampling, const std::vector<std::string>& tail) {
    std::vector<std::string> args = {name, "--model", model(), "--prompt", "To be", "--max-new-tokens", "12", "--ignore-eos"};
    args.insert(args.end(), method.begin(), method.end());
    args.insert(args.end(), sampling.begin(), sampling.end());
    args.insert(args.end(), tail.begin(), tail.end());
    return args;
  }

  static testing::ScratchDir* dir_;
};
testing::ScratchDir* Validate::dir_ = nullptr;

// A method ready to validate in-process: the reference models and the setup.
struct Job {
  DecodeArgs args;
  LoadedModel target;
  std::optional<LoadedDrafter> drafter;
  validation::ValidationSetup setup;

  Job(const std::string& model, const std::string& method, const std::string& drafter_path, const SamplingParams& sampling, int k = 4) {
    args.model = model;
    args.method.name = method;
    args.drafter = drafter_path;
    args.method.k = k;
    args.max_new_tokens = 12;
    args.ignore_eos = true;
    target = load_model(model);
    drafter = load_drafter(args, target);
    setup.method = method;
    setup.prompt = {0, 40, 41, 42, 43};
    setup.sampling = sampling;
    setup.options = generation_options(args);
    if (method != "sequential") {
      setup.make_proposer = [this](const LanguageModel* draft_lm, const EagleHead* head) {
        return make_proposer(args, target, drafter ? &*drafter : nullptr, 64, draft_lm, head);
      };
    }
  }
  Job(const Job&) = delete;

  const LanguageModel* draft_lm() const { return drafter ? drafter->draft_lm() : nullptr; }
  validation::Backend reference() const { return {"reference", &target.reference(), draft_lm()}; }

  // The reference's own run with every step's decisions and margins.
  validation::RecordedRun record() const {
    validation::RunRecorder recorder(TraceMeta{}, setup.sampling, 0);
    const auto proposer = setup.make_proposer ? setup.make_proposer(draft_lm(), nullptr) : nullptr;
    if (!proposer) {
      decode_sequential(target.reference(), setup.prompt, setup.sampling, setup.options, &recorder);
    } else {
      const auto acceptor = default_acceptor(setup.sampling);
      decode_speculative(target.reference(), *proposer, *acceptor, setup.prompt, setup.sampling, setup.options, &recorder);
    }
    return recorder.take();
  }
};

SamplingParams greedy() { return SamplingParams{}; }
SamplingParams coupled() {
  SamplingParams s;
  s.mode = SamplingParams::Mode::coupled;
  s.temperature = 0.8;
  s.seed = 5;
  return s;
}

TEST_F(Validate, ReferenceAgainstItselfPassesForEveryMethodAndSamplingMode) {
  for (const auto& m : methods()) {
    for (const auto& s : samplings()) {
      const auto args = command("validate", m, s, {"--backend", "reference", "--against", "reference", "--json"});
      const CliRun r = run(args);
      ASSERT_EQ(r.code, 0) << joined(args) << "\n" << r.out << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["result"], "pass") << joined(args);
      EXPECT_EQ(j["steps_compared"], j["reference_steps"]) << joined(args);
      EXPECT_GE(j["reference_steps"].get<int>(), 2) << joined(args);
      EXPECT_EQ(j["tokens_compared"], 12) << joined(args);
      EXPECT_TRUE(j["near_ties"].empty()) << joined(args);
      EXPECT_EQ(j["candidate_runs"], 1) << joined(args);
      ASSERT_FALSE(j["quantities"].empty()) << joined(args);
      for (const auto& q : j["quantities"]) EXPECT_EQ(q["worst"], 0.0) << joined(args) << ": " << q.dump() << " (the same backend is bitwise equal)";
    }
  }
  // Plain text: a verdict line and the table of compared quantities.
  const CliRun text = run(command("validate", methods()[2], samplings()[0], {}));
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("PASS  reference against reference, method eagle", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("hidden states"), std::string::npos) << text.out;
}

// A logit error that flips a decision where the reference was far from a tie fails, and the
// report names the step, the position, both tokens, the reference's margin and the logit error.
TEST_F(Validate, PerturbedBackendFailsAtTheStepOfTheError) {
  struct Case {
    std::string method, drafter;
  };
  for (const Case& c : {Case{"sequential", ""}, Case{"eagle", path("eagle1")}, Case{"draft", path("other")}}) {
    Job job(model(), c.method, c.drafter, greedy());
    const validation::RecordedRun ref = job.record();
    // The first step from 2 on whose root decision is far from a tie.
    int step = -1;
    for (size_t s = 2; s < ref.extras.size() && step < 0; ++s)
      if (ref.extras[s].decisions[0].margin > 0.05) step = static_cast<int>(s);
    ASSERT_GE(step, 0) << c.method;
    const PerturbedModel perturbed(job.target.reference(), step, PerturbedModel::Kind::flip, 1.0);
    const validation::ValidationReport report =
        validation::validate_backends(job.setup, {"perturbed", &perturbed, job.draft_lm()}, job.reference());
    ASSERT_FALSE(report.passed) << c.method;
    ASSERT_TRUE(report.failure.has_value()) << c.method;
    const validation::Divergence& d = *report.failure;
    EXPECT_EQ(d.what, "token") << c.method;
    EXPECT_EQ(d.step, step) << c.method;
    EXPECT_EQ(d.position, ref.trace.steps[static_cast<size_t>(step)].position) << c.method;
    EXPECT_EQ(d.row, 0) << c.method;
    EXPECT_EQ(d.reference_token, perturbed.top()) << c.method;
    EXPECT_EQ(d.candidate_token, perturbed.runner_up()) << c.method;
    EXPECT_DOUBLE_EQ(d.margin, ref.extras[static_cast<size_t>(step)].decisions[0].margin) << c.method;
    EXPECT_EQ(d.margin_units, "logit") << c.method;
    EXPECT_GT(d.logit_error, 1.0) << c.method;
    EXPECT_GT(d.value, report.policy.logits_nmse) << c.method << ": the row is out of tolerance too";
    EXPECT_EQ(report.steps_compared, step) << c.method;
    EXPECT_TRUE(report.near_ties.empty()) << c.method;
    std::ostringstream text;
    validation::print_report(report, text);
    EXPECT_NE(text.str().find("token at step " + std::to_string(step)), std::string::npos) << text.str();
    // With the checkpoint's tokenizer, the tokens are shown with their text too.
    const text::ByteTokenizer tokenizer(Vocabulary::bytes(3, {{"<bos>", 0}, {"<eos>", 1}, {"<pad>", 2}}), "vocab.json", 0);
    std::ostringstream with_text;
    validation::print_report(report, with_text, &tokenizer);
    const std::string shown = "tokens: reference " + std::to_string(d.reference_token) + " '" + tokenizer.token_text(d.reference_token);
    EXPECT_NE(with_text.str().find(shown), std::string::npos) << c.method << ": " << with_text.str();
    EXPECT_NE(with_text.str().find("emitted text: reference \""), std::string::npos) << c.method << ": " << with_text.str();
  }
}

// The same flip under a near-tie (the reference's top two 1e-4 apart) is reported as a near-tie;
// the reference's token is forced and the comparison runs to the end.
TEST_F(Validate, NearTieIsReportedAndTheRunContinues) {
  struct Case {
    std::string method, drafter;
    SamplingParams sampling;
  };
  const std::vector<Case> cases = {{"sequential", "", greedy()},
                                   {"sequential", "", coupled()},
                                   {"eagle", path("eagle1"), greedy()},
                                   {"eagle3", path("eagle3"), coupled()},
                                   {"draft", path("other"), greedy()}};
  for (const Case& c : cases) {
    const std::string what = c.method + " " + to_string(c.sampling.mode);
    Job job(model(), c.method, c.drafter, c.sampling, c.method == "eagle3" ? 3 : 4);
    const int step = 3;
    const PerturbedModel reference(job.target.reference(), step, PerturbedModel::Kind::tie_below, 1e-4, c.sampling);
    const PerturbedModel candidate(job.target.reference(), step, PerturbedModel::Kind::tie_above, 1e-4, c.sampling);
    const validation::ValidationReport report =
        validation::validate_backends(job.setup, {"candidate", &candidate, job.draft_lm()}, {"reference", &reference, job.draft_lm()});
    ASSERT_GT(report.reference_steps, step) << what;
    ASSERT_TRUE(report.passed) << what << ": " << (report.failure ? report.failure->detail : "");
    ASSERT_EQ(report.near_ties.size(), 1u) << what;
    const validation::NearTie& t = report.near_ties[0];
    EXPECT_EQ(t.step, step) << what;
    EXPECT_EQ(t.kind, "choice") << what;
    EXPECT_EQ(t.row, 0) << what;
    EXPECT_NEAR(t.margin, 1e-4, 2e-5) << what;
    EXPECT_EQ(t.margin_units, "logit") << what;
    EXPECT_EQ(t.reference_token, reference.top()) << what;
    EXPECT_EQ(t.candidate_token, candidate.runner_up()) << what;
    EXPECT_LT(t.logit_error, 1e-3) << what;
    EXPECT_EQ(report.candidate_runs, 2) << what;
    EXPECT_EQ(report.steps_compared, report.reference_steps) << what;
    EXPECT_EQ(report.tokens_compared, 12) << what;
  }
}

// Against a trace that keeps only the top-k logits, a greedy near-tie is still classified (from
// the two recorded top values) and forced (the candidate's row capped at the recorded k-th value).
TEST_F(Validate, NearTieAgainstATopKTrace) {
  for (const auto& [method, drafter] : {std::pair<std::string, std::string>{"sequential", ""}, {"eagle", path("eagle1")}}) {
    Job job(model(), method, drafter, greedy());
    const int step = 2;
    const PerturbedModel reference(job.target.reference(), step, PerturbedModel::Kind::tie_below, 1e-4);
    const PerturbedModel candidate(job.target.reference(), step, PerturbedModel::Kind::tie_above, 1e-4);
    TraceMeta meta;
    meta.method = method;
    TraceRecorder recorder(meta, LogitRecording{false, 5});
    const auto proposer = job.setup.make_proposer ? job.setup.make_proposer(nullptr, nullptr) : nullptr;
    if (proposer) {
      const auto acceptor = default_acceptor(job.setup.sampling);
      decode_speculative(reference, *proposer, *acceptor, job.setup.prompt, job.setup.sampling, job.setup.options, &recorder);
    } else {
      decode_sequential(reference, job.setup.prompt, job.setup.sampling, job.setup.options, &recorder);
    }
    const Trace trace = recorder.trace();
    ASSERT_FALSE(trace.steps[step].target_logits[0].is_full()) << method;
    const validation::ValidationReport report = validation::validate_against_trace(job.setup, {"candidate", &candidate, nullptr}, trace, "top-k trace");
    ASSERT_TRUE(report.passed) << method << ": " << (report.failure ? report.failure->detail : "");
    ASSERT_EQ(report.near_ties.size(), 1u) << method;
    EXPECT_EQ(report.near_ties[0].step, step) << method;
    EXPECT_NEAR(report.near_ties[0].margin, 1e-4, 2e-5) << method;
    EXPECT_EQ(report.candidate_runs, 2) << method;
    // A real error against the same trace still fails, at its step.
    const PerturbedModel wrong(job.target.reference(), step - 1, PerturbedModel::Kind::flip, 1.0);
    const validation::ValidationReport bad = validation::validate_against_trace(job.setup, {"wrong", &wrong, nullptr}, trace, "top-k trace");
    ASSERT_FALSE(bad.passed) << method;
    EXPECT_EQ(bad.failure->step, step - 1) << method;
    EXPECT_EQ(bad.failure->what, "token") << method;
  }
}

// Drafter near-ties: a draft LM whose near-tie flips (within tolerance) gives another draft; it is
// excused and the reference's draft forced. A large drafter error fails on its logits.
TEST_F(Validate, DrafterNearTieIsForcedAndLargeDrafterErrorsFail) {
  Job job(model(), "draft", path("other"), greedy(), 3);
  const int forward = 6;  // a drafter forward of a later step
  const PerturbedModel ref_draft(*job.draft_lm(), forward, PerturbedModel::Kind::tie_below, 1e-4);
  const PerturbedModel cand_draft(*job.draft_lm(), forward, PerturbedModel::Kind::tie_above, 1e-4);
  const validation::ValidationReport tie =
      validation::validate_backends(job.setup, {"candidate", &job.target.reference(), &cand_draft}, {"reference", &job.target.reference(), &ref_draft});
  ASSERT_TRUE(tie.passed) << (tie.failure ? tie.failure->detail : "");
  ASSERT_EQ(tie.near_ties.size(), 1u);
  EXPECT_EQ(tie.near_ties[0].kind, "draft");
  EXPECT_GE(tie.near_ties[0].step, 1);
  EXPECT_EQ(tie.steps_compared, tie.reference_steps);

  const PerturbedModel bad_draft(*job.draft_lm(), forward, PerturbedModel::Kind::flip, 2.0);
  const validation::ValidationReport bad =
      validation::validate_backends(job.setup, {"candidate", &job.target.reference(), &bad_draft}, job.reference());
  ASSERT_FALSE(bad.passed);
  EXPECT_EQ(bad.failure->what, "draft LM logits");
  EXPECT_GT(bad.failure->value, bad.policy.logits_nmse);
}

// Hidden states handed to an EAGLE head are compared too, even when the logits are right.
TEST_F(Validate, HiddenStateErrorFails) {
  for (const auto& [method, head] : {std::pair<std::string, std::string>{"eagle", "eagle1"}, {"eagle3", "eagle3"}}) {
    Job job(model(), method, path(head), greedy());
    const PerturbedModel perturbed(job.target.reference(), 2, PerturbedModel::Kind::hidden, 0.5);
    const validation::ValidationReport report =
        validation::validate_backends(job.setup, {"perturbed", &perturbed, nullptr}, job.reference());
    ASSERT_FALSE(report.passed) << method;
    EXPECT_EQ(report.failure->what, "hidden states") << method;
    EXPECT_EQ(report.failure->step, 2) << method;
  }
}

// Traces recorded by specdec record validate (full and top-k logits, every sampling mode); a
// trace whose logits or tokens were tampered with fails at the tampered step.
TEST_F(Validate, RecordedTracesPassTamperedTracesFail) {
  int index = 0;
  for (const auto& m : {methods()[0], methods()[1], methods()[3], methods()[5]}) {
    for (const auto& s : samplings()) {
      for (const std::string logits : {"full", "topk"}) {
        std::string name = "trace";  // appended: GCC 12 warns falsely (-Wrestrict) on "t" + temporary
        name += std::to_string(index++) + ".h5";
        const std::string trace = path(name);
        const CliRun rec = run(command("record", m, s, {"--logits", logits, "--out", trace}));
        ASSERT_EQ(rec.code, 0) << rec.err;
        EXPECT_EQ(nlohmann::json::parse(read_trace(trace).meta.config_json)["backend"], "reference");
        const std::vector<std::string> args = {"validate", "--model", model(), "--trace", trace, "--json"};
        const CliRun r = run(args);
        ASSERT_EQ(r.code, 0) << joined(args) << " (" << m[1] << ", " << s[1] << ", " << logits << ")\n" << r.out << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["reference"], "trace " + trace);
        EXPECT_EQ(j["steps_compared"], j["reference_steps"]);
      }
    }
  }

  // Greedy sequential with full logits: tamper one logit, then one token.
  const std::string clean = path("clean.h5");
  ASSERT_EQ(run(command("record", methods()[0], samplings()[0], {"--logits", "full", "--out", clean})).code, 0);
  Trace t = read_trace(clean);
  std::vector<float>& row = t.steps[4].target_logits[0].full;
  const int32_t chosen = t.steps[4].emitted_tokens[0];
  row[chosen == 7 ? 8 : 7] -= 5.0f;  // lowered: the choice stays, only the logits are off
  const std::string tampered_logits = path("tampered_logits.h5");
  write_trace(tampered_logits, t);
  CliRun r = run({"validate", "--model", model(), "--trace", tampered_logits, "--json"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"], "fail");
  EXPECT_EQ(j["failure"]["step"], 4);
  EXPECT_EQ(j["failure"]["what"], "target logits");
  EXPECT_GT(j["failure"]["value"].get<double>(), 1e-3);

  t = read_trace(clean);
  const int32_t original = t.steps[6].emitted_tokens[0];
  t.steps[6].emitted_tokens[0] = t.output[6] = original == 50 ? 51 : 50;
  const std::string tampered_token = path("tampered_token.h5");
  write_trace(tampered_token, t);
  r = run({"validate", "--model", model(), "--trace", tampered_token, "--json"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["failure"]["step"], 6);
  EXPECT_NE(j["failure"]["detail"].get<std::string>().find("emitted_tokens"), std::string::npos) << j.dump();
}

TEST_F(Validate, BadInputsGiveClearErrorsAndExitCode2) {
  const std::string trace = path("errors.h5");
  ASSERT_EQ(run(command("record", methods()[0], samplings()[0], {"--out", trace})).code, 0);
  const std::string head_trace = path("errors_eagle.h5");
  ASSERT_EQ(run(command("record", methods()[2], samplings()[0], {"--out", head_trace})).code, 0);
  const std::string not_a_trace = path("not_a_trace.h5");
  testing::write_text(not_a_trace, "hello");
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  std::vector<Case> cases = {
      {{"validate", "--model", model(), "--trace", path("missing.h5")}, "missing.h5"},
      {{"validate", "--model", model(), "--trace", not_a_trace}, "not_a_trace.h5"},
      {{"validate", "--model", path("other"), "--trace", trace}, "fingerprint"},
      // Another model's trace is named as such before its drafter (made for tiny) is found not to fit.
      {{"validate", "--model", std::string(SPECDEC_SOURCE_DIR) + "/models/target", "--trace", head_trace},
       "was recorded with a target of fingerprint"},
      {{"validate", "--model", model(), "--trace", head_trace, "--drafter", path("eagle3")}, "eagle3 head"},
      {{"validate", "--model", model(), "--trace", trace, "--prompt", "x"}, "the prompt comes from the trace"},
      {{"validate", "--model", model(), "--prompt", "x", "--backend", "gpu"}, "--backend 'gpu' is not a backend"},
      {{"validate", "--model", model(), "--prompt", "x", "--against", "warp"}, "--against 'warp' is not a backend"},
      {{"validate", "--model", model(), "--prompt", "x", "--method", "draft"}, "--drafter"},
      {{"validate", "--model", model(), "--prompt", "x", "--bogus"}, "bogus"},
      {{"validate", "--prompt", "x"}, "--model"},
  };
  if (!backend_available("cpu")) cases.push_back({{"validate", "--model", model(), "--prompt", "x", "--backend", "cpu"}, "no cpu backend"});
  for (const Case& c : cases) {
    const CliRun r = run(c.args);
    EXPECT_EQ(r.code, 2) << joined(c.args) << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << joined(c.args) << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("specdec validate: error: ", 0), 0u) << r.err;
  }
}

// A trace of another exactness contract, or of none (recorded before traces carried one), is
// refused before anything runs, by the command and by the library, naming the file, both versions
// and how to re-record it.
TEST_F(Validate, TracesOfAnotherExactnessContractAreRefused) {
  const std::string current = path("contract_current.h5");
  ASSERT_EQ(run(command("record", methods()[0], samplings()[0], {"--out", current})).code, 0);
  Trace t = read_trace(current);
  t.meta.exactness_contract = "1";
  const std::string older = path("contract_1.h5");
  write_trace(older, t);
  t.meta.exactness_contract.clear();
  const std::string none = path("contract_none.h5");
  write_trace(none, t);
  const std::string expected = std::string("this specdec computes under contract '") + exact::kContractVersion + "'";

  for (const auto& [trace, recorded] : {std::pair<std::string, std::string>{older, "'1'"}, {none, "none"}}) {
    const CliRun r = run({"validate", "--model", model(), "--trace", trace, "--json"});
    EXPECT_EQ(r.code, 2) << trace << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("specdec validate: error: " + trace + ": trace of exactness contract " + recorded, 0), 0u) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("re-record it with `specdec record`"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // The current trace passes.
  EXPECT_EQ(run({"validate", "--model", model(), "--trace", current}).code, 0);

  // validate_against_trace refuses it too, for callers that read traces themselves.
  Job job(model(), "sequential", "", greedy());
  t.meta.exactness_contract = "1";
  job.setup.prompt = t.prompt;
  const std::string msg = testing::error_of(
      [&] { validation::validate_against_trace(job.setup, {"candidate", &job.target.reference(), nullptr}, t, "old run"); });
  EXPECT_EQ(msg.rfind("old run: trace of exactness contract '1'", 0), 0u) << msg;
}

// The tolerance table in docs/validation.md is the one the code applies.
TEST_F(Validate, DocumentedPolicyIsTheCodesPolicy) {
  const CliRun r = run({"validate", "--policy"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, validation::policy_markdown(validation::TolerancePolicy::defaults()));
  const std::string doc = testing::read_text(fs::path(SPECDEC_SOURCE_DIR) / "docs" / "validation.md");
  EXPECT_NE(doc.find(r.out), std::string::npos) << "docs/validation.md must contain the table `specdec validate --policy` prints:\n" << r.out;
}

// --backend picks the forward implementation of generate / record (target, draft LM, head) and is
// recorded in the trace's run configuration; an unknown backend is refused.
// --seeds and --prompts validate several live runs in one command: each run is reported, the
// verdict is every run's, and the coverage is the sum of theirs.
TEST_F(Validate, SeedsAndPromptsValidateSeveralRuns) {
  const std::string prompts = path("prompts.json");
  testing::write_text(prompts, R"({"prose": ["The cat sat", "Once upon"]})");
  const std::vector<std::string> base = {"validate", "--model", model(), "--method", "eagle", "--drafter", path("eagle1"),
                                         "--max-new-tokens", "12", "--sampling", "sample", "--seed", "5"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const CliRun r = run(with({"--prompts", prompts, "--seeds", "2", "--json"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["result"], "pass");
  long rejected = 0, bonus = 0;
  for (const auto& run_j : j["runs"]) {
    rejected += run_j["report"]["coverage"]["rejected"].get<long>();
    bonus += run_j["report"]["coverage"]["bonus"].get<long>();
  }
  EXPECT_EQ(j["coverage"]["rejected"].get<long>(), rejected);
  EXPECT_EQ(j["coverage"]["bonus"].get<long>(), bonus);
  EXPECT_EQ(j["runs"][1]["seed"], 6);
  EXPECT_EQ(j["runs"][2]["prompt_id"], "prose-1");
  const CliRun text = run(with({"--prompt", "The cat", "--seeds", "3"}));
  ASSERT_EQ(text.code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("seed 7: PASS"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("PASS  3 of 3 runs passed; covered in all: "), std::string::npos) << text.out;
  for (const auto& [extra, fragment] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--prompt", "x", "--seeds", "0"}, "--seeds must be in [1, 1000], got 0"},
           {{"--prompts", prompts, "--prompt", "x"}, "give --prompts or --prompt / --prompt-ids, not both"},
           {{"--trace", path("t.h5"), "--seeds", "2"}, "--seeds and --prompts validate live runs"}}) {
    const CliRun bad = run(with(extra));
    EXPECT_EQ(bad.code, 2) << joined(extra);
    EXPECT_NE(bad.err.find(fragment), std::string::npos) << joined(extra) << ": " << bad.err;
  }
}

TEST_F(Validate, BackendOptionSelectsTheForwardImplementation) {
  const CliRun bad = run(command("generate", methods()[0], samplings()[0], {"--backend", "gpu"}));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--backend 'gpu' is not a backend; available backends: reference"), std::string::npos) << bad.err;
  std::vector<std::string> backends = {"reference"};
  if (backend_available("cpu")) backends.push_back("cpu");
  for (const auto& m : {methods()[1], methods()[4]}) {
    std::vector<int32_t> first;
    for (const std::string& b : backends) {
      const CliRun g = run(command("generate", m, samplings()[1], {"--backend", b, "--json"}));
      ASSERT_EQ(g.code, 0) << b << ": " << g.err;
      const auto j = nlohmann::json::parse(g.out);
      EXPECT_EQ(j["backend"], b);
      const auto tokens = j["output_tokens"].get<std::vector<int32_t>>();
      if (first.empty()) first = tokens;
      EXPECT_EQ(tokens, first) << m[1] << " on " << b << ": every backend decodes the same tokens";
      const std::string trace = path("backend_" + b + ".h5");
      ASSERT_EQ(run(command("record", m, samplings()[1], {"--backend", b, "--out", trace})).code, 0);
      EXPECT_EQ(nlohmann::json::parse(read_trace(trace).meta.config_json)["backend"], b);
    }
  }
}

// The optimized CPU backend against the reference, every method, live and against a trace.
TEST_F(Validate, CpuBackendMatchesTheReferenceForEveryMethod) {
  if (!backend_available("cpu")) GTEST_SKIP() << "this build has no cpu backend (specdec_optimized_cpu)";
  for (const auto& m : methods()) {
    for (const auto& s : {samplings()[0], samplings()[2]}) {
      const auto args = command("validate", m, s, {"--backend", "cpu", "--against", "reference", "--json"});
      const CliRun r = run(args);
      ASSERT_EQ(r.code, 0) << joined(args) << "\n" << r.out << r.err;
      EXPECT_EQ(nlohmann::json::parse(r.out)["steps_compared"], nlohmann::json::parse(r.out)["reference_steps"]) << joined(args);
    }
  }
  // The heads run on the backend chosen: load_drafter binds them, and validate binds the
  // candidate side's.
  for (const auto& [method, dir] : {std::pair<std::string, std::string>{"eagle", "eagle1"}, {"eagle3", "eagle3"}, {"peagle", "peagle"}}) {
    DecodeArgs args;
    args.model = model();
    args.method.name = method;
    args.drafter = path(dir);
    const LoadedModel target = load_model(model());
    args.backend = "reference";
    EXPECT_EQ(load_drafter(args, target)->head->engine(), nullptr) << method;
    args.backend = "cpu";
    const auto on_cpu = load_drafter(args, target);
    ASSERT_NE(on_cpu->head->engine(), nullptr) << method;
    EXPECT_EQ(on_cpu->head->engine()->name(), "cpu") << method;
  }
  const std::string trace = path("cpu_trace.h5");
  ASSERT_EQ(run(command("record", methods()[2], samplings()[2], {"--logits", "topk", "--out", trace})).code, 0);
  const CliRun r = run({"validate", "--model", model(), "--backend", "cpu", "--trace", trace});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace specdec
