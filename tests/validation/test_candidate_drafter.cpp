// A candidate trace that records its drafter's inputs and outputs (traces/SCHEMA.md, "Drafter
// inputs and outputs"): validate pairs them by token and position with the live reference
// drafter's rows and compares each pair. A drafter that computes wrongly fails where its outputs
// depart while its inputs agree; other target states fed in fail as inputs; another drafting
// schedule passes; a draft that differs where every row before the divergence has its counterpart
// and agrees is a drafter near-tie, excused when the reference drafter's own margin is small and a
// failure when it is not; without the rows a differing draft always fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "validation/forced_proposer.hpp"
#include "validation/observed_head.hpp"
#include "validation/run_recorder.hpp"
#include "validation/validator.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/transformer.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

const std::string kModels = SPECDEC_SOURCE_DIR "/models/";
constexpr int kCapacity = 160;

class CandidateDrafter : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    loaded_ = new LlamaModel(load_llama_checkpoint(kModels + "target"));
    target_ = new Transformer(loaded_->config, loaded_->weights);
    head_ = new EagleHead(load_eagle_head(kModels + "eagle1", *target_));
  }
  static void TearDownTestSuite() {
    delete head_;
    delete target_;
    delete loaded_;
  }

  validation::ValidationSetup setup() const {
    validation::ValidationSetup s;
    s.method = "eagle";
    s.prompt = {0, 68, 113, 103, 35, 74, 114, 103};
    s.options.max_new_tokens = 40;
    s.options.stop_at_eos = false;
    s.make_proposer = [](const LanguageModel*, const EagleHead* head) {
      return std::make_unique<EagleProposer>(*head, EagleOptions{}, kCapacity);
    };
    return s;
  }

  // An engine's run with `head` (greedy EAGLE-1 chains of 4), proposing `forced` at the steps
  // given, with every drafter row's token, position, call, feature and hidden state recorded;
  // `forwards` receives the head forwards.
  Trace record(const EagleHead& head, const std::map<int, Proposal>& forced = {},
               std::vector<validation::HeadForwardRecord>* forwards = nullptr) const {
    const validation::ValidationSetup s = setup();
    int step = 0;
    std::shared_ptr<const validation::ObservedHeadEngine> observer;
    const EagleHead observed = validation::observe_head(head, &step, observer);
    EagleProposer inner(observed, EagleOptions{}, kCapacity);
    validation::ForcedProposer proposer(inner, &step);
    for (const auto& [at, p] : forced) proposer.force(at, p);
    TraceMeta meta;
    meta.method = "eagle";
    validation::RunRecorder recorder(meta, s.sampling, 0);
    decode_speculative(*target_, proposer, *default_acceptor(s.sampling), s.prompt, s.sampling, s.options, &recorder);
    Trace t = recorder.take().trace;
    const int H = head.config().hidden();
    // F: EAGLE-1 the target's hidden state; EAGLE-3 the fused aux states (its fed-back rows,
    // H wide, fill the first H columns).
    const int F = head.config().kind == EagleKind::eagle1 ? H : head.config().feature_width();
    t.drafter_io = {true, F, H, 0};
    std::map<int, int> calls;
    for (const validation::HeadForwardRecord& f : observer->records()) {
      StepRecord& r = t.steps.at(static_cast<std::size_t>(f.step));
      const int call = calls[f.step]++;
      for (std::size_t i = 0; i < f.tokens.size(); ++i) {
        r.drafter_tokens.push_back(f.tokens[i]);
        r.drafter_positions.push_back(f.positions[i]);
        r.drafter_calls.push_back(call);
        const Eigen::Index row = static_cast<Eigen::Index>(i);
        std::vector<float> feature(static_cast<std::size_t>(F), 0.0f);
        std::copy(f.features.row(row).data(), f.features.row(row).data() + std::min<Eigen::Index>(F, f.features.cols()), feature.begin());
        r.drafter_features.insert(r.drafter_features.end(), feature.begin(), feature.end());
        r.drafter_hidden.insert(r.drafter_hidden.end(), f.hidden.row(row).data(), f.hidden.row(row).data() + H);
      }
    }
    if (forwards) *forwards = observer->records();
    return t;
  }

  validation::ValidationReport validate(const Trace& t, const validation::TolerancePolicy& policy = validation::TolerancePolicy::defaults(),
                                        const EagleHead* head = nullptr) const {
    validation::ValidationSetup s = setup();
    if (head && head->config().kind != EagleKind::eagle1) s.method = "eagle3";
    return validation::validate_candidate_trace(s, {"reference", target_, nullptr, head ? head : head_}, t, "candidate", false, policy);
  }

  static LlamaModel* loaded_;
  static Transformer* target_;
  static EagleHead* head_;
};
LlamaModel* CandidateDrafter::loaded_ = nullptr;
Transformer* CandidateDrafter::target_ = nullptr;
EagleHead* CandidateDrafter::head_ = nullptr;

std::string report_text(const validation::ValidationReport& r) {
  std::ostringstream out;
  validation::print_report(r, out);
  return out.str();
}

const validation::QuantitySummary* quantity(const validation::ValidationReport& r, const std::string& name) {
  for (const auto& q : r.quantities)
    if (q.quantity == name) return &q;
  return nullptr;
}

TEST_F(CandidateDrafter, AnEngineWhoseDrafterAgreesPassesWithItsRowsCompared) {
  const validation::ValidationReport r = validate(record(*head_));
  ASSERT_TRUE(r.passed) << report_text(r);
  for (const char* name : {"drafter features", "drafter hidden states"}) {
    const auto* q = quantity(r, name);
    ASSERT_NE(q, nullptr) << name << "\n" << report_text(r);
    EXPECT_GT(q->compared, 40) << name;
    EXPECT_EQ(q->worst, 0) << name << ": the same code on both sides";
  }
}

// EAGLE-3 feeds its own output back as a projected row (H wide, no fc): those rows are compared
// over the H columns they carry.
TEST_F(CandidateDrafter, AnEagle3DrafterWithFedBackRowsPasses) {
  const EagleHead eagle3 = load_eagle_head(kModels + "eagle3", *target_);
  const Trace t = record(eagle3);
  ASSERT_EQ(t.drafter_io.feature_size, eagle3.config().feature_width());
  const validation::ValidationReport r = validate(t, validation::TolerancePolicy::defaults(), &eagle3);
  ASSERT_TRUE(r.passed) << report_text(r);
  const auto* q = quantity(r, "drafter features");
  ASSERT_NE(q, nullptr);
  EXPECT_GT(q->compared, 40);
  // A fed-back row's state changed: named as an input of that row.
  Trace bad = t;
  StepRecord& step = bad.steps.at(2);
  const std::size_t last = step.drafter_tokens.size() - 1;  // a chain step: a fed-back row
  step.drafter_features[last * static_cast<std::size_t>(t.drafter_io.feature_size)] += 10.0f;
  const validation::ValidationReport v = validate(bad, validation::TolerancePolicy::defaults(), &eagle3);
  ASSERT_FALSE(v.passed);
  EXPECT_EQ(v.failure->what, "drafter inputs") << report_text(v);
  EXPECT_EQ(v.failure->step, 2);
  EXPECT_EQ(v.failure->row, static_cast<int>(last));
}

TEST_F(CandidateDrafter, ADrafterThatComputesWronglyIsNamedAtItsFirstRow) {
  EagleWeights w = head_->weights();
  w.layers[0].o_proj *= 1.02f;  // the head's attention output, 2% off
  const EagleHead bugged(head_->config(), w, *target_, "bugged head");
  const validation::ValidationReport r = validate(record(bugged));
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.failure->what, "drafter hidden") << report_text(r);
  EXPECT_EQ(r.failure->step, 1);
  EXPECT_EQ(r.failure->row, 0) << "the first catch-up row already departs";
  EXPECT_EQ(r.failure->drafter_call, 0);
  EXPECT_EQ(r.failure->position, 0);
  EXPECT_GT(r.failure->value, r.failure->bound);
  const std::string text = report_text(r);
  EXPECT_NE(text.find("first divergence: drafter hidden at step 1, position 0, drafter row 0 (drafter forward 0 of the step)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("while its inputs agree"), std::string::npos) << text;
}

TEST_F(CandidateDrafter, InputsFedWronglyAreNamedWithTheirRow) {
  const Trace clean = record(*head_);
  const int H = head_->config().hidden();
  {  // Other target states: step 3's first row's features 10% off.
    Trace t = clean;
    StepRecord& r = t.steps.at(3);
    ASSERT_FALSE(r.drafter_tokens.empty());
    for (int i = 0; i < H; ++i) r.drafter_features[static_cast<std::size_t>(i)] *= 1.1f;
    const validation::ValidationReport v = validate(t);
    ASSERT_FALSE(v.passed);
    EXPECT_EQ(v.failure->what, "drafter inputs") << report_text(v);
    EXPECT_EQ(v.failure->step, 3);
    EXPECT_EQ(v.failure->row, 0);
    EXPECT_EQ(v.failure->position, r.drafter_positions[0]);
    EXPECT_NE(v.failure->detail.find("feature row"), std::string::npos) << v.failure->detail;
  }
}

// Another engine may schedule its drafter forwards differently: rows are paired by token and
// position, so reordered rows and rows the reference never ran pass while the drafts agree.
TEST_F(CandidateDrafter, RowsOfAnotherDraftingSchedulePassWhileTheDraftsAgree) {
  const Trace clean = record(*head_);
  const int H = head_->config().hidden();
  Trace t = clean;
  StepRecord& r = t.steps.at(2);
  ASSERT_GE(r.drafter_tokens.size(), 3u);
  // The step's first two rows in the other order, and one extra row (a recomputed pair).
  std::swap(r.drafter_tokens[0], r.drafter_tokens[1]);
  std::swap(r.drafter_positions[0], r.drafter_positions[1]);
  std::swap_ranges(r.drafter_features.begin(), r.drafter_features.begin() + H, r.drafter_features.begin() + H);
  std::swap_ranges(r.drafter_hidden.begin(), r.drafter_hidden.begin() + H, r.drafter_hidden.begin() + H);
  r.drafter_tokens.push_back(r.drafter_tokens.back());
  r.drafter_positions.push_back(r.drafter_positions.back() + 100);
  r.drafter_calls.push_back(r.drafter_calls.back() + 1);
  r.drafter_features.insert(r.drafter_features.end(), r.drafter_features.end() - H, r.drafter_features.end());
  r.drafter_hidden.insert(r.drafter_hidden.end(), r.drafter_hidden.end() - H, r.drafter_hidden.end());
  const validation::ValidationReport v = validate(t);
  EXPECT_TRUE(v.passed) << report_text(v);
  // The swapped rows were still compared with their counterparts: a changed one is named by its
  // row in the candidate's trace.
  t.steps.at(2).drafter_hidden[0] += 1.0f;  // now the row of (token, position) of the original row 1
  const validation::ValidationReport w = validate(t);
  ASSERT_FALSE(w.passed);
  EXPECT_EQ(w.failure->what, "drafter hidden") << report_text(w);
  EXPECT_EQ(w.failure->step, 2);
  EXPECT_EQ(w.failure->row, 0);
  EXPECT_EQ(w.failure->position, clean.steps.at(2).drafter_positions[1]);
}

// What became of the candidate's drafter rows is in the report: how many were compared and passed,
// and how many were passed over (no reference row fed the same token at the same position) — in
// the summary line and the JSON. Rows that were all passed over validated nothing: a failure.
TEST_F(CandidateDrafter, TheReportCountsTheRowsComparedAndPassedOver) {
  const Trace clean = record(*head_);
  long rows = 0;
  for (const StepRecord& s : clean.steps) rows += static_cast<long>(s.drafter_tokens.size());
  ASSERT_GT(rows, 40);
  const validation::ValidationReport r = validate(clean);
  ASSERT_TRUE(r.passed) << report_text(r);
  EXPECT_EQ(r.drafter_rows.recorded, rows);
  EXPECT_EQ(r.drafter_rows.compared, rows);
  EXPECT_EQ(r.drafter_rows.passed, rows);
  EXPECT_EQ(r.drafter_rows.passed_over, 0);
  for (const auto& q : r.quantities) EXPECT_EQ(q.passed, q.compared) << q.quantity;
  const std::string n = std::to_string(rows);
  EXPECT_NE(report_text(r).find("1 candidate run, drafter rows: " + n + " of " + n + " compared (" + n + " passed), 0 passed over"),
            std::string::npos) << report_text(r);

  // One row the reference never ran (a later position): passed over, and counted.
  const int H = head_->config().hidden();
  Trace extra = clean;
  StepRecord& step = extra.steps.at(3);
  step.drafter_tokens.push_back(step.drafter_tokens.back());
  step.drafter_positions.push_back(step.drafter_positions.back() + 30);
  step.drafter_calls.push_back(step.drafter_calls.back() + 1);
  step.drafter_features.insert(step.drafter_features.end(), step.drafter_features.end() - H, step.drafter_features.end());
  step.drafter_hidden.insert(step.drafter_hidden.end(), step.drafter_hidden.end() - H, step.drafter_hidden.end());
  const validation::ValidationReport v = validate(extra);
  ASSERT_TRUE(v.passed) << report_text(v);
  EXPECT_EQ(v.drafter_rows.passed_over, 1);
  EXPECT_EQ(v.drafter_rows.compared, rows);
  EXPECT_NE(report_text(v).find("drafter rows: " + n + " of " + std::to_string(rows + 1) + " compared (" + n + " passed), 1 passed over"),
            std::string::npos) << report_text(v);
  const nlohmann::json j = validation::to_json(v);
  EXPECT_EQ(j["drafter_rows"]["passed_over"], 1) << j.dump();
  EXPECT_EQ(j["drafter_rows"]["compared"], rows) << j.dump();
  EXPECT_EQ(j["drafter_rows"]["not_compared"], 0) << j.dump();

  // Every row at a position the reference's drafter did not run (an engine that numbers its
  // positions otherwise): nothing was compared, and the validation fails saying so.
  Trace shifted = clean;
  for (StepRecord& s : shifted.steps)
    for (int64_t& p : s.drafter_positions) p += 1000;
  const validation::ValidationReport w = validate(shifted);
  ASSERT_FALSE(w.passed) << report_text(w);
  EXPECT_EQ(w.failure->what, "drafter rows") << report_text(w);
  EXPECT_EQ(w.drafter_rows.compared, 0);
  EXPECT_EQ(w.drafter_rows.passed_over, rows);
  EXPECT_NE(w.failure->detail.find("nothing of the candidate's drafter was validated"), std::string::npos) << w.failure->detail;
  EXPECT_NE(report_text(w).find("0 of " + n + " compared (0 passed), " + n + " passed over"), std::string::npos) << report_text(w);
}

// The candidate drafted the runner-up where the reference drafter's choice is closest: with its
// drafter rows agreeing, that is a near-tie when the margin is below the threshold, a wrong choice
// when it is not, and a failure without the rows.
TEST_F(CandidateDrafter, ADifferingDraftIsANearTieOnlyWhenItsRowsAgreeAndTheMarginIsSmall) {
  std::vector<validation::HeadForwardRecord> forwards;
  const Trace clean = record(*head_, {}, &forwards);
  // The closest greedy draft choice of the run: forward j of step s drafts node j.
  int best_step = -1, best_node = -1;
  int32_t runner_up = -1;
  double best_gap = 1e30;
  std::map<int, int> node;
  for (const validation::HeadForwardRecord& f : forwards) {
    const int j = node[f.step]++;
    ASSERT_EQ(f.logits.rows(), 1);
    std::vector<int32_t> order(static_cast<std::size_t>(f.logits.cols()));
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int32_t a, int32_t b) { return f.logits(0, a) > f.logits(0, b); });
    const double gap = static_cast<double>(f.logits(0, order[0])) - f.logits(0, order[1]);
    if (gap < best_gap) best_gap = gap, best_step = f.step, best_node = j, runner_up = order[1];
  }
  ASSERT_GE(best_step, 1);
  const StepRecord& original = clean.steps.at(static_cast<std::size_t>(best_step));
  ASSERT_LT(best_node, static_cast<int>(original.draft_tokens.size()));
  ASSERT_NE(original.draft_tokens[static_cast<std::size_t>(best_node)], runner_up);
  // The engine's draft there: the same chain up to the node, then the runner-up, and no further.
  Proposal p;
  std::vector<int32_t> chain(original.draft_tokens.begin(), original.draft_tokens.begin() + best_node);
  chain.push_back(runner_up);
  p.tree = DraftTree::chain(chain);
  const Trace candidate = record(*head_, {{best_step, p}});
  ASSERT_NE(candidate.steps.at(static_cast<std::size_t>(best_step)).draft_tokens, original.draft_tokens);

  validation::TolerancePolicy loose = validation::TolerancePolicy::defaults();
  loose.near_tie_logit_margin = std::max(loose.near_tie_logit_margin, 1.5 * best_gap + 1e-6);
  const validation::ValidationReport excused = validate(candidate, loose);
  ASSERT_TRUE(excused.passed) << "gap " << best_gap << " at step " << best_step << " node " << best_node << "\n" << report_text(excused);
  ASSERT_EQ(excused.near_ties.size(), 1u);
  const validation::NearTie& t = excused.near_ties[0];
  EXPECT_EQ(t.kind, "draft");
  EXPECT_EQ(t.step, best_step);
  EXPECT_EQ(t.reference_token, original.draft_tokens[static_cast<std::size_t>(best_node)]);
  EXPECT_EQ(t.candidate_token, runner_up);
  EXPECT_NEAR(t.margin, best_gap, 1e-5) << "the reference drafter's own margin";
  EXPECT_EQ(excused.candidate_runs, 2) << "the candidate's draft is forced once";

  validation::TolerancePolicy tight = validation::TolerancePolicy::defaults();
  tight.near_tie_logit_margin = 0.5 * best_gap;
  const validation::ValidationReport wrong = validate(candidate, tight);
  ASSERT_FALSE(wrong.passed);
  EXPECT_EQ(wrong.failure->what, "draft") << report_text(wrong);
  EXPECT_EQ(wrong.failure->step, best_step);
  EXPECT_NEAR(wrong.failure->margin, best_gap, 1e-5);
  EXPECT_NE(wrong.failure->detail.find("chose its draft wrongly"), std::string::npos) << wrong.failure->detail;

  // With a differing draft every row before the divergence needs its counterpart: a row the
  // reference never ran (here at a position nobody drafted) fails the excuse.
  {
    const int H = head_->config().hidden();
    Trace extra = candidate;
    StepRecord& r = extra.steps.at(static_cast<std::size_t>(best_step));
    int32_t unused = 0;  // a token of no draft node: the row cannot be where the drafts part
    while (std::find(r.draft_tokens.begin(), r.draft_tokens.end(), unused) != r.draft_tokens.end()) ++unused;
    r.drafter_tokens.insert(r.drafter_tokens.begin(), unused);
    r.drafter_positions.insert(r.drafter_positions.begin(), r.drafter_positions.front() + 1000);
    r.drafter_calls.insert(r.drafter_calls.begin(), 0);
    r.drafter_features.insert(r.drafter_features.begin(), r.drafter_features.begin(), r.drafter_features.begin() + H);
    r.drafter_hidden.insert(r.drafter_hidden.begin(), r.drafter_hidden.begin(), r.drafter_hidden.begin() + H);
    const validation::ValidationReport v = validate(extra, loose);
    ASSERT_FALSE(v.passed);
    EXPECT_EQ(v.failure->what, "drafter inputs") << report_text(v);
    EXPECT_EQ(v.failure->step, best_step);
    EXPECT_EQ(v.failure->row, 0);
    EXPECT_NE(v.failure->detail.find("fed no such row"), std::string::npos) << v.failure->detail;
  }

  Trace bare = candidate;
  bare.drafter_io = {};
  for (StepRecord& r : bare.steps) {
    r.drafter_tokens.clear(), r.drafter_positions.clear(), r.drafter_calls.clear();
    r.drafter_features.clear(), r.drafter_hidden.clear();
  }
  const validation::ValidationReport without = validate(bare, loose);
  ASSERT_FALSE(without.passed);
  EXPECT_EQ(without.failure->what, "draft") << report_text(without);
  EXPECT_NE(without.failure->detail.find("unless the trace records the drafter's inputs"), std::string::npos) << without.failure->detail;
}

}  // namespace
}  // namespace specdec
