// Batched decoding (reference/decoding/batched.hpp): every sequence of a batch decodes bitwise as
// it does alone — tokens, logits, acceptance decisions and random draws — whatever the batch size,
// composition, order, arrival times and the other sequences' methods, on every backend built here.
// Compositions are drawn from named seeds over every registered method and draft shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/decoding/batched.hpp"
#include "reference/decoding/forward_gather.hpp"
#include "reference/methods/registry.hpp"
#include "runtime/backend.hpp"
#include "runtime/batched_run.hpp"
#include "runtime/method_runner.hpp"
#include "tests/reference/method_table.hpp"

namespace specdec {
namespace {

// Token ids of short texts of the bundled byte-level vocabulary (different lengths on purpose).
const std::vector<std::vector<int32_t>> kPrompts = {
    {0, 76, 113, 35, 119, 107, 104, 35, 101, 104, 106, 108, 113, 113, 108, 113, 106},
    {0, 87, 107, 104, 35},
    {0, 70, 113, 102, 104, 35, 120, 115, 114, 113, 35, 100, 35, 119, 108, 112, 104},
    {0, 76},
};

using testing::backends_built_here;
using testing::bundled_method_args;
using testing::bundled_target;
using testing::method_rows;

// Everything a sequence computes, as text: tokens, every logit row's bits, every decision and draw.
class Recorder final : public DecodeObserver {
 public:
  std::ostringstream log;
  void on_prefill(const std::vector<int32_t>& prompt, int64_t) override { log << "prefill " << prompt.size() << "\n"; }
  void on_sequential_step(const SequentialStep& s) override {
    log << "seq " << s.index << " @" << s.position << " -> " << s.token << " logits " << bits(s.logits, s.vocab_size) << "\n";
  }
  void on_speculative_step(const SpeculativeStep& s) override {
    log << "spec " << s.index << " @" << s.root_position << " drafts";
    for (int32_t t : s.tree->tokens) log << " " << t;
    log << " logits " << bits(s.target_logits->data(), static_cast<int>(s.target_logits->size())) << " decisions";
    for (uint8_t d : s.verify->decisions) log << " " << int(d);
    log << " draws";
    for (const RandomDraw& d : s.verify->draws) log << " " << d.value;
    log << " emitted";
    for (int32_t t : s.emitted) log << " " << t;
    log << " q";
    for (const auto& row : *s.draft_probs) log << " " << bits(row.data(), static_cast<int>(row.size()));
    log << "\n";
  }
  void on_finish(const std::vector<int32_t>& out, const std::string& reason) override {
    log << "finish " << reason << " " << out.size() << "\n";
  }

 private:
  template <typename T>
  static std::size_t bits(const T* data, int n) {
    return std::hash<std::string>{}(std::string(reinterpret_cast<const char*>(data), sizeof(T) * static_cast<std::size_t>(n)));
  }
};

struct Composition {
  std::vector<BatchRequest> requests;
  std::vector<std::size_t> lanes;
  int max_in_flight = 1;
  bool batch_drafts = true;
};

Composition draw_composition(uint32_t seed, BatchedMethods& methods, const std::string& backend) {
  std::mt19937 rng(seed);
  const std::vector<MethodSpec> rows = method_rows();
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  Composition c;
  const int n = 2 + pick(5);
  c.max_in_flight = 1 + pick(4);
  c.batch_drafts = pick(4) != 0;
  double arrival = 0;
  for (int i = 0; i < n; ++i) {
    BatchRequest r;
    r.prompt = kPrompts[static_cast<std::size_t>(pick(static_cast<int>(kPrompts.size())))];
    r.max_new_tokens = 3 + pick(12);
    r.stop_at_eos = false;
    r.sequence = static_cast<uint32_t>(pick(1000));
    const int mode = pick(3);
    r.sampling.mode = mode == 0 ? SamplingParams::Mode::greedy
                                : mode == 1 ? SamplingParams::Mode::coupled : SamplingParams::Mode::sample;
    if (mode) r.sampling.temperature = 0.8, r.sampling.seed = 11 + static_cast<uint64_t>(pick(5));
    arrival += pick(3) == 0 ? 3.0 * pick(4) : 0.0;  // in calls of the test's clock
    r.arrival_s = arrival;
    c.requests.push_back(r);
    c.lanes.push_back(methods.add(bundled_method_args(rows[static_cast<std::size_t>(pick(static_cast<int>(rows.size())))], backend)));
  }
  return c;
}

// Decodes request i of `c` alone, as generate would.
GenerationResult alone(const Composition& c, std::size_t i, const BatchedMethods& methods, const LoadedModel& target,
                       DecodeObserver* observer) {
  const BatchRequest& r = c.requests[i];
  GenerationOptions g;
  g.max_new_tokens = r.max_new_tokens;
  g.stop_at_eos = r.stop_at_eos;
  g.sequence = r.sequence;
  return run_method(methods.lane(c.lanes[i]), target, r.prompt, r.sampling, g, observer);
}

BatchResult batched(const Composition& c, const BatchedMethods& methods, const LoadedModel& target,
                    std::vector<Recorder>* recorders) {
  BatchOptions o;
  o.max_in_flight = c.max_in_flight;
  o.batch_drafts = c.batch_drafts;
  auto ticks = std::make_shared<double>(0);  // a clock that advances once per reading
  o.clock = [ticks] { return (*ticks)++; };
  o.wait_until = [ticks](double s) { *ticks = std::max(*ticks, s); };
  std::function<DecodeObserver*(std::size_t)> obs;
  if (recorders) obs = [recorders](std::size_t i) -> DecodeObserver* { return &(*recorders)[i]; };
  return decode_batched(target.forward_model(), c.requests, methods.factory(c.lanes, c.requests), o, obs);
}

// Appends a greedy request i (sequence id i, bundled prompt i) decoding `spec` on the reference.
void add_request(Composition& c, BatchedMethods& methods, const MethodSpec& spec, int i, int max_new_tokens) {
  BatchRequest r;
  r.prompt = kPrompts[static_cast<std::size_t>(i) % kPrompts.size()];
  r.max_new_tokens = max_new_tokens;
  r.stop_at_eos = false;
  r.sequence = static_cast<uint32_t>(i);
  c.requests.push_back(r);
  c.lanes.push_back(methods.add(bundled_method_args(spec, "reference")));
}

TEST(BatchedDecoding, EverySequenceDecodesAsAloneOnEveryBackend) {
  for (const std::string& backend : backends_built_here()) {
    const LoadedModel& target = bundled_target(backend);
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      BatchedMethods methods(target);
      const Composition c = draw_composition(seed, methods, backend);
      std::vector<Recorder> rec(c.requests.size());
      const BatchResult b = batched(c, methods, target, &rec);
      const BatchResult plain = batched(c, methods, target, nullptr);  // argmax-only verification
      ASSERT_EQ(b.requests.size(), c.requests.size());
      for (std::size_t i = 0; i < c.requests.size(); ++i) {
        const std::string where = backend + ", seed " + std::to_string(seed) + ", request " + std::to_string(i) + " (" +
                                  methods.lane(c.lanes[i]).method.label() + ", B " + std::to_string(c.max_in_flight) + ")";
        Recorder solo;
        const GenerationResult a = alone(c, i, methods, target, &solo);
        EXPECT_EQ(b.requests[i].generation.tokens, a.tokens) << where;
        EXPECT_EQ(plain.requests[i].generation.tokens, a.tokens) << where;
        EXPECT_EQ(rec[i].log.str(), solo.log.str()) << where;
        const GenerationStats& s = b.requests[i].generation.stats;
        EXPECT_EQ(s.steps, a.stats.steps) << where;
        EXPECT_EQ(s.accepted_tokens, a.stats.accepted_tokens) << where;
        EXPECT_EQ(s.drafter_forwards, a.stats.drafter_forwards) << where;
        EXPECT_EQ(s.accepted_per_step, a.stats.accepted_per_step) << where;
        EXPECT_EQ(b.requests[i].generation.stop_reason, a.stop_reason) << where;
        EXPECT_LE(b.requests[i].arrival_s, b.requests[i].admitted_s) << where;
        EXPECT_LE(b.requests[i].admitted_s, b.requests[i].first_token_s) << where;
        EXPECT_LE(b.requests[i].first_token_s, b.requests[i].finished_s) << where;
      }
      EXPECT_LE(b.max_in_flight_seen, c.max_in_flight) << backend << ", seed " << seed;
    }
  }
}

TEST(BatchedDecoding, TheTargetRunsOneForwardPerStepOverEverySequence) {
  const LoadedModel& target = bundled_target("reference");
  BatchedMethods methods(target);
  Composition c;
  c.max_in_flight = 3;
  MethodSpec eagle;
  eagle.name = "eagle";
  eagle.k = 3;
  for (int i = 0; i < 5; ++i) add_request(c, methods, i % 2 ? eagle : MethodSpec{}, i, 6 + i);
  const BatchResult b = batched(c, methods, target, nullptr);
  int forwards = 0, steps_with_three = 0;
  for (const RequestResult& r : b.requests) forwards += r.generation.stats.target_forwards;
  int entries = 0;
  for (const BatchStep& s : b.steps) {
    entries += s.sequences;
    EXPECT_LE(s.sequences, 3);
    steps_with_three += s.sequences == 3;
  }
  EXPECT_EQ(entries, forwards);  // every sequence's forward of a step is an entry of its one forward_batch
  EXPECT_GT(steps_with_three, 0);
  EXPECT_EQ(b.max_in_flight_seen, 3);
  // Continuous batching: the fourth request takes the first free slot, before all three finish.
  const double first_free = std::min({b.requests[0].finished_s, b.requests[1].finished_s, b.requests[2].finished_s});
  const double last_free = std::max({b.requests[0].finished_s, b.requests[1].finished_s, b.requests[2].finished_s});
  EXPECT_GE(b.requests[3].admitted_s, first_free);
  EXPECT_LT(b.requests[3].admitted_s, last_free);
}

TEST(BatchedDecoding, DrafterForwardsAreGatheredAcrossSequences) {
  const LoadedModel& target = bundled_target("reference");
  BatchedMethods methods(target);
  Composition c;
  c.max_in_flight = 4;
  MethodSpec draft;
  draft.name = "draft";
  draft.k = 3;
  for (int i = 0; i < 4; ++i) add_request(c, methods, draft, i, 8);
  const BatchResult b = batched(c, methods, target, nullptr);
  // Each drafting step runs its k drafter rounds as forward_batch calls over the four sequences.
  bool four_at_once = false;
  for (const BatchStep& s : b.steps)
    if (s.drafter_batches > 0) four_at_once = four_at_once || s.drafter_forwards >= 4 * s.drafter_batches;
  EXPECT_TRUE(four_at_once);
}

TEST(BatchedDecoding, BadRequestsAreRefusedNamingThem) {
  const LoadedModel& target = bundled_target("reference");
  std::vector<BatchRequest> requests(2);
  requests[0].prompt = {0, 1};
  requests[1].prompt = {0, 100000};
  try {
    decode_batched(target.forward_model(), requests, nullptr, BatchOptions{});
    FAIL() << "an out-of-vocabulary prompt token was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("request 1: prompt token id 100000 outside the vocabulary"), std::string::npos)
        << e.what();
  }
  requests[1].prompt = {};
  EXPECT_THROW(decode_batched(target.forward_model(), requests, nullptr, BatchOptions{}), Error);
  requests[1].prompt = {0};
  BatchOptions zero;
  zero.max_in_flight = 0;
  EXPECT_THROW(decode_batched(target.forward_model(), requests, nullptr, zero), Error);
}

// A target that counts the KV caches alive (the batched loop's memory is its caches).
class CacheCountingModel final : public LanguageModel {
 public:
  explicit CacheCountingModel(const LanguageModel& inner) : inner_(inner) {}
  int alive = 0, most_alive = 0;
  const ModelConfig& config() const override { return inner_.config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override {
    return std::make_unique<Counted>(inner_.new_cache(capacity), const_cast<CacheCountingModel&>(*this));
  }
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override {
    return inner_.forward(*static_cast<Counted&>(cache).inner, request);
  }
  std::vector<ForwardResult> forward_batch(const std::vector<BatchEntry>& batch) const override {
    std::vector<BatchEntry> unwrapped = batch;
    for (BatchEntry& e : unwrapped) e.cache = static_cast<Counted*>(e.cache)->inner.get();
    return inner_.forward_batch(unwrapped);
  }

 private:
  struct Counted final : KVCache {
    Counted(std::unique_ptr<KVCache> c, CacheCountingModel& m) : inner(std::move(c)), model(m) {
      model.most_alive = std::max(model.most_alive, ++model.alive);
    }
    ~Counted() override { --model.alive; }
    int length() const override { return inner->length(); }
    int capacity() const override { return inner->capacity(); }
    void truncate(int n) override { inner->truncate(n); }
    void gather(int start, const std::vector<int>& slots) override { inner->gather(start, slots); }
    std::unique_ptr<KVCache> inner;
    CacheCountingModel& model;
  };
  const LanguageModel& inner_;
};

TEST(BatchedDecoding, MemoryIsBoundedByTheSequencesInFlight) {
  const LoadedModel& target = bundled_target("reference");
  CacheCountingModel counting(target.forward_model());
  std::vector<BatchRequest> requests(40);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    requests[i].prompt = kPrompts[i % kPrompts.size()];
    requests[i].max_new_tokens = 2 + static_cast<int>(i % 5);
    requests[i].sequence = static_cast<uint32_t>(i);
  }
  BatchOptions o;
  o.max_in_flight = 3;
  const BatchResult b = decode_batched(counting, requests, nullptr, o);
  EXPECT_EQ(counting.most_alive, 3);  // never more target caches than sequences in flight
  EXPECT_EQ(counting.alive, 0);
  std::size_t tokens = 0;
  for (const RequestResult& r : b.requests) tokens += r.generation.tokens.size();
  EXPECT_GT(tokens, 0u);
}

TEST(ForwardGather, AFailingTaskAbandonsTheOthersAndIsRethrown) {
  const LoadedModel& target = bundled_target("reference");
  ForwardGather gather;
  const LanguageModel& m = gather.wrap(target.forward_model());
  auto c0 = m.new_cache(8), c1 = m.new_cache(8);
  bool second_finished = false;
  std::vector<std::function<void()>> tasks = {
      [&] { throw Error("task 0 failed"); },
      [&] {
        m.forward(*c1, ForwardRequest::chain({0, 1}));
        m.forward(*c1, ForwardRequest::chain({2}));
        second_finished = true;
      },
  };
  EXPECT_THROW(gather.run(tasks), Error);
  EXPECT_FALSE(second_finished);
  // A gather runs again after a failure; outside run() forwards pass straight through.
  gather.run({[&] { m.forward(*c0, ForwardRequest::chain({0, 1})); }});
  EXPECT_EQ(c0->length(), 2);
  m.forward(*c0, ForwardRequest::chain({3}));
  EXPECT_EQ(c0->length(), 3);
}

}  // namespace
}  // namespace specdec
