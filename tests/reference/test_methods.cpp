// The method registry's test table (reference/methods): one row per registered method and draft
// shape, run on the bundled trained models on every backend built here. For every row:
//   - greedy and coupled output equals sequential decoding's, token for token;
//   - the spec survives its JSON form, and every alias names its method;
//   - the drafter forwards the proposer really runs (counted through wrappers around the draft LM
//     and the head) equal the registry's schedule, which is what the simulator prices.
// A new method adds its rows to method_rows() below.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/drafters/medusa_heads.hpp"
#include "reference/methods/draft_schedule.hpp"
#include "reference/methods/registry.hpp"
#include "runtime/backend.hpp"
#include "runtime/method_runner.hpp"
#include "tests/reference/method_table.hpp"

namespace specdec {
namespace {

const std::vector<int32_t> kPrompt = {0, 76, 113, 35, 119, 107, 104, 35, 101, 104, 106, 108, 113, 113, 108, 113, 106};  // "<bos>In the beginning"

using testing::backends_built_here;
using testing::bundled_target;
using testing::method_rows;

DecodeArgs args_for(const MethodSpec& spec, const std::string& backend, const std::string& sampling) {
  DecodeArgs a = testing::bundled_method_args(spec, backend);
  a.sampling = sampling;
  a.temperature = 0.8;
  a.seed = 7;
  a.max_new_tokens = 20;
  a.ignore_eos = true;
  return a;
}

TEST(MethodRegistry, EveryMethodEqualsSequentialOnEveryBackend) {
  for (const std::string& backend : backends_built_here()) {
    const LoadedModel& target = bundled_target(backend);
    for (const char* sampling : {"greedy", "coupled"}) {
      const DecodeArgs seq = args_for(MethodSpec{}, backend, sampling);
      const std::vector<int32_t> expected =
          run_method(seq, target, kPrompt, sampling_params(seq), generation_options(seq)).tokens;
      ASSERT_EQ(expected.size(), 20u);
      for (const MethodSpec& spec : method_rows()) {
        const DecodeArgs a = args_for(spec, backend, sampling);
        const GenerationResult r = run_method(a, target, kPrompt, sampling_params(a), generation_options(a));
        EXPECT_EQ(r.tokens, expected) << spec.label() << " on " << backend << ", " << sampling << " (seed 7)";
      }
    }
  }
}

// On a backend other than the reference, no method loads the target's fp32 copy: the target
// computes on the backend, heads bind to its embeddings and LM head alone, and the fingerprint
// streamed from the files equals the one of the loaded reference weights.
TEST(MethodRegistry, OtherBackendsNeverLoadTheFp32Target) {
  const std::string path = args_for(MethodSpec{}, "reference", "greedy").model;
  const std::string want = load_model(path, "reference").fingerprint();
  for (const std::string& backend : backends_built_here()) {
    if (backend == "reference") continue;
    const LoadedModel target = load_model(path, backend);
    const LoadedModel reference_target = load_model(path, "reference");
    for (const MethodSpec& spec : method_rows()) {
      const std::optional<LoadedDrafter> d = load_drafter(args_for(spec, backend, "greedy"), target);
      EXPECT_FALSE(target.reference_loaded()) << spec.label() << " on " << backend;
      if (!d || !d->head) continue;
      // The head's fingerprint is the reference run's, however the head is held.
      EXPECT_EQ(d->fingerprint, load_drafter(args_for(spec, "reference", "greedy"), reference_target)->fingerprint)
          << spec.label() << " on " << backend;
      // The cpu backend holds one copy of a head: its packed weights, and the target's packed
      // embeddings and LM head in place of fp32 ones.
      if (backend == "cpu") {
        EXPECT_TRUE(d->head->weights_released()) << spec.label();
        EXPECT_EQ(d->head->weights().fc.size(), 0) << spec.label();
        EXPECT_FALSE(d->head->target().has_tensors()) << spec.label();
      }
    }
    EXPECT_EQ(target.fingerprint(), want) << backend;
    EXPECT_FALSE(target.reference_loaded()) << backend;
  }
}

TEST(MethodRegistry, SpecsRoundTripThroughJson) {
  for (const MethodSpec& spec : method_rows()) {
    const nlohmann::json j = spec.to_json();
    EXPECT_EQ(method_from_json(j, "row"), spec.normalized()) << j.dump();
    EXPECT_EQ(method_from_json(j, "row").to_json(), j) << spec.label();
    EXPECT_EQ(j["method"], spec.name);
  }
  // Options a shape does not use are dropped, so equal runs have equal JSON.
  MethodSpec chain;
  chain.name = "eagle";
  chain.depth = 99;
  EXPECT_EQ(chain.to_json(), (nlohmann::json{{"method", "eagle"}, {"tree", "chain"}, {"k", 4}}));
  EXPECT_EQ(MethodSpec{}.to_json(), (nlohmann::json{{"method", "sequential"}}));
}

TEST(MethodRegistry, AliasesNameTheirMethodEverywhere) {
  for (const MethodEntry& e : method_registry()) {
    EXPECT_EQ(canonical_method_name(e.name), e.name);
    EXPECT_EQ(method_entry(e.name).name, e.name);
    for (const std::string& alias : e.aliases) {
      EXPECT_EQ(canonical_method_name(alias), e.name) << alias;
      std::string upper = alias;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      EXPECT_EQ(method_entry(upper).name, e.name) << upper;
      const nlohmann::json j = {{"method", alias}};
      EXPECT_EQ(method_from_json(j, "trace").name, e.name) << alias;
    }
  }
  try {
    method_entry("eagel3", "--method");
    ADD_FAILURE() << "eagel3 was accepted";
  } catch (const Error& err) {
    EXPECT_EQ(std::string(err.what()),
              "--method: unknown method 'eagel3'; known methods: " + known_methods() + "; did you mean eagle3?");
  }
  EXPECT_EQ(canonical_method_name("medusa"), "medusa");
}

TEST(MethodRegistry, ShapesAMethodDoesNotTakeAreRefused) {
  for (const MethodEntry& e : method_registry()) {
    if (!e.make_proposer) continue;
    MethodSpec s;
    s.name = e.name;
    s.tree = "dynamic";
    if (!e.shapes.dynamic_tree) {
      EXPECT_THROW(check_method_spec(s), Error) << e.name;
    }
    s.tree = "mc_sim_7b_63";
    if (!e.shapes.static_tree) {
      EXPECT_THROW(check_method_spec(s), Error) << e.name;
    }
    s.tree = "chain";
    s.k = 0;
    EXPECT_THROW(check_method_spec(s), Error) << e.name;
  }
  MethodSpec alias;
  alias.name = "eagle1";  // specs hold registry names; parse aliases with canonical_method_name
  EXPECT_THROW(check_method_spec(alias), Error);
}

// A method's own parameters: the text form fills defaults and round-trips through JSON; every
// mistake a user can make in it names the method, the parameter and what was expected.
TEST(MethodRegistry, MethodParametersAreCheckedAndRoundTrip) {
  const MethodSpec s = parse_method_text("n-gram,n_max=4,n_min=2");  // an alias names its method
  EXPECT_EQ(s.name, "ngram");
  EXPECT_EQ(s.normalized().params, (nlohmann::json{{"n_min", 2}, {"n_max", 4}}));
  EXPECT_EQ(s.label(), "ngram k=4 n_min=2 n_max=4");
  EXPECT_EQ(method_from_json(s.to_json(), "test"), s.normalized());
  EXPECT_EQ(parse_method_text("suffix").normalized().params["cached_requests"], 10000);
  auto error_of = [](const std::string& text) {
    try {
      parse_method_text(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("ngram,n_mn=2"), "--method ngram has no parameter 'n_mn'; its parameters: n_min, n_max; did you mean n_min?");
  EXPECT_EQ(error_of("ngram,n_min=0"), "--method ngram: n_min must be an integer in [1, 128], got 0");
  EXPECT_EQ(error_of("ngram,n_min=2.5"), "--method ngram: n_min must be an integer in [1, 128], got 2.5");
  EXPECT_EQ(error_of("suffix,min_prob=2"), "--method suffix: min_prob must be a number in [0, 1], got 2");
  EXPECT_EQ(error_of("ngram,n_min=x"), "--method: n_min: 'x' is not a finite number");
  EXPECT_EQ(error_of("ngram,n_min=1,n_min=2"), "--method: parameter n_min is given twice");
  EXPECT_NE(error_of("ngram,5").find("'5' is not key=value (e.g. ngram,n_min=5)"), std::string::npos) << error_of("ngram,5");
  EXPECT_EQ(error_of("eagle3,k=4"), "--method eagle3 has no parameter 'k'; its parameters: none");
  EXPECT_NE(error_of("ngrm").find("did you mean ngram?"), std::string::npos) << error_of("ngrm");
  EXPECT_NE(error_of(std::string(5000, 'a')).find("longer than 4096"), std::string::npos);
  // A bad value in JSON (a trace's run config, a sweep cell) is refused the same way.
  EXPECT_THROW(method_from_json({{"method", "ngram"}, {"n_max", -1}}, "trace"), Error);
  MethodSpec both = parse_method_text("ngram,n_min=4,n_max=2");  // ranges alone cannot see this
  ProposerInputs in;
  ModelConfig c;
  in.target = &c;
  EXPECT_THROW(make_method_proposer(both, in), Error);
}

// ---- the drafter-forward schedule --------------------------------------------------------------

// Rows of every drafter forward, in order.
struct ForwardLog {
  std::vector<int> rows;
};

class CountingLanguageModel final : public LanguageModel {
 public:
  CountingLanguageModel(const LanguageModel& inner, ForwardLog& log) : inner_(inner), log_(log) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  ForwardResult forward(KVCache& cache, const ForwardRequest& r) const override {
    log_.rows.push_back(static_cast<int>(r.tokens.size()));
    return inner_.forward(cache, r);
  }

 private:
  const LanguageModel& inner_;
  ForwardLog& log_;
};

class CountingHeadEngine final : public EagleHeadEngine {
 public:
  CountingHeadEngine(const EagleHead& head, ForwardLog& log) : inner_(head), log_(log) {}
  std::string name() const override { return "counting"; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const override {
    log_.rows.push_back(static_cast<int>(in.tokens.size()));
    return inner_.forward(cache, in);
  }

 private:
  EagleHead inner_;
  ForwardLog& log_;
};

// Medusa heads that log the rows of every forward (all heads in one pass).
class CountingMedusaEngine final : public MedusaHeadsEngine {
 public:
  CountingMedusaEngine(const MedusaHeads& heads, ForwardLog& log) : inner_(heads), log_(log) {}
  std::string name() const override { return "counting"; }
  std::vector<Matrix> forward(const Matrix& hidden, int heads) const override {
    log_.rows.push_back(static_cast<int>(hidden.rows()));
    return inner_.forward(hidden, heads);
  }

 private:
  MedusaHeads inner_;
  ForwardLog& log_;
};

// One proposal's drafter forwards and what the step before it emitted.
struct StepLog {
  std::vector<int> rows;
  CatchUp catch_up;
};

// Passes proposals through and cuts the forward log into steps.
class StepCuttingProposer final : public Proposer {
 public:
  StepCuttingProposer(Proposer& inner, ForwardLog& log) : inner_(inner), log_(log) {}
  std::string name() const override { return inner_.name(); }
  bool wants_final_hidden() const override { return inner_.wants_final_hidden(); }
  std::vector<int> wanted_aux_layers() const override { return inner_.wanted_aux_layers(); }
  int max_nodes() const override { return inner_.max_nodes(); }
  Proposal propose(const DraftContext& ctx) override {
    StepLog step;
    if (last_committed_ >= 0) {
      const int emitted = ctx.committed - last_committed_;
      step.catch_up = CatchUp{static_cast<double>(emitted), emitted == last_depth_ + 1 ? 1.0 : 0.0};
    }
    const size_t before = log_.rows.size();
    Proposal p = inner_.propose(ctx);
    step.rows.assign(log_.rows.begin() + static_cast<std::ptrdiff_t>(before), log_.rows.end());
    EXPECT_EQ(p.drafter_forwards, static_cast<int>(step.rows.size())) << "the proposal's own count";
    last_committed_ = ctx.committed;
    last_depth_ = 0;
    for (int n = 0; n < p.tree.size(); ++n) last_depth_ = std::max(last_depth_, p.tree.depth(n));
    steps.push_back(std::move(step));
    return p;
  }
  std::vector<StepLog> steps;

 private:
  Proposer& inner_;
  ForwardLog& log_;
  int last_committed_ = -1;
  int last_depth_ = 0;
};

TEST(MethodRegistry, ProposersRunTheScheduleTheSimulatorPrices) {
  const LoadedModel& target = bundled_target("reference");
  for (const MethodSpec& spec : method_rows()) {
    const MethodEntry& e = method_entry(spec.name);
    if (!e.make_proposer) continue;
    SCOPED_TRACE(spec.label());
    const DecodeArgs a = args_for(spec, "reference", "greedy");
    const std::optional<LoadedDrafter> drafter = load_drafter(a, target);
    ForwardLog log;
    std::unique_ptr<CountingLanguageModel> lm;
    std::unique_ptr<EagleHead> head;
    std::unique_ptr<MedusaHeads> medusa;
    if (drafter->draft_lm()) lm = std::make_unique<CountingLanguageModel>(*drafter->draft_lm(), log);
    if (drafter->head) head = std::make_unique<EagleHead>(drafter->head->with_engine(std::make_shared<CountingHeadEngine>(*drafter->head, log)));
    if (drafter->medusa) {
      medusa = std::make_unique<MedusaHeads>(drafter->medusa->with_engine(std::make_shared<CountingMedusaEngine>(*drafter->medusa, log)));
    }
    const int capacity = checked_capacity(kPrompt.size(), a.max_new_tokens, 1, target.config.max_position_embeddings);
    const std::unique_ptr<Proposer> proposer =
        make_proposer(a, target, &*drafter, capacity, lm.get(), head.get(), medusa.get());
    StepCuttingProposer cutter(*proposer, log);
    const SamplingParams sampling = sampling_params(a);
    decode_speculative(target.forward_model(), cutter, *default_acceptor(sampling), kPrompt, sampling, generation_options(a));
    ASSERT_GE(cutter.steps.size(), 3u);

    const StepShape shape = step_shape(spec);
    for (size_t i = 0; i < cutter.steps.size(); ++i) {
      const StepLog& step = cutter.steps[i];
      const std::vector<double> planned = e.schedule(shape, step.catch_up).rows;
      ASSERT_EQ(step.rows.size(), planned.size()) << "step " << i << ": drafter forwards run vs scheduled";
      // The first step's first forward reads the whole prompt (the simulator prices it as prefill).
      for (size_t f = i == 0 ? 1 : 0; f < planned.size(); ++f) {
        EXPECT_EQ(step.rows[f], planned[f]) << "step " << i << ", forward " << f << ": rows run vs scheduled";
      }
    }
  }
}

}  // namespace
}  // namespace specdec
