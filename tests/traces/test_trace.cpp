// Trace write/read: round trips of sequential and speculative traces, semantic equality, every
// read error a user can meet, validation, and atomic writing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>

#include "reference/core/error.hpp"
#include "tests/traces/trace_fixtures.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"
#include "traces/trace_compare.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using trace_test::sequential_trace;
using trace_test::speculative_trace;
using trace_test::TempDir;

template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_ERROR_HAS(call, needle)                                              \
  do {                                                                              \
    const std::string msg_ = error_of([&] { call; });                               \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "message: " << msg_ << "\nexpected to contain: " << (needle); \
  } while (0)

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_same_logits(const std::vector<LogitRecord>& a, const std::vector<LogitRecord>& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t r = 0; r < a.size(); ++r) {
    EXPECT_TRUE(same_bits(a[r].full, b[r].full)) << where << " row " << r;
    EXPECT_EQ(a[r].summary.vocab_size, b[r].summary.vocab_size) << where << " row " << r;
    EXPECT_EQ(a[r].summary.topk_ids, b[r].summary.topk_ids) << where << " row " << r;
    EXPECT_TRUE(same_bits(a[r].summary.topk_values, b[r].summary.topk_values)) << where << " row " << r;
    EXPECT_EQ(a[r].summary.logsumexp, b[r].summary.logsumexp) << where << " row " << r;
    EXPECT_EQ(a[r].summary.checksum, b[r].summary.checksum) << where << " row " << r;
  }
}

// Field by field, independently of semantically_equal (including what it ignores).
void expect_same_trace(const Trace& a, const Trace& b, const std::string& label) {
  EXPECT_EQ(a.meta.method, b.meta.method) << label;
  EXPECT_EQ(a.meta.specdec_version, b.meta.specdec_version) << label;
  EXPECT_EQ(a.meta.created_utc, b.meta.created_utc) << label;
  EXPECT_EQ(a.meta.exactness_contract, b.meta.exactness_contract) << label;
  EXPECT_EQ(a.meta.config_json, b.meta.config_json) << label;
  EXPECT_EQ(a.meta.sampling_json, b.meta.sampling_json) << label;
  EXPECT_EQ(a.meta.seed, b.meta.seed) << label;
  ASSERT_EQ(a.meta.models.size(), b.meta.models.size()) << label;
  for (const auto& [role, m] : a.meta.models) {
    ASSERT_TRUE(b.meta.models.count(role)) << label << " role " << role;
    EXPECT_EQ(m.path, b.meta.models.at(role).path) << label;
    EXPECT_EQ(m.fingerprint, b.meta.models.at(role).fingerprint) << label;
    EXPECT_EQ(m.config_json, b.meta.models.at(role).config_json) << label;
  }
  EXPECT_EQ(a.prompt, b.prompt) << label;
  ASSERT_EQ(a.steps.size(), b.steps.size()) << label;
  for (std::size_t s = 0; s < a.steps.size(); ++s) {
    const StepRecord& x = a.steps[s];
    const StepRecord& y = b.steps[s];
    const std::string w = label + " step " + std::to_string(s);
    EXPECT_EQ(x.position, y.position) << w;
    EXPECT_EQ(x.emitted_tokens, y.emitted_tokens) << w;
    EXPECT_EQ(x.draft_tokens, y.draft_tokens) << w;
    EXPECT_EQ(x.draft_parents, y.draft_parents) << w;
    EXPECT_EQ(x.draft_logit_nodes, y.draft_logit_nodes) << w;
    EXPECT_EQ(x.accepted_path, y.accepted_path) << w;
    EXPECT_EQ(x.accept_decisions, y.accept_decisions) << w;
    EXPECT_EQ(x.accept_nodes, y.accept_nodes) << w;
    EXPECT_EQ(x.accept_uniforms, y.accept_uniforms) << w;
    EXPECT_EQ(x.bonus_token, y.bonus_token) << w;
    EXPECT_EQ(x.random_counters, y.random_counters) << w;
    EXPECT_EQ(x.draft_sources, y.draft_sources) << w;
    expect_same_logits(x.target_logits, y.target_logits, w + " target_logits");
    expect_same_logits(x.draft_logits, y.draft_logits, w + " draft_logits");
  }
  EXPECT_EQ(a.output, b.output) << label;
  EXPECT_EQ(a.stop_reason, b.stop_reason) << label;
  EXPECT_EQ(a.timing.prefill_ns, b.timing.prefill_ns) << label;
  EXPECT_EQ(a.timing.total_ns, b.timing.total_ns) << label;
  EXPECT_EQ(a.timing.step_ns, b.timing.step_ns) << label;
}

void round_trip(const Trace& t, const std::string& label) {
  TempDir dir;
  const fs::path path = dir / "trace.h5";
  write_trace(path, t);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trace.h5"}) << label << ": temporary file left behind";
  const Trace back = read_trace(path);
  EXPECT_EQ(back.meta.schema_version, trace_schema_version()) << label;
  std::string diff;
  EXPECT_TRUE(semantically_equal(t, back, &diff)) << label << ": " << diff;
  expect_same_trace(t, back, label);
}

TEST(TraceRoundTrip, SequentialFullLogits) {
  for (uint64_t seed : {1u, 2u, 3u}) round_trip(sequential_trace(seed, true), "sequential full, seed " + std::to_string(seed));
}

TEST(TraceRoundTrip, SequentialTopKLogits) {
  for (uint64_t seed : {1u, 2u, 3u}) round_trip(sequential_trace(seed, false), "sequential top-k, seed " + std::to_string(seed));
}

TEST(TraceRoundTrip, SpeculativeTree) {
  for (uint64_t seed : {4u, 5u, 6u}) round_trip(speculative_trace(seed), "speculative, seed " + std::to_string(seed));
}

TEST(TraceRoundTrip, EdgeCases) {
  // No steps at all (max_tokens = 0), and a trace without logits or timing phases.
  Trace empty = sequential_trace(7, true, 0);
  empty.timing.step_ns.clear();
  round_trip(empty, "zero steps, seed 7");
  Trace no_logits = sequential_trace(8, false);
  for (StepRecord& s : no_logits.steps) s.target_logits.clear();
  round_trip(no_logits, "no logits, seed 8");
  // Large vocabulary rows go through the compressed path.
  Trace big = sequential_trace(9, true, 3);
  std::mt19937 rng(9);
  for (StepRecord& s : big.steps) {
    const std::vector<float> row = trace_test::random_logits(rng, 40000);
    s.target_logits = {LogitRecord::full_row(row.data(), 40000)};
  }
  round_trip(big, "V = 40000 full rows, seed 9");
}

// A draft-free run's trace (schema 1.3): the speculative fixture with a source per draft node,
// from the sequence itself and from an earlier response; step 2 records none (a model drafter's
// step after a fallback, say), so steps with and without sources mix.
Trace with_draft_sources(uint64_t seed) {
  Trace t = speculative_trace(seed);
  t.meta.method = "suffix-tree";
  t.meta.models.erase("drafter");
  for (std::size_t s = 1; s < t.steps.size(); ++s) {
    if (s == 2) continue;
    StepRecord& st = t.steps[s];
    for (std::size_t n = 0; n < st.draft_tokens.size(); ++n) {
      DraftSourceRecord r;
      if (n == 3) {
        r.origin = DraftSourceRecord::Origin::responses;
        r.position = 40 + static_cast<int64_t>(n);
        r.request = 7;
      } else {
        r.position = static_cast<int64_t>(n) % st.position;  // inside the history before the step
      }
      r.match_length = static_cast<int32_t>(s + n);
      st.draft_sources.push_back(r);
    }
  }
  t.steps[1].draft_sources[4].position = -1;  // unknown
  return t;
}

TEST(TraceRoundTrip, DraftSources) {
  for (uint64_t seed : {11u, 12u}) {
    const Trace t = with_draft_sources(seed);
    round_trip(t, "draft sources, seed " + std::to_string(seed));
    // Semantic equality sees them.
    Trace other = t;
    other.steps[3].draft_sources[1].match_length += 1;
    std::string diff;
    EXPECT_FALSE(semantically_equal(t, other, &diff));
    EXPECT_EQ(diff, "steps[3].draft_sources[1].match_length: " + std::to_string(t.steps[3].draft_sources[1].match_length) + " vs " +
                        std::to_string(other.steps[3].draft_sources[1].match_length));
  }
  // A model drafter's trace has no sources, and no /steps/draft_sources is written.
  TempDir dir;
  write_trace(dir / "model.h5", speculative_trace(13));
  EXPECT_FALSE(h5::File::open_read_only(dir / "model.h5").open_group("steps").has("draft_sources"));
  write_trace(dir / "free.h5", with_draft_sources(13));
  const h5::File f = h5::File::open_read_only(dir / "free.h5");
  const h5::Group g = f.open_group("steps/draft_sources");
  EXPECT_EQ(g.read_vector<int64_t>("row_offsets"), (std::vector<int64_t>{0, 0, 5, 5, 10}));
  EXPECT_EQ(g.read_vector<uint8_t>("origin"), (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
}

TEST(TraceValidate, DraftSources) {
  const std::vector<std::pair<const char*, std::function<void(Trace&)>>> cases = {
      {"steps[1].draft_sources: 4 sources for 5 draft nodes", [](Trace& t) { t.steps[1].draft_sources.pop_back(); }},
      {"steps[3].draft_sources[0].position: 10 is not inside the sequence", [](Trace& t) { t.steps[3].draft_sources[0].position = 10; }},
      {"steps[3].draft_sources[1].position: -2 is not inside", [](Trace& t) { t.steps[3].draft_sources[1].position = -2; }},
      {"steps[1].draft_sources[0].request: 2, expected -1", [](Trace& t) { t.steps[1].draft_sources[0].request = 2; }},
      {"steps[1].draft_sources[3].request: -1, expected the earlier request", [](Trace& t) { t.steps[1].draft_sources[3].request = -1; }},
      {"steps[1].draft_sources[2].match_length: -1, expected >= 0", [](Trace& t) { t.steps[1].draft_sources[2].match_length = -1; }},
  };
  for (const auto& [expected, change] : cases) {
    Trace t = with_draft_sources(14);
    ASSERT_EQ(t.steps[3].position, 10);
    change(t);
    const std::string msg = error_of([&] { validate_trace(t); });
    EXPECT_EQ(msg.rfind(std::string("invalid trace: ") + expected, 0), 0u) << "case '" << expected << "': got '" << msg << "'";
  }
  EXPECT_EQ(error_of([&] { validate_trace(with_draft_sources(14)); }), "(no error)");
}

TEST(TraceWrite, FillsVersionAndTimestampWhenEmpty) {
  TempDir dir;
  Trace t = sequential_trace(10, false);
  t.meta.specdec_version.clear();
  t.meta.created_utc.clear();
  write_trace(dir / "t.h5", t);
  const Trace back = read_trace(dir / "t.h5");
  EXPECT_FALSE(back.meta.specdec_version.empty());
  ASSERT_EQ(back.meta.created_utc.size(), 20u) << back.meta.created_utc;
  EXPECT_EQ(back.meta.created_utc.back(), 'Z');
  EXPECT_EQ(back.meta.created_utc[10], 'T');
}

TEST(TraceSemantics, IgnoresTimingAndProvenance) {
  const Trace a = speculative_trace(11);
  Trace b = a;
  b.timing.prefill_ns = 1;
  b.timing.total_ns = 2;
  b.timing.step_ns["verify"][1] += 12345;
  b.timing.step_ns["extra"] = std::vector<int64_t>(b.steps.size(), 1);
  b.meta.created_utc = "2030-01-01T00:00:00Z";
  b.meta.specdec_version = "9.9.9";
  b.meta.exactness_contract = "1";  // refused by comparisons (check_exactness_contract), not a difference
  b.meta.config_json = R"({"backend":"cuda"})";
  b.meta.models["target"].path = "/elsewhere/target";
  b.meta.sampling_json = R"({"temperature": 0.0, "mode": "greedy"})";  // same JSON, other key order
  std::string diff = "unset";
  EXPECT_TRUE(semantically_equal(a, b, &diff)) << diff;
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(TraceSemantics, ReportsTheFirstDifference) {
  const Trace base = speculative_trace(12);
  struct Case {
    const char* expected;
    std::function<void(Trace&)> change;
  };
  const std::vector<Case> cases = {
      {"meta.seed: 12 vs 13", [](Trace& t) { t.meta.seed = 13; }},
      {"meta.method", [](Trace& t) { t.meta.method = "eagle3"; }},
      {"meta.sampling_json", [](Trace& t) { t.meta.sampling_json = R"({"mode":"sample"})"; }},
      {"meta.models[drafter].fingerprint", [](Trace& t) { t.meta.models["drafter"].fingerprint = "other"; }},
      {"meta.models (roles)", [](Trace& t) { t.meta.models.erase("drafter"); }},
      {"prompt[1]: 9 vs 10", [](Trace& t) { t.prompt[1] = 10; }},
      {"steps[2].emitted_tokens[2]", [](Trace& t) { t.steps[2].emitted_tokens[2] += 1; }},
      {"steps[1].draft_parents[4]", [](Trace& t) { t.steps[1].draft_parents[4] = 1; }},
      {"steps[3].accept_uniforms[0]", [](Trace& t) { t.steps[3].accept_uniforms[0] = std::nextafter(t.steps[3].accept_uniforms[0], 2.0); }},
      {"steps[1].random_counters[2]", [](Trace& t) { t.steps[1].random_counters[2][3] ^= 1u; }},
      {"steps[2].target_logits[5].topk_values[0]",
       [](Trace& t) { t.steps[2].target_logits[5].summary.topk_values[0] = std::nextafter(t.steps[2].target_logits[5].summary.topk_values[0], 1e9f); }},
      {"steps[1].target_logits[0].checksum", [](Trace& t) { t.steps[1].target_logits[0].summary.checksum ^= 1; }},
      {"steps[3].draft_logits[1].logsumexp", [](Trace& t) { t.steps[3].draft_logits[1].summary.logsumexp += 1.0; }},
      {"steps (count)", [](Trace& t) { t.steps.pop_back(); }},
      {"output[0]", [](Trace& t) { t.output[0] += 1; }},
      {"stop_reason", [](Trace& t) { t.stop_reason = "max_tokens"; }},
  };
  for (const Case& c : cases) {
    Trace changed = base;
    c.change(changed);
    std::string diff;
    EXPECT_FALSE(semantically_equal(base, changed, &diff)) << "case " << c.expected << ", seed 12";
    EXPECT_EQ(diff.rfind(c.expected, 0), 0u) << "case " << c.expected << ", seed 12: got '" << diff << "'";
  }
  // Full logits compare bit for bit: 0.0 and -0.0 differ.
  Trace full = sequential_trace(13, true);
  full.steps[0].target_logits[0].full[7] = 0.0f;
  Trace negzero = full;
  negzero.steps[0].target_logits[0].full[7] = -0.0f;
  std::string diff;
  EXPECT_FALSE(semantically_equal(full, negzero, &diff)) << "seed 13";
  EXPECT_EQ(diff.rfind("steps[0].target_logits[0].full[7]", 0), 0u) << diff;
  // Full and top-k forms of the same run are different traces.
  EXPECT_FALSE(semantically_equal(sequential_trace(13, true), sequential_trace(13, false), &diff));
  EXPECT_NE(diff.find("full vs top-k"), std::string::npos) << diff;
}

// The one table of exact step fields: equality bit for bit, and the three wordings of a
// difference (specdec validate's brief values, semantically_equal's first element, trace diff's
// sentence).
TEST(TraceStepFields, OneTableThreeWordings) {
  StepRecord a, b;
  a.position = 7, b.position = 8;
  a.emitted_tokens = {5, 6}, b.emitted_tokens = {5, 7};
  a.accept_decisions = {1, 0}, b.accept_decisions = {1, 1};
  a.accept_uniforms = {0.25}, b.accept_uniforms = {0.5};
  a.bonus_token = 3, b.bonus_token = 4;
  a.random_counters = {{1, 2, 3, 4}}, b.random_counters = {{1, 2, 3, 5}};
  a.accepted_path = {0}, b.accepted_path = {0, 1};
  using Id = StepFieldId;
  for (const StepField& f : exact_step_fields()) EXPECT_EQ(&step_field(f.id), &f) << f.name << ": the table is in StepFieldId order";
  const StepField& emitted = step_field(Id::emitted_tokens);
  EXPECT_STREQ(emitted.name, "emitted_tokens");
  EXPECT_FALSE(same_field(emitted, a, b));
  EXPECT_TRUE(same_field(step_field(Id::draft_tokens), a, b));
  EXPECT_EQ(brief_value(emitted, a), "[5 6]");
  EXPECT_EQ(element_difference(emitted, a, b), "[1]: 6 vs 7");
  EXPECT_EQ(difference_sentence(emitted, a, b), "emitted tokens differ: [5,6] vs [5,7]");
  EXPECT_EQ(difference_sentence(step_field(Id::accepted_path), a, b), "accepted path differ: [0] vs [0,1]");
  EXPECT_EQ(element_difference(step_field(Id::accepted_path), a, b), ": length 1 vs 2");
  EXPECT_EQ(brief_value(step_field(Id::accept_decisions), a), "[1 0]");
  EXPECT_EQ(difference_sentence(step_field(Id::accept_decisions), a, b), "accept decisions differ: [1,0] vs [1,1]");
  EXPECT_EQ(element_difference(step_field(Id::accept_decisions), a, b), "[1]: 0 vs 1");
  const StepField& uniforms = step_field(Id::accept_uniforms);
  EXPECT_EQ(brief_value(uniforms, a), "[0.25]");
  EXPECT_EQ(element_difference(uniforms, a, b), "[0]: 0.25 (0x3fd0000000000000) vs 0.5 (0x3fe0000000000000)");
  EXPECT_EQ(difference_sentence(uniforms, a, b), "acceptance uniforms differ (bitwise)");
  EXPECT_EQ(brief_value(step_field(Id::bonus_token), a), "3");
  EXPECT_EQ(element_difference(step_field(Id::bonus_token), a, b), ": 3 vs 4");
  EXPECT_EQ(difference_sentence(step_field(Id::bonus_token), a, b), "bonus token differs: 3 vs 4");
  EXPECT_EQ(difference_sentence(step_field(Id::position), a, b), "positions differ: 7 vs 8");
  EXPECT_EQ(brief_value(step_field(Id::random_counters), a), "[{1,2,3,4}]");
  EXPECT_EQ(element_difference(step_field(Id::random_counters), a, b), "[0]: {1, 2, 3, 4} vs {1, 2, 3, 5}");
  EXPECT_EQ(difference_sentence(step_field(Id::random_counters), a, b), "Philox counters differ");
  // Floats bit for bit: 0.0 and -0.0 differ, NaN equals itself.
  StepRecord z = a, nz = a;
  z.accept_uniforms = {0.0}, nz.accept_uniforms = {-0.0};
  EXPECT_FALSE(same_field(uniforms, z, nz));
  z.accept_uniforms = nz.accept_uniforms = {std::nan("")};
  EXPECT_TRUE(same_field(uniforms, z, nz));
  // The first differing field in a comparison's own order.
  EXPECT_EQ(first_differing_field({Id::draft_tokens, Id::bonus_token, Id::position}, a, b)->id, Id::bonus_token);
  EXPECT_EQ(first_differing_field({Id::draft_tokens, Id::draft_parents}, a, b), nullptr);
}

// ---- the exactness contract ----------------------------------------------------------------------

TEST(TraceExactnessContract, RoundTripsAndOlderTracesHaveNone) {
  TempDir dir;
  Trace t = speculative_trace(14);
  EXPECT_EQ(t.meta.exactness_contract, exact::kContractVersion);  // what a run of this build computed
  write_trace(dir / "current.h5", t);
  {
    // Stored as the root attribute SCHEMA.md names, for other readers (h5py).
    const h5::File f = h5::File::open_read_only(dir / "current.h5");
    EXPECT_EQ(f.read_string_attribute("exactness_contract"), exact::kContractVersion);
  }
  EXPECT_EQ(read_trace(dir / "current.h5").meta.exactness_contract, exact::kContractVersion);

  t.meta.exactness_contract = "1";
  write_trace(dir / "older.h5", t);
  EXPECT_EQ(read_trace(dir / "older.h5").meta.exactness_contract, "1");

  // A trace written before traces carried the contract (schema 1.0): read, with none recorded.
  t.meta.exactness_contract.clear();
  write_trace(dir / "none.h5", t);
  {
    h5::File f = h5::File::open_read_write(dir / "none.h5");
    EXPECT_FALSE(f.has_attribute("exactness_contract"));
    f.write_attribute("schema_version", std::string("1.0"));
    f.close();
  }
  const Trace none = read_trace(dir / "none.h5");
  EXPECT_EQ(none.meta.schema_version, "1.0");
  EXPECT_EQ(none.meta.exactness_contract, "");
  std::string diff;
  EXPECT_TRUE(semantically_equal(none, t, &diff)) << diff;
}

TEST(TraceExactnessContract, ComparisonsRefuseAnotherOrNoContract) {
  const std::string expected = std::string("this specdec computes under contract '") + exact::kContractVersion + "'";
  Trace t = sequential_trace(15, false);
  EXPECT_EQ(error_of([&] { check_exactness_contract(t, "run.h5"); }), "(no error)");

  t.meta.exactness_contract = "1";
  std::string msg = error_of([&] { check_exactness_contract(t, "runs/run.h5"); });
  EXPECT_EQ(msg.rfind("runs/run.h5: trace of exactness contract '1', but ", 0), 0u) << msg;
  EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  EXPECT_NE(msg.find("re-record it with `specdec record`"), std::string::npos) << msg;

  t.meta.exactness_contract.clear();
  msg = error_of([&] { check_exactness_contract(t, "old.h5"); });
  EXPECT_EQ(msg.rfind("old.h5: trace of exactness contract none (recorded before traces carried one)", 0), 0u) << msg;
  EXPECT_NE(msg.find(expected), std::string::npos) << msg;

  // A golden trace is re-recorded by its script, wherever the checkout lies.
  for (const char* golden : {"traces/golden/sequential_code_greedy.h5", "/src/specdec/traces/golden/draft_prose_sample.h5"}) {
    msg = error_of([&] { check_exactness_contract(t, golden); });
    EXPECT_EQ(msg.rfind(std::string(golden) + ": trace of exactness contract none", 0), 0u) << msg;
    EXPECT_NE(msg.find("re-record the golden traces with scripts/record_golden.sh"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("specdec record"), std::string::npos) << msg;
  }
  msg = error_of([&] { check_exactness_contract(t, "elsewhere/golden/run.h5"); });
  EXPECT_NE(msg.find("specdec record"), std::string::npos) << msg;
}

// ---- read errors ---------------------------------------------------------------------------------

// Writes a valid trace, then lets `edit` damage it through the HDF5 wrapper.
fs::path damaged(const TempDir& dir, const Trace& t, const std::function<void(h5::File&)>& edit) {
  const fs::path path = dir / "damaged.h5";
  fs::remove(path);
  write_trace(path, t);
  h5::File f = h5::File::open_read_write(path);
  edit(f);
  f.close();
  return path;
}

TEST(TraceRead, RejectsFilesThatAreNotTraces) {
  TempDir dir;
  const fs::path missing = dir / "missing.h5";
  EXPECT_ERROR_HAS(read_trace(missing), "missing.h5: file not found");
  const fs::path garbage = dir / "garbage.h5";
  std::ofstream(garbage) << "\x89HDF but not really, just garbage bytes";
  EXPECT_ERROR_HAS(read_trace(garbage), "garbage.h5: not an HDF5 file");
  const fs::path empty = dir / "empty.h5";
  std::ofstream{empty};
  EXPECT_ERROR_HAS(read_trace(empty), "empty.h5: not an HDF5 file");

  const fs::path other = dir / "other.h5";
  {
    h5::File f = h5::File::create(other);
    f.write_vector("data", std::vector<float>{1.0f, 2.0f});
    f.close();
  }
  EXPECT_ERROR_HAS(read_trace(other), "other.h5: not a specdec trace (root attribute 'format' missing");
  {
    h5::File f = h5::File::open_read_write(other);
    f.write_attribute("format", std::string("something-else"));
    f.close();
  }
  EXPECT_ERROR_HAS(read_trace(other), "format' is \"something-else\", expected \"specdec-trace\"");
}

TEST(TraceRead, SchemaVersions) {
  TempDir dir;
  const Trace t = sequential_trace(20, false);
  auto set_version = [](const char* v) { return [v](h5::File& f) { f.write_attribute("schema_version", std::string(v)); }; };
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, set_version("3.0"))),
                   "trace schema version 3.0 is newer than this specdec reads");
  // 2.x is the batched layout, which read_batched_trace reads (test_batched_trace.cpp).
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, set_version("2.0"))), "a batched trace (schema 2.0");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, set_version("0.9"))), "older than any this specdec reads");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, set_version("one"))), "attribute 'schema_version' is 'one', expected");
  // A newer minor version is read; what this reader does not know is ignored.
  const fs::path newer = damaged(dir, t, [&](h5::File& f) {
    set_version("1.7")(f);
    f.write_vector("steps/some_future_column", std::vector<int32_t>{1, 2, 3});
    f.create_group("future_group").write_string("note", "ignored");
    f.open_group("meta/models").write_string("not_a_model", "ignored");
    f.open_group("timing").write_string("unrelated", "ignored");
  });
  const Trace back = read_trace(newer);
  EXPECT_EQ(back.meta.schema_version, "1.7");
  std::string diff;
  EXPECT_TRUE(semantically_equal(t, back, &diff)) << diff;
  EXPECT_EQ(back.meta.models.size(), 1u);
}

TEST(TraceRead, MissingDatasetsAndWrongTypes) {
  TempDir dir;
  const Trace t = speculative_trace(21);
  auto remove = [](const char* name) { return [name](h5::File& f) { f.remove(name); }; };
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, remove("steps/emitted_tokens"))),
                   "damaged.h5: /steps/emitted_tokens: dataset missing");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, remove("prompt/tokens"))), "damaged.h5: /prompt/tokens: dataset missing");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, remove("steps/draft_parents"))), "/steps/draft_parents: dataset missing");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, remove("steps/target_logits/checksum"))),
                   "/steps/target_logits/checksum: dataset missing");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, remove("meta"))), "damaged.h5: /meta: group missing");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        f.remove("prompt/tokens");
                                        f.write_vector("prompt/tokens", std::vector<int64_t>{2, 9, 14});
                                      })),
                   "/prompt/tokens: dtype is int64, expected int32");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        f.remove("steps/accept_decisions");
                                        f.write_vector("steps/accept_decisions", std::vector<float>(9, 1.0f));
                                      })),
                   "/steps/accept_decisions: dtype is float32, expected uint8");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, [](h5::File& f) { f.write_attribute("method", int64_t{1}); })),
                   "attribute 'method' has dtype int64, expected string");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) { f.open_group("steps/target_logits").write_attribute("storage", std::string("half")); })),
                   "/steps/target_logits: attribute 'storage' is 'half', expected 'full' or 'topk'");
}

TEST(TraceRead, BrokenOffsetsAndShapes) {
  TempDir dir;
  const Trace t = speculative_trace(22);  // 4 steps; emitted 1 + 3 + 3 + 3 = 10 tokens
  auto replace = [](const char* name, std::vector<int64_t> v) {
    return [name, v](h5::File& f) {
      f.remove(name);
      f.write_vector(name, v);
    };
  };
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, replace("steps/emitted_tokens_offsets", {0, 1, 4, 3, 10}))),
                   "/steps/emitted_tokens_offsets: offsets decrease at index 3");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, replace("steps/emitted_tokens_offsets", {0, 1, 4, 7, 9}))),
                   "/steps/emitted_tokens_offsets: last offset is 9, but /steps/emitted_tokens has 10 entries");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, replace("steps/emitted_tokens_offsets", {0, 1, 4, 10}))),
                   "/steps/emitted_tokens_offsets: 4 offsets, expected 5 (number of steps + 1)");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, replace("steps/draft_tokens_offsets", {1, 1, 6, 11, 15}))),
                   "/steps/draft_tokens_offsets: first offset is 1, expected 0");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, replace("steps/target_logits/row_offsets", {0, 1, 7, 13, 20}))),
                   "/steps/target_logits/row_offsets: last offset is 20");
  // Offsets that are consistent with the data but break the rows-per-step rule.
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, replace("steps/target_logits/row_offsets", {0, 2, 7, 13, 19}))),
                   "steps[0].target_logits: 2 rows, expected 1 (1 + number of draft tokens)");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        f.remove("steps/draft_parents");
                                        f.write_vector("steps/draft_parents", std::vector<int32_t>(14, -1));
                                      })),
                   "/steps/draft_parents: 14 entries, expected 15");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        f.remove("steps/bonus_token");
                                        f.write_vector("steps/bonus_token", std::vector<int32_t>{-1, 1});
                                      })),
                   "/steps/bonus_token: 2 entries, expected one per step (4)");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        h5::Group g = f.open_group("steps/target_logits");
                                        g.write_attribute("k", int64_t{3});
                                      })),
                   "/steps/target_logits/topk_ids: has 4 columns, expected k = 3");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        f.remove("steps/random_counters");
                                        const std::vector<uint32_t> c(13 * 3, 0);
                                        f.write_matrix<uint32_t>("steps/random_counters", 13, 3, c.data());
                                      })),
                   "/steps/random_counters: has 3 columns, expected 4");
  // Semantic invariants are checked after reading, naming the file.
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        f.remove("output/tokens");
                                        f.write_vector("output/tokens", std::vector<int32_t>{});
                                      })),
                   "damaged.h5: invalid trace: steps[0].emitted_tokens[0]");

  const Trace full = sequential_trace(23, true);
  EXPECT_ERROR_HAS(read_trace(damaged(dir, full,
                                      [](h5::File& f) { f.open_group("steps/target_logits").write_attribute("vocab_size", int64_t{49}); })),
                   "/steps/target_logits/full: expected shape (rows, 49) matching attribute 'vocab_size'");
}

TEST(TraceRead, BrokenDraftSources) {
  TempDir dir;
  const Trace t = with_draft_sources(15);  // sources 0 + 5 + 0 + 5
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        h5::Group g = f.open_group("steps/draft_sources");
                                        g.remove("origin");
                                        g.write_vector<uint8_t>("origin", std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 7, 1, 0});
                                      })),
                   "/steps/draft_sources/origin: entry 7 is 7, expected 0 (context) or 1 (responses)");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        h5::Group g = f.open_group("steps/draft_sources");
                                        g.remove("match_length");
                                        g.write_vector<int32_t>("match_length", std::vector<int32_t>(9, 1));
                                      })),
                   "/steps/draft_sources/match_length: 9 entries, expected 10");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t,
                                      [](h5::File& f) {
                                        h5::Group g = f.open_group("steps/draft_sources");
                                        g.remove("row_offsets");
                                        g.write_vector<int64_t>("row_offsets", std::vector<int64_t>{0, 0, 4, 5, 10});
                                      })),
                   "invalid trace: steps[1].draft_sources: 4 sources for 5 draft nodes");
  EXPECT_ERROR_HAS(read_trace(damaged(dir, t, [](h5::File& f) { f.open_group("steps/draft_sources").remove("request"); })),
                   "/steps/draft_sources/request: dataset missing");
}

// ---- validation and atomic writing ---------------------------------------------------------------

TEST(TraceValidate, RejectsBrokenInvariants) {
  struct Case {
    const char* expected;
    std::function<void(Trace&)> change;
  };
  const std::vector<Case> spec_cases = {
      {"steps[1].draft_parents[2]: parent 2", [](Trace& t) { t.steps[1].draft_parents[2] = 2; }},
      {"steps[1].draft_parents: 4 parents for 5", [](Trace& t) { t.steps[1].draft_parents.pop_back(); }},
      {"steps[1].accepted_path[1]: node 1 is not a child of node 0", [](Trace& t) { t.steps[1].accepted_path[1] = 1; }},
      {"steps[1].accepted_path[0]: node 9 outside", [](Trace& t) { t.steps[1].accepted_path[0] = 9; }},
      {"steps[2].emitted_tokens[0]: token", [](Trace& t) {
         t.steps[2].draft_tokens[0] = (t.steps[2].draft_tokens[0] + 1) % 50;
       }},
      {"steps[1].target_logits: 5 rows, expected 6", [](Trace& t) { t.steps[1].target_logits.pop_back(); }},
      {"steps[2].draft_logits[0]: full row, but", [](Trace& t) {
         const std::vector<float> row(40, 0.5f);
         t.steps[2].draft_logits[0] = LogitRecord::full_row(row.data(), 40);
       }},
      {"steps[1].target_logits[3]: summary of V = 50, k = 2", [](Trace& t) {
         t.steps[1].target_logits[3].summary.topk_ids.pop_back();
         t.steps[1].target_logits[3].summary.topk_ids.pop_back();
         t.steps[1].target_logits[3].summary.topk_values.resize(2);
       }},
      {"steps[1].draft_logit_nodes[2]: node 0 repeated", [](Trace& t) { t.steps[1].draft_logit_nodes[2] = 0; }},
      {"steps[1].accept_nodes: 2 nodes for 3 decisions", [](Trace& t) { t.steps[1].accept_nodes.pop_back(); }},
      {"steps[2].accept_decisions[1]: expected 0 (reject) or 1", [](Trace& t) { t.steps[2].accept_decisions[1] = 2; }},
      {"steps[1].position: 5, expected 4", [](Trace& t) { t.steps[1].position = 5; }},
      {"output: 11 tokens, but the steps emitted 10", [](Trace& t) { t.output.push_back(3); }},
      {"meta.config_json: not valid JSON", [](Trace& t) { t.meta.config_json = "{oops"; }},
      {"meta.models: role 'bad/role'", [](Trace& t) { t.meta.models["bad/role"] = ModelInfo{}; }},
      {"timing.step_ns[verify]: 3 values for 4 steps", [](Trace& t) { t.timing.step_ns["verify"].pop_back(); }},
      {"stop_reason: empty", [](Trace& t) { t.stop_reason.clear(); }},
      {"steps[3].emitted_tokens: empty", [](Trace& t) {
         t.steps[3].emitted_tokens.clear();
         t.steps[3].accepted_path.clear();
         t.output.resize(7);
       }},
  };
  for (const Case& c : spec_cases) {
    Trace t = speculative_trace(30);
    c.change(t);
    const std::string msg = error_of([&] { validate_trace(t); });
    EXPECT_EQ(msg.rfind(std::string("invalid trace: ") + c.expected, 0), 0u)
        << "case '" << c.expected << "', seed 30: got '" << msg << "'";
  }
  Trace seq = sequential_trace(31, false);
  seq.steps[2].emitted_tokens.push_back(seq.output[3]);
  EXPECT_NE(error_of([&] { validate_trace(seq); }).find("a sequential step emits exactly one"), std::string::npos);
  EXPECT_EQ(error_of([&] { validate_trace(speculative_trace(30)); }), "(no error)");
}

TEST(TraceWrite, IsAtomic) {
  TempDir dir;
  const Trace good = sequential_trace(40, true);

  // Directory missing: clear error, nothing created anywhere.
  EXPECT_ERROR_HAS(write_trace(dir / "no/such/dir/t.h5", good), "directory '");
  EXPECT_TRUE(dir.entries().empty());
  EXPECT_ERROR_HAS(write_trace(dir.path(), good), "cannot write trace");

  // Invalid trace: refused before any file is created.
  Trace bad = good;
  bad.output.pop_back();
  EXPECT_ERROR_HAS(write_trace(dir / "t.h5", bad), "t.h5: cannot write trace: invalid trace: ");
  EXPECT_TRUE(dir.entries().empty());

  // A failure in the middle of writing removes the temporary file.
  Trace fails_late = good;
  fails_late.meta.models["target"].fingerprint = std::string("ab\0cd", 5);
  EXPECT_ERROR_HAS(write_trace(dir / "t.h5", fails_late), "NUL");
  EXPECT_TRUE(dir.entries().empty()) << "left: " << (dir.entries().empty() ? "" : dir.entries()[0]);

  // Overwriting: a failed write keeps the old file intact, a successful one replaces it.
  write_trace(dir / "t.h5", good);
  EXPECT_ERROR_HAS(write_trace(dir / "t.h5", fails_late), "NUL");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.h5"});
  std::string diff;
  EXPECT_TRUE(semantically_equal(read_trace(dir / "t.h5"), good, &diff)) << diff;
  const Trace other = speculative_trace(41);
  write_trace(dir / "t.h5", other);
  EXPECT_TRUE(semantically_equal(read_trace(dir / "t.h5"), other, &diff)) << diff;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.h5"});
}

}  // namespace
}  // namespace specdec
