// specdec trace check / trace diff: the golden traces pass; each kind of malformed trace gives a
// specific problem and the right exit code; every problem of a file is listed, not just the
// first; diff finds the step where a tampered copy departs. Also round-trips the optional
// per-layer and drafter tensors of schema 1.2.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/traces/trace_fixtures.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"
#include "traces/trace_check.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using trace_test::TempDir;

const fs::path kGolden = fs::path(SPECDEC_SOURCE_DIR) / "traces/golden";
const char* kSpec = "eagle3-chain_code_sample.h5";  // top-k logits, trees, uniforms, counters

// A copy of a golden trace, edited in place.
fs::path edited(const TempDir& dir, const std::function<void(h5::File&)>& edit, const std::string& golden = kSpec,
                const std::string& name = "edited.h5") {
  const fs::path path = dir / name;
  fs::remove(path);
  fs::copy_file(kGolden / golden, path);
  h5::File f = h5::File::open_read_write(path);
  edit(f);
  f.close();
  return path;
}

// The problems found, as "where: what" lines.
std::string problems(const TraceCheckResult& r) {
  std::string out;
  for (const TraceProblem& p : r.problems) out += p.where + ": " + p.what + "\n";
  return out;
}

bool has_problem(const TraceCheckResult& r, const std::string& where, const std::string& what) {
  for (const TraceProblem& p : r.problems) {
    if (p.where == where && p.what.find(what) != std::string::npos) return true;
  }
  return false;
}

#define EXPECT_PROBLEM(r, where, what) EXPECT_TRUE(has_problem(r, where, what)) << "wanted " << where << ": " << what << "\ngot:\n" << problems(r)

void rewrite_config(h5::File& f, const std::function<void(nlohmann::json&)>& edit, const char* name = "config_json") {
  h5::Group meta = f.open_group("meta");
  nlohmann::json j = nlohmann::json::parse(meta.read_string(name));
  edit(j);
  meta.remove(name);
  meta.write_string(name, j.dump());
}

TEST(TraceCheck, EveryGoldenTracePasses) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kGolden)) {
    if (e.path().extension() != ".h5") continue;
    ++n;
    const TraceCheckResult r = check_trace_file(e.path());
    EXPECT_TRUE(r.valid()) << e.path() << ":\n" << problems(r);
  }
  EXPECT_GE(n, 40);
  const auto run = testing::run({"trace", "check", (kGolden / kSpec).string()});
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("valid specdec trace (schema 1.1, 15 steps)"), std::string::npos) << run.out;
}

TEST(TraceCheck, MissingDataset) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) { f.open_group("steps").remove("positions"); }));
  EXPECT_PROBLEM(r, "/steps/positions", "missing, expected int64 [S]");
  const auto run = testing::run({"trace", "check", (dir / "edited.h5").string()});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.out.find((dir / "edited.h5").string() + ": /steps/positions: missing, expected int64"), std::string::npos) << run.out;
}

TEST(TraceCheck, WrongShape) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    h5::Group steps = f.open_group("steps");
    uint64_t rows = 0, cols = 0;
    const auto c = steps.read_matrix<uint32_t>("random_counters", &rows, &cols);
    steps.remove("random_counters");
    steps.write_matrix<uint32_t>("random_counters", rows * 2, 2, c.data());
    h5::Group prompt = f.open_group("prompt");
    const auto p = prompt.read_vector<int32_t>("tokens");
    prompt.remove("tokens");
    prompt.write_matrix<int32_t>("tokens", 1, p.size(), p.data());
  }));
  EXPECT_PROBLEM(r, "/steps/random_counters", "has 2 columns, expected 4");
  EXPECT_PROBLEM(r, "/prompt/tokens", "shape (1, 147), expected int32 [P] (a 1-D dataset)");
}

TEST(TraceCheck, WrongDtype) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    h5::Group out = f.open_group("output");
    const auto t = out.read_vector<int32_t>("tokens");
    out.remove("tokens");
    out.write_vector<int64_t>("tokens", std::vector<int64_t>(t.begin(), t.end()));
  }));
  EXPECT_PROBLEM(r, "/output/tokens", "dtype is int64, expected int32");
}

TEST(TraceCheck, BadOrUnsupportedVersion) {
  TempDir dir;
  auto version = [&](const char* v) {
    return check_trace_file(edited(dir, [v](h5::File& f) { f.write_attribute("schema_version", std::string(v)); }));
  };
  EXPECT_PROBLEM(version("one"), "/ @schema_version", "expected \"<major>.<minor>\"");
  EXPECT_PROBLEM(version("3.0"), "/ @schema_version", "unsupported version, expected 1.0 to 1.3");
  // 2.0 is the batched layout: a one-sequence file labelled so lacks its groups.
  EXPECT_PROBLEM(version("2.0"), "/batch", "missing");
  EXPECT_PROBLEM(version("2.2"), "/ @schema_version", "unsupported version");
  EXPECT_PROBLEM(version("1.4"), "/ @schema_version", "unsupported version");
  EXPECT_TRUE(version("1.3").valid());
  EXPECT_TRUE(version("1.2").valid());
  EXPECT_TRUE(version("1.0").valid());
}

// A draft-free run (schema 1.3, /steps/draft_sources): specdec's recording passes; broken sources
// are problems, as are a drafter model and method parameters outside their entry's range.
TEST(TraceCheck, DraftSources) {
  TempDir dir;
  const fs::path clean = dir / "ngram.h5";
  const auto rec = testing::run({"record", "--model", std::string(SPECDEC_SOURCE_DIR) + "/models/target", "--method", "ngram,n_min=1,n_max=3",
                                 "--k", "4", "--prompt", "the light, and the light was good; the light", "--max-new-tokens", "12",
                                 "--ignore-eos", "--out", clean.string()});
  ASSERT_EQ(rec.code, 0) << rec.err;
  const TraceCheckResult ok = check_trace_file(clean);
  EXPECT_TRUE(ok.valid()) << problems(ok);
  const Trace t = read_trace(clean);
  EXPECT_EQ(t.meta.models.count("drafter"), 0u) << "a draft-free run has no drafter model";
  std::size_t step = 0;
  while (step < t.steps.size() && t.steps[step].draft_sources.empty()) ++step;
  ASSERT_LT(step, t.steps.size()) << "no step of the recording copied a draft";
  const std::string at = "step " + std::to_string(step) + " node 0";

  auto check = [&](const std::function<void(h5::File&)>& edit) {
    const fs::path p = dir / "edited.h5";
    fs::remove(p);
    fs::copy_file(clean, p);
    h5::File f = h5::File::open_read_write(p);
    edit(f);
    f.close();
    return check_trace_file(p);
  };
  auto rewrite = []<class T>(h5::File& f, const char* name, std::function<void(std::vector<T>&)> change) {
    h5::Group g = f.open_group("steps/draft_sources");
    std::vector<T> v = g.read_vector<T>(name);
    change(v);
    g.remove(name);
    g.write_vector<T>(name, v);
  };
  const std::size_t first = static_cast<std::size_t>(
      h5::File::open_read_only(clean).open_group("steps/draft_sources").read_vector<int64_t>("row_offsets")[step]);
  EXPECT_PROBLEM(check([&](h5::File& f) { rewrite(f, "origin", std::function<void(std::vector<uint8_t>&)>([&](auto& v) { v[first] = 5; })); }),
                 "/steps/draft_sources/origin", at + " has origin 5, expected 0 (context) or 1 (responses)");
  EXPECT_PROBLEM(check([&](h5::File& f) {
                   rewrite(f, "position", std::function<void(std::vector<int64_t>&)>([&](auto& v) { v[first] = 100000; }));
                 }),
                 "/steps/draft_sources/position", at + " copies position 100000, expected 0 <= position < " + std::to_string(t.steps[step].position));
  EXPECT_PROBLEM(check([&](h5::File& f) {
                   rewrite(f, "request", std::function<void(std::vector<int64_t>&)>([&](auto& v) { v[first] = 3; }));
                 }),
                 "/steps/draft_sources/request", at + " has request 3, expected -1 for origin 0");
  EXPECT_PROBLEM(check([&](h5::File& f) { rewrite(f, "match_length", std::function<void(std::vector<int32_t>&)>([](auto& v) { v.pop_back(); })); }),
                 "/steps/draft_sources/match_length", "entries, expected");
  EXPECT_PROBLEM(check([&](h5::File& f) {
                   rewrite(f, "row_offsets", std::function<void(std::vector<int64_t>&)>([&](auto& v) { v[step + 1] -= 1; }));
                 }),
                 "/steps/draft_sources/row_offsets", "step " + std::to_string(step) + " has " +
                                                         std::to_string(t.steps[step].draft_sources.size() - 1) + " sources, expected 0 or " +
                                                         std::to_string(t.steps[step].draft_tokens.size()));
  EXPECT_PROBLEM(check([](h5::File& f) {
                   h5::Group d = f.open_group("meta/models").create_group("drafter");
                   d.write_attribute("path", std::string("x"));
                   d.write_attribute("fingerprint", std::string("fnv1a64:0123456789abcdef"));
                   d.write_string("config_json", "{}");
                 }),
                 "/meta/models/drafter", "present, but a ngram run drafts from");
  const auto params = check([](h5::File& f) {
    rewrite_config(f, [](nlohmann::json& j) {
      j["method"]["n_min"] = 0;
      j["method"]["n_mid"] = 2;
    });
  });
  EXPECT_PROBLEM(params, "/meta/config_json method", "n_min is 0, expected 1 <= n_min <= 128");
  EXPECT_PROBLEM(params, "/meta/config_json method", "unknown method-config key 'n_mid'");
}

TEST(TraceCheck, MissingAndUnknownConfigKeys) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    rewrite_config(f, [](nlohmann::json& j) {
      j.erase("max_new_tokens");
      j["bogus"] = 1;
      j["method"].erase("tree");
    });
    rewrite_config(f, [](nlohmann::json& j) { j["temprature"] = 0.5; }, "sampling_json");
  }));
  EXPECT_PROBLEM(r, "/meta/config_json", "missing run-config key 'max_new_tokens'");
  EXPECT_PROBLEM(r, "/meta/config_json", "unknown run-config key 'bogus'");
  EXPECT_PROBLEM(r, "/meta/config_json method", "missing method-config key 'tree'");
  EXPECT_PROBLEM(r, "/meta/sampling_json", "unknown sampling key 'temprature'");
  EXPECT_GE(r.problems.size(), 4u) << problems(r);
}

TEST(TraceCheck, StepIndexGap) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    h5::Group steps = f.open_group("steps");
    auto p = steps.read_vector<int64_t>("positions");
    for (std::size_t i = 3; i < p.size(); ++i) p[i] += 1;
    steps.remove("positions");
    steps.write_vector<int64_t>("positions", p);
  }));
  EXPECT_PROBLEM(r, "/steps/positions", "step 3 has position");
  EXPECT_PROBLEM(r, "/steps/positions", "(prompt length + tokens emitted by earlier steps)");
}

TEST(TraceCheck, StepCountsDisagree) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    h5::Group steps = f.open_group("steps");
    auto b = steps.read_vector<int32_t>("bonus_token");
    b.pop_back();
    steps.remove("bonus_token");
    steps.write_vector<int32_t>("bonus_token", b);
  }));
  EXPECT_PROBLEM(r, "/steps/bonus_token", "entries, expected one per step (15)");
}

TEST(TraceCheck, TokenIdOutOfRange) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    h5::Group steps = f.open_group("steps");
    auto e = steps.read_vector<int32_t>("emitted_tokens");
    e[0] = 9999;
    steps.remove("emitted_tokens");
    steps.write_vector<int32_t>("emitted_tokens", e);
    h5::Group out = f.open_group("output");
    auto o = out.read_vector<int32_t>("tokens");
    o[0] = 9999;
    out.remove("tokens");
    out.write_vector<int32_t>("tokens", o);
  }));
  EXPECT_PROBLEM(r, "/steps/emitted_tokens step 0", "token id 9999, expected 0 <= id < vocab_size 259");
  EXPECT_PROBLEM(r, "/output/tokens", "token id 9999");
}

TEST(TraceCheck, BadFingerprint) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    f.open_group("meta/models/target").write_attribute("fingerprint", std::string("sha256:abc"));
  }));
  EXPECT_PROBLEM(r, "/meta/models/target @fingerprint", "expected \"fnv1a64:\" and 16 lower-case hex digits");
}

TEST(TraceCheck, ListsEveryProblemNotTheFirst) {
  TempDir dir;
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    f.write_attribute("schema_version", std::string("9.9"));
    f.write_attribute("created_utc", std::string("yesterday"));
    f.open_group("steps").remove("accept_uniforms_offsets");
    f.open_group("steps").remove("draft_parents");
    f.open_group("output").remove("stop_reason");
  }));
  EXPECT_PROBLEM(r, "/ @schema_version", "unsupported");
  EXPECT_PROBLEM(r, "/ @created_utc", "expected ISO 8601");
  EXPECT_PROBLEM(r, "/steps/accept_uniforms_offsets", "missing");
  EXPECT_PROBLEM(r, "/steps/draft_parents", "missing");
  EXPECT_PROBLEM(r, "/output/stop_reason", "missing");
  const auto run = testing::run({"trace", "check", "--json", (dir / "edited.h5").string()});
  EXPECT_EQ(run.code, 1);
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), r.problems.size());
  EXPECT_EQ(j[0]["file"], (dir / "edited.h5").string());
  EXPECT_TRUE(j[0].contains("where") && j[0].contains("what"));
}

// /output/stop_reason must be what ends the run: the first eos when stop_at_eos, else
// max_new_tokens tokens. The golden run, given a configuration where it stopped at max_tokens,
// passes; each inconsistent stop reason is a problem that names it and says why.
TEST(TraceCheck, StopReasonMustFitTheRun) {
  TempDir dir;
  std::vector<int32_t> out;
  {
    const h5::File f = h5::File::open_read_only(kGolden / kSpec);
    out = f.open_group("output").read_vector<int32_t>("tokens");
  }
  ASSERT_GE(out.size(), 3u);
  const auto n = static_cast<int64_t>(out.size());
  int32_t absent = 0;  // an id the output does not hold: an eos token it never emitted
  while (std::find(out.begin(), out.end(), absent) != out.end()) ++absent;
  struct Run {
    std::string stop = "max_tokens";
    int64_t max_new_tokens;
    bool stop_at_eos = true;
    nlohmann::json eos;
  };
  auto check = [&](const Run& run) {
    return check_trace_file(edited(dir, [&](h5::File& f) {
      rewrite_config(f, [&](nlohmann::json& j) {
        j["max_new_tokens"] = run.max_new_tokens;
        j["stop_at_eos"] = run.stop_at_eos;
      });
      h5::Group target = f.open_group("meta/models/target");
      nlohmann::json c = nlohmann::json::parse(target.read_string("config_json"));
      c["eos_token_id"] = run.eos;
      target.remove("config_json");
      target.write_string("config_json", c.dump());
      h5::Group o = f.open_group("output");
      o.remove("stop_reason");
      o.write_string("stop_reason", run.stop);
    }));
  };
  const TraceCheckResult ok = check({"max_tokens", n, true, absent});
  ASSERT_TRUE(ok.valid()) << problems(ok);
  EXPECT_TRUE(check({"max_tokens", n, false, out[0]}).valid()) << "without stop_at_eos an eos token is any other token";
  EXPECT_PROBLEM(check({"eos", n, true, absent}), "/output/stop_reason",
                 "is \"eos\", but the last output token (id " + std::to_string(out.back()) + ") is not the target's eos_token_id " +
                     std::to_string(absent));
  EXPECT_PROBLEM(check({"eos", n, false, out.back()}), "/output/stop_reason", "is \"eos\", but /meta/config_json stop_at_eos is false");
  EXPECT_PROBLEM(check({"max_tokens", n + 5, true, absent}), "/output/stop_reason",
                 "is \"max_tokens\", but the output has " + std::to_string(n) + " tokens, fewer than max_new_tokens " + std::to_string(n + 5));
  EXPECT_PROBLEM(check({"max_tokens", n - 1, true, absent}), "/output/stop_reason",
                 "the output has " + std::to_string(n) + " tokens, more than max_new_tokens " + std::to_string(n - 1));
  // An eos inside the output: the run would have stopped there (a list of eos ids as well).
  const std::size_t inside = 1;
  if (std::find(out.begin(), out.begin() + inside, out[inside]) == out.begin() + inside) {
    EXPECT_PROBLEM(check({"max_tokens", n, true, nlohmann::json::array({absent, out[inside]})}), "/output/stop_reason",
                   "output token 1 (id " + std::to_string(out[inside]) + ") is the target's eos_token_id [" + std::to_string(absent) + ", " +
                       std::to_string(out[inside]) + "] and stop_at_eos is true, yet ");
  }
  if (std::find(out.begin(), out.end() - 1, out.back()) == out.end() - 1) {  // the last token only once
    EXPECT_PROBLEM(check({"max_tokens", n, true, out.back()}), "/output/stop_reason",
                   "the last output token (id " + std::to_string(out.back()) + ") is the target's eos_token_id " +
                       std::to_string(out.back()) + " and stop_at_eos is true, expected \"eos\"");
    EXPECT_TRUE(check({"eos", n + 3, true, out.back()}).valid());
  }
  // Refused on load by the tools that compare traces, naming the file and the stop reason.
  const fs::path bad = edited(dir, [&](h5::File& f) {
    h5::Group o = f.open_group("output");
    o.remove("stop_reason");
    o.write_string("stop_reason", "eos");
    rewrite_config(f, [](nlohmann::json& j) { j["stop_at_eos"] = false; });
  }, kSpec, "stop.h5");
  const auto diff = testing::run({"trace", "diff", (kGolden / kSpec).string(), bad.string()});
  EXPECT_EQ(diff.code, 2) << diff.out << diff.err;
  EXPECT_NE(diff.err.find(bad.string() + ": not a valid trace: /output/stop_reason: is \"eos\", but /meta/config_json stop_at_eos is false"),
            std::string::npos) << diff.err;
}

// JSON embedded in a trace is parsed under the depth limit (reference/io/json_input.hpp): nesting
// that would overflow the stack of whatever walks the value is a problem naming the dataset.
TEST(TraceCheck, EmbeddedJsonNestingIsBounded) {
  TempDir dir;
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  deep += "1";
  deep += std::string(100000, '}');
  const auto r = check_trace_file(edited(dir, [&](h5::File& f) {
    h5::Group meta = f.open_group("meta");
    meta.remove("config_json");
    meta.write_string("config_json", deep);
    meta.remove("sampling_json");
    meta.write_string("sampling_json", "[" + std::string(200, '[') + std::string(201, ']'));
  }));
  EXPECT_PROBLEM(r, "/meta/config_json", "JSON nests deeper than 128 levels (at byte 640)");
  EXPECT_PROBLEM(r, "/meta/sampling_json", "JSON nests deeper than 128 levels");
  // The reader's own check of the JSON documents (write_trace, read_trace) bounds them too.
  Trace t = trace_test::speculative_trace(3);
  t.meta.sampling_json = deep;
  try {
    write_trace(dir / "deep.h5", t);
    ADD_FAILURE() << "a trace with JSON nested 100000 deep was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("meta.sampling_json: JSON nests deeper than 128 levels"), std::string::npos) << e.what();
  }
}

TEST(TraceCheck, InvariantsOfTheReaderAreProblemsToo) {
  TempDir dir;
  // Parents that do not precede their children: found by read_trace's invariants.
  const auto r = check_trace_file(edited(dir, [](h5::File& f) {
    h5::Group steps = f.open_group("steps");
    auto p = steps.read_vector<int32_t>("draft_parents");
    p[0] = 3;
    steps.remove("draft_parents");
    steps.write_vector<int32_t>("draft_parents", p);
  }));
  EXPECT_FALSE(r.valid());
  EXPECT_NE(problems(r).find("draft_parents"), std::string::npos) << problems(r);
}

TEST(TraceCheck, TruncatedAndNotHdf5) {
  TempDir dir;
  {
    std::ifstream in(kGolden / kSpec, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "truncated.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  const auto t = check_trace_file(dir / "truncated.h5");
  EXPECT_FALSE(t.valid());
  ASSERT_FALSE(t.problems.empty());
  const auto rt = testing::run({"trace", "check", (dir / "truncated.h5").string()});
  EXPECT_FALSE(t.opened);  // libhdf5 refuses a file shorter than its superblock says
  EXPECT_PROBLEM(t, "/", "truncated file");
  EXPECT_EQ(rt.code, 2);
  EXPECT_NE(rt.out.find("truncated.h5: /: cannot open HDF5 file"), std::string::npos) << rt.out;

  std::ofstream(dir / "text.h5") << "this is not HDF5\n";
  const auto n = check_trace_file(dir / "text.h5");
  EXPECT_FALSE(n.opened);
  EXPECT_PROBLEM(n, "/", "not an HDF5 file");
  EXPECT_EQ(testing::run({"trace", "check", (dir / "text.h5").string()}).code, 2);
  EXPECT_EQ(testing::run({"trace", "check", (dir / "absent.h5").string()}).code, 2);
  EXPECT_EQ(testing::run({"trace", "frobnicate"}).code, 2);
}

TEST(TraceDiff, ATraceEqualsItself) {
  const std::string g = (kGolden / kSpec).string();
  const auto run = testing::run({"trace", "diff", g, g});
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("SAME"), std::string::npos);
  EXPECT_NE(run.out.find("steps compared 15 of 15"), std::string::npos) << run.out;
  const auto j = nlohmann::json::parse(testing::run({"trace", "diff", "--json", g, g}).out);
  EXPECT_EQ(j["result"], "same");
  EXPECT_EQ(j["tokens_equal"], 32);
  EXPECT_TRUE(j["first_divergence"].is_null());
}

// Traces of two configurations (greedy vs sampled, a chain vs a dynamic tree) are compared, and
// the report says first that they were configured differently; two runs of one configuration
// report no difference.
TEST(TraceDiff, SaysWhenTheConfigurationsDiffer) {
  const std::string chain_greedy = (kGolden / "eagle-chain_code_greedy.h5").string();
  const std::string chain_sample = (kGolden / "eagle-chain_code_sample.h5").string();
  const std::string tree_greedy = (kGolden / "eagle-dynamic_code_greedy.h5").string();
  const auto sampled = testing::run({"trace", "diff", chain_greedy, chain_sample});
  EXPECT_NE(sampled.out.find("configurations differ, so the outputs need not agree"), std::string::npos) << sampled.out;
  EXPECT_NE(sampled.out.find("\n  sampling: mode=greedy"), std::string::npos) << sampled.out;
  EXPECT_NE(sampled.out.find(" vs mode=sample"), std::string::npos) << sampled.out;
  const auto tree = nlohmann::json::parse(testing::run({"trace", "diff", "--json", chain_greedy, tree_greedy}).out);
  ASSERT_EQ(tree["config_differences"].size(), 1u) << tree.dump();
  EXPECT_EQ(tree["config_differences"][0].get<std::string>().rfind("method shape: k=", 0), 0u) << tree.dump();
  EXPECT_NE(tree["config_differences"][0].get<std::string>().find(" vs tree=dynamic"), std::string::npos) << tree.dump();
  const auto same = nlohmann::json::parse(testing::run({"trace", "diff", "--json", chain_greedy, chain_greedy}).out);
  EXPECT_EQ(same["config_differences"], nlohmann::json::array());
  EXPECT_EQ(testing::run({"trace", "diff", chain_greedy, chain_greedy}).out.find("configurations differ"), std::string::npos);
}

TEST(TraceDiff, FindsTheTamperedStep) {
  TempDir dir;
  const std::string g = (kGolden / kSpec).string();
  // A logit of step 4's first row moved well beyond the policy.
  const fs::path logits = edited(dir, [](h5::File& f) {
    h5::Group tl = f.open_group("steps/target_logits");
    const auto off = tl.read_vector<int64_t>("row_offsets");
    uint64_t rows = 0, cols = 0;
    auto v = tl.read_matrix<float>("topk_values", &rows, &cols);
    v[static_cast<std::size_t>(off[4]) * cols] += 1.0f;
    tl.remove("topk_values");
    tl.write_matrix<float>("topk_values", rows, cols, v.data());
  }, kSpec, "logits.h5");
  auto run = testing::run({"trace", "diff", "--json", g, logits.string()});
  EXPECT_EQ(run.code, 1) << run.out << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["first_divergence"]["step"], 4);
  EXPECT_EQ(j["first_divergence"]["what"], "target logits");
  EXPECT_EQ(j["steps_compared"], 4);
  // An acceptance uniform of step 6 changed: an exact field.
  const fs::path uniforms = edited(dir, [](h5::File& f) {
    h5::Group steps = f.open_group("steps");
    const auto off = steps.read_vector<int64_t>("accept_uniforms_offsets");
    auto u = steps.read_vector<double>("accept_uniforms");
    u[static_cast<std::size_t>(off[6])] = 0.123456;
    steps.remove("accept_uniforms");
    steps.write_vector<double>("accept_uniforms", u);
  }, kSpec, "uniforms.h5");
  run = testing::run({"trace", "diff", g, uniforms.string()});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.out.find("first divergence: step 6"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("acceptance uniforms"), std::string::npos) << run.out;
  // Unusable input: 2.
  std::ofstream(dir / "text.h5") << "no";
  EXPECT_EQ(testing::run({"trace", "diff", g, (dir / "text.h5").string()}).code, 2);
  EXPECT_EQ(testing::run({"trace", "diff", g, (kGolden / "sequential_code_greedy.h5").string()}).code, 2);
}

// Schema 1.2: per-layer target tensors and drafter inputs/outputs round-trip and are checked.
// The run configuration is a valid one: trace diff compares only traces that pass trace check.
Trace with_diagnostics() {
  Trace t = trace_test::speculative_trace(11);
  t.meta.config_json = R"({"method":{"method":"eagle","drafter":"models/tiny-eagle","tree":"dynamic"},"max_new_tokens":16,"stop_at_eos":true})";
  t.target_layers = {3, 4, {"attention", "mlp"}};
  t.drafter_io = {true, 8, 4, 40};
  float x = 0.5f;
  for (StepRecord& s : t.steps) {
    s.layer_row_nodes = {-1};
    for (std::size_t j = 0; j < s.draft_tokens.size(); ++j) s.layer_row_nodes.push_back(static_cast<int32_t>(j));
    s.layer_hidden.resize(s.layer_row_nodes.size() * 3 * 2 * 4);
    for (float& v : s.layer_hidden) v = (x += 0.25f);
    s.drafter_tokens = {s.emitted_tokens[0], 7};
    s.drafter_positions = {s.position, s.position + 1};
    s.drafter_calls = {0, 1};
    s.drafter_features.assign(2 * 8, 0.125f);
    s.drafter_hidden.assign(2 * 4, -1.5f);
    s.drafter_logits.assign(2 * 40, 0.75f);
  }
  return t;
}

TEST(TraceDiagnostics, RoundTripAndCheck) {
  TempDir dir;
  const Trace t = with_diagnostics();
  write_trace(dir / "d.h5", t);
  const Trace back = read_trace(dir / "d.h5");
  EXPECT_EQ(back.meta.schema_version, trace_schema_version());
  EXPECT_EQ(back.target_layers.num_layers, 3);
  EXPECT_EQ(back.target_layers.hidden_size, 4);
  EXPECT_EQ(back.target_layers.substeps, (std::vector<std::string>{"attention", "mlp"}));
  EXPECT_TRUE(back.drafter_io.present);
  EXPECT_EQ(back.drafter_io.feature_size, 8);
  EXPECT_EQ(back.drafter_io.hidden_size, 4);
  EXPECT_EQ(back.drafter_io.vocab_size, 40);
  ASSERT_EQ(back.steps.size(), t.steps.size());
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    EXPECT_EQ(back.steps[s].layer_row_nodes, t.steps[s].layer_row_nodes);
    EXPECT_EQ(back.steps[s].layer_hidden, t.steps[s].layer_hidden);
    EXPECT_EQ(back.steps[s].drafter_tokens, t.steps[s].drafter_tokens);
    EXPECT_EQ(back.steps[s].drafter_positions, t.steps[s].drafter_positions);
    EXPECT_EQ(back.steps[s].drafter_calls, t.steps[s].drafter_calls);
    EXPECT_EQ(back.steps[s].drafter_features, t.steps[s].drafter_features);
    EXPECT_EQ(back.steps[s].drafter_hidden, t.steps[s].drafter_hidden);
    EXPECT_EQ(back.steps[s].drafter_logits, t.steps[s].drafter_logits);
  }
  // Without them (old traces), nothing is written and nothing read.
  write_trace(dir / "plain.h5", trace_test::speculative_trace(11));
  const Trace plain = read_trace(dir / "plain.h5");
  EXPECT_EQ(plain.target_layers.num_layers, 0);
  EXPECT_FALSE(plain.drafter_io.present);
  h5::File f = h5::File::open_read_only(dir / "plain.h5");
  EXPECT_FALSE(f.has("steps/target_layers"));
  EXPECT_FALSE(f.has("steps/drafter_io"));
}

// With drafter rows and per-layer states in both traces, trace diff names what validate names: the
// drafter row that departs, and for a target-logits divergence the first layer and sub-step.
TEST(TraceDiagnostics, TraceDiffNamesTheDrafterRowAndTheLayer) {
  TempDir dir;
  const Trace a = with_diagnostics();
  write_trace(dir / "a.h5", a);
  {
    Trace b = a;
    b.steps[3].drafter_hidden[4] += 1.0f;  // row 1's hidden state (H = 4), inputs unchanged
    write_trace(dir / "b.h5", b);
    const auto run = testing::run({"trace", "diff", "--json", (dir / "a.h5").string(), (dir / "b.h5").string()});
    ASSERT_EQ(run.code, 1) << run.out << run.err;
    const auto j = nlohmann::json::parse(run.out)["first_divergence"];
    EXPECT_EQ(j["step"], 3);
    EXPECT_EQ(j["what"], "drafter hidden");
    EXPECT_EQ(j["row"], 1);
    EXPECT_EQ(j["drafter_call"], 1);
    EXPECT_EQ(j["position"], a.steps[3].position + 1);
    EXPECT_TRUE(j["layer"].is_null());
  }
  {
    Trace b = a;
    b.steps[3].drafter_features[8] += 1.0f;  // row 1's feature: an input
    write_trace(dir / "b.h5", b);
    const auto j = nlohmann::json::parse(testing::run({"trace", "diff", "--json", (dir / "a.h5").string(), (dir / "b.h5").string()}).out);
    EXPECT_EQ(j["first_divergence"]["what"], "drafter inputs");
    EXPECT_EQ(j["first_divergence"]["row"], 1);
  }
  {
    Trace b = a;
    StepRecord& s = b.steps[2];
    s.target_logits[0].summary.topk_values[0] += 5.0f;
    // Layer 1's mlp state (sub-step index 1 of {attention, mlp}) of row 0 departs; layer 0 agrees.
    const std::size_t L = 3, U = 2, H = 4, row = 0, layer = 1, u = 1;
    for (std::size_t h = 0; h < H; ++h) s.layer_hidden[((row * L + layer) * U + u) * H + h] *= 1.5f;
    write_trace(dir / "b.h5", b);
    const auto run = testing::run({"trace", "diff", "--json", (dir / "a.h5").string(), (dir / "b.h5").string()});
    ASSERT_EQ(run.code, 1) << run.out << run.err;
    const auto j = nlohmann::json::parse(run.out)["first_divergence"];
    EXPECT_EQ(j["step"], 2);
    EXPECT_EQ(j["what"], "target logits");
    EXPECT_EQ(j["layer"], 1);
    EXPECT_EQ(j["substep"], "mlp");
    EXPECT_EQ(j["layer_row"], 0);
    const auto text = testing::run({"trace", "diff", (dir / "a.h5").string(), (dir / "b.h5").string()});
    EXPECT_NE(text.out.find("first out of tolerance inside the target forward: layer 1, mlp"), std::string::npos) << text.out;
  }
}

// Drafter rows a drafter cannot have run in the step (beyond its position plus the deepest draft),
// and rows recorded twice, are refused: validation would pass over them without comparing.
TEST(TraceDiagnostics, DrafterRowsBeyondTheRunOrRepeatedAreRefused) {
  TempDir dir;
  auto refused = [&](const Trace& t) {
    try {
      write_trace(dir / "x.h5", t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(written)");
  };
  Trace t = with_diagnostics();
  t.steps[2].drafter_positions[1] = 1000000000;
  EXPECT_NE(refused(t).find("steps[2].drafter_positions: entry 1 is position 1000000000, expected 0 <= position <= " +
                            std::to_string(t.steps[2].position + 64)),
            std::string::npos) << refused(t);
  t = with_diagnostics();
  t.steps[1].drafter_positions[0] = -1;
  EXPECT_NE(refused(t).find("steps[1].drafter_positions: entry 0 is position -1"), std::string::npos) << refused(t);
  // Row 1 of step 3 a copy of row 0: the same forward, token, position and values.
  t = with_diagnostics();
  StepRecord& s = t.steps[3];
  s.drafter_tokens[1] = s.drafter_tokens[0];
  s.drafter_positions[1] = s.drafter_positions[0];
  s.drafter_calls[1] = 0;
  EXPECT_NE(refused(t).find("steps[3].drafter_tokens: entry 1 repeats entry 0 (drafter forward 0, token " + std::to_string(s.drafter_tokens[0]) +
                            " at position " + std::to_string(s.position)),
            std::string::npos) << refused(t);
  // The same token and position fed with other features (tree siblings under other parents) is
  // another row; so is the same row again in a later forward (a recomputation).
  s.drafter_features[8] += 1.0f;
  EXPECT_EQ(refused(t), "(written)");
  s.drafter_features[8] -= 1.0f;
  s.drafter_calls[1] = 1;
  EXPECT_EQ(refused(t), "(written)");

  // A file an engine wrote with 2,000 copies of a row: trace check names it.
  write_trace(dir / "d.h5", with_diagnostics());
  {
    h5::File f = h5::File::open_read_write(dir / "d.h5");
    h5::Group io = f.open_group("steps/drafter_io");
    auto tokens = io.read_vector<int32_t>("tokens");
    auto positions = io.read_vector<int64_t>("positions");
    auto calls = io.read_vector<int32_t>("calls");
    auto off = io.read_vector<int64_t>("row_offsets");
    for (const char* m : {"tokens", "positions", "calls", "row_offsets", "features", "hidden", "logits"}) io.remove(m);
    const std::size_t at = static_cast<std::size_t>(off[1]);  // step 1's first row
    tokens.insert(tokens.begin() + static_cast<std::ptrdiff_t>(at), 2000, tokens[at]);
    positions.insert(positions.begin() + static_cast<std::ptrdiff_t>(at), 2000, positions[at]);
    calls.insert(calls.begin() + static_cast<std::ptrdiff_t>(at), 2000, calls[at]);
    for (std::size_t i = 2; i < off.size(); ++i) off[i] += 2000;
    io.write_vector<int32_t>("tokens", tokens);
    io.write_vector<int64_t>("positions", positions);
    io.write_vector<int32_t>("calls", calls);
    io.write_vector<int64_t>("row_offsets", off);
    f.close();
  }
  const auto r = check_trace_file(dir / "d.h5");
  EXPECT_PROBLEM(r, "/", "steps[1].drafter_tokens: entry 1 repeats entry 0");
}

// trace diff states what became of B's drafter rows, and fails when none could be compared.
TEST(TraceDiagnostics, TraceDiffCountsTheDrafterRows) {
  TempDir dir;
  const Trace a = with_diagnostics();
  write_trace(dir / "a.h5", a);
  const std::string pa = (dir / "a.h5").string(), pb = (dir / "b.h5").string();
  auto diff_json = [&](int code) {
    const auto run = testing::run({"trace", "diff", "--json", pa, pb});
    EXPECT_EQ(run.code, code) << run.out << run.err;
    return run.code == 2 ? nlohmann::json() : nlohmann::json::parse(run.out);
  };
  write_trace(dir / "b.h5", a);
  auto j = diff_json(0);
  EXPECT_EQ(j["drafter_rows"], nlohmann::json::parse(R"({"recorded":8,"compared":8,"passed":8,"passed_over":0,"not_compared":0})")) << j.dump();
  for (const auto& q : j["quantities"]) EXPECT_EQ(q["passed"], q["compared"]) << q.dump();
  const auto text = testing::run({"trace", "diff", pa, pb});
  EXPECT_NE(text.out.find("drafter rows: 8 of 8 compared (8 passed), 0 passed over"), std::string::npos) << text.out;
  // One extra row of B at a position A's drafter did not run: passed over, and counted.
  {
    Trace b = a;
    StepRecord& s = b.steps[2];
    s.drafter_tokens.push_back(7);
    s.drafter_positions.push_back(s.position + 5);
    s.drafter_calls.push_back(2);
    s.drafter_features.resize(s.drafter_features.size() + 8, 0.5f);
    s.drafter_hidden.resize(s.drafter_hidden.size() + 4, 0.5f);
    s.drafter_logits.resize(s.drafter_logits.size() + 40, 0.5f);
    write_trace(dir / "b.h5", b);
    j = diff_json(0);
    EXPECT_EQ(j["drafter_rows"]["passed_over"], 1) << j.dump();
    EXPECT_EQ(j["drafter_rows"]["compared"], 8) << j.dump();
  }
  // Every row of B shifted: none has a counterpart, so nothing of B's drafter was compared.
  {
    Trace b = a;
    for (StepRecord& s : b.steps)
      for (int64_t& p : s.drafter_positions) p += 10;
    write_trace(dir / "b.h5", b);
    j = diff_json(1);
    EXPECT_EQ(j["result"], "divergent");
    EXPECT_EQ(j["first_divergence"]["what"], "drafter rows") << j.dump();
    EXPECT_EQ(j["drafter_rows"]["passed_over"], 8) << j.dump();
    EXPECT_EQ(j["drafter_rows"]["compared"], 0) << j.dump();
  }
  // A row of B fed a token outside the target's vocabulary: refused on load, as trace check does.
  {
    Trace b = a;
    b.steps[1].drafter_tokens[1] = 999;
    write_trace(dir / "b.h5", b);
    const auto run = testing::run({"trace", "diff", pa, pb});
    EXPECT_EQ(run.code, 2) << run.out << run.err;
    EXPECT_NE(run.err.find(pb + ": not a valid trace: /steps/drafter_io/tokens: entry 3 is token id 999, expected 0 <= id < vocab_size 50"),
              std::string::npos) << run.err;
    EXPECT_EQ(check_trace_file(pb).valid(), false);
  }
}

TEST(TraceDiagnostics, InconsistentOnesAreRefused) {
  TempDir dir;
  Trace t = with_diagnostics();
  t.steps[1].layer_hidden.pop_back();
  EXPECT_THROW(write_trace(dir / "x.h5", t), Error);
  t = with_diagnostics();
  t.target_layers.substeps = {"mlp", "attention"};
  EXPECT_THROW(write_trace(dir / "x.h5", t), Error);
  t = with_diagnostics();
  t.steps[0].layer_row_nodes = {-1, 5};  // step 0 has no draft nodes
  t.steps[0].layer_hidden.resize(2 * 3 * 2 * 4);
  EXPECT_THROW(write_trace(dir / "x.h5", t), Error);
  t = with_diagnostics();
  t.steps[2].drafter_calls = {0, 2};
  EXPECT_THROW(write_trace(dir / "x.h5", t), Error);
  // A file whose hidden rows disagree with its attributes fails check with a specific problem.
  write_trace(dir / "d.h5", with_diagnostics());
  {
    h5::File f = h5::File::open_read_write(dir / "d.h5");
    f.open_group("steps/target_layers").write_attribute("num_layers", int64_t{5});
    f.open_group("steps/target_layers").write_attribute("substeps", std::string("attention,frobnicate"));
    f.close();
  }
  const auto r = check_trace_file(dir / "d.h5");
  EXPECT_PROBLEM(r, "/steps/target_layers/hidden", "rows (R x num_layers x substeps)");
  EXPECT_PROBLEM(r, "/steps/target_layers @substeps", "unknown sub-step 'frobnicate'");
}

}  // namespace
}  // namespace specdec
