// specdec explain's text on the bundled models, with fixed seeds: a step cut by --max-new-tokens is
// marked and left out of AL, a test after a rejected sibling names the residual it used, coupled
// and greedy decisions name the target's choice (and its Gumbel score), every token is escaped
// the same way, and --html refuses destinations it cannot write.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cli/options.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/cli/explain_parse.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::ExplainedStep;
using testing::has;
using testing::parse_explain;

std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

CliRun explain(std::vector<std::string> args) {
  std::vector<std::string> all = {"explain", "--model", bundled("target")};
  all.insert(all.end(), args.begin(), args.end());
  return testing::run(all);
}

// The number after `key` in `line` (NaN when absent).
double number_after(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return NAN;
  return std::stod(line.substr(at + key.size()));
}

// The draft chain this case reproduces: 16 tokens, the last step cut after 1 of its 4 tokens.
TEST(ExplainText, CutStepIsMarkedAndLeftOutOfAL) {
  const std::string where = "case: draft k=3 sample 'Hi', --max-new-tokens 16";
  const CliRun r = explain({"--method", "draft", "--drafter", bundled("draft"), "--k", "3", "--sampling", "sample", "--seed", "0",
                            "--prompt", "Hi", "--max-new-tokens", "16"});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  const std::vector<ExplainedStep> steps = parse_explain(r.out);
  ASSERT_GE(steps.size(), 3u) << where << "\n" << r.out;
  int full = 0, full_tokens = 0, all_produced = 0, spec = 0, cut = 0;
  for (const ExplainedStep& s : steps) {
    if (s.sequential) continue;
    ++spec;
    all_produced += s.produced;
    ASSERT_GE(s.kept, 0) << where << ": no emitted line in step " << s.index;
    if (s.cut) {
      ++cut;
      EXPECT_LT(s.kept, s.produced) << where << ": step " << s.index << " is marked cut but kept everything";
      EXPECT_TRUE(has(s.lines[0], "[cut by --max-new-tokens: " + std::to_string(s.kept) + " of its " + std::to_string(s.produced) +
                                      " tokens kept]"))
          << where << ": " << s.lines[0];
      // The accepted drafts past the cut and the bonus are shown as discarded.
      EXPECT_EQ(s.discarded + (s.final_discarded ? 1 : 0), s.produced - s.kept) << where << ": step " << s.index;
      EXPECT_TRUE(s.final_discarded) << where;
    } else {
      EXPECT_EQ(s.kept, s.produced) << where << ": step " << s.index << " lost tokens without being marked cut";
      EXPECT_EQ(s.discarded, 0) << where;
      ++full;
      full_tokens += s.kept;
    }
  }
  ASSERT_EQ(cut, 1) << where << ": exactly the last step is cut\n" << r.out;
  EXPECT_TRUE(steps.back().cut) << where;
  const double al = static_cast<double>(full_tokens) / full;
  const double al_with_cut = static_cast<double>(all_produced) / spec;  // what AL showed before
  ASSERT_GT(std::abs(al - al_with_cut), 0.01) << where << ": the case must tell the two apart";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("AL ([0-9.]+) tokens per step \\(bonus included\\) over ([0-9]+) full steps")))
      << where << "\n" << r.out;
  EXPECT_NEAR(std::stod(m[1]), al, 0.005) << where << ": AL must count only the full steps";
  EXPECT_EQ(std::stoi(m[2]), full) << where;
  EXPECT_TRUE(has(r.out, "step " + std::to_string(steps.back().index) + " cut short and excluded")) << where << "\n" << r.out;
  int kept = 0;
  for (const ExplainedStep& s : steps) kept += s.kept;
  EXPECT_TRUE(has(r.out, "16 tokens = 1 from the prefill + 15 from " + std::to_string(spec) + " steps")) << where << "\n" << r.out;
  EXPECT_EQ(kept, 16) << where;
}

// An EAGLE tree in sample mode: deterministic candidates (one-hot q). After a sibling is rejected,
// the next test uses p' = p without the rejected tokens, renormalised — and says so.
TEST(ExplainText, TestAfterRejectedSiblingNamesTheResidual) {
  const std::string where = "case: eagle tree [[0],[1],[0,0],[0,1],[1,0]] sample T=0.8 'And God said'";
  const CliRun r = explain({"--method", "eagle", "--drafter", bundled("eagle1"), "--tree", "[[0],[1],[0,0],[0,1],[1,0]]", "--sampling",
                            "sample", "--temperature", "0.8", "--seed", "0", "--prompt", "And God said"});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  int residual_tests = 0;
  for (const ExplainedStep& s : parse_explain(r.out)) {
    std::vector<double> rejected_p;  // target p of the siblings rejected so far at the current depth
    int depth = 0;
    for (const std::string& line : s.lines) {
      const bool test = has(line, "✓ accept d") || has(line, "✗ reject d");
      if (!test) continue;
      const int d = static_cast<int>(number_after(line, " d"));
      if (d != depth) rejected_p.clear();
      depth = d;
      const double p = number_after(line, "target p=");
      if (has(line, "after rejecting")) {
        ++residual_tests;
        ASSERT_FALSE(rejected_p.empty()) << where << ": a residual without a rejected sibling: " << line;
        double removed = 0;
        for (double x : rejected_p) removed += x;
        const double p_res = number_after(line, "residual p'=");
        EXPECT_NEAR(p_res, p / (1 - removed), 0.002) << where << ": p' = p / (1 − removed mass): " << line;
        // The test compares the uniform with that same residual, and says which it is.
        EXPECT_EQ(number_after(line.substr(line.find("u=")), "p'="), p_res) << where << ": " << line;
        const double u = number_after(line, "u=");
        EXPECT_EQ(u < p_res, has(line, "✓ accept")) << where << ": " << line;
      } else {
        EXPECT_TRUE(rejected_p.empty()) << where << ": a test after a rejected sibling without its residual: " << line;
        EXPECT_EQ(number_after(line.substr(line.find("u=")), "p="), p) << where << ": one-hot q tests u < p: " << line;
      }
      if (has(line, "✗ reject")) rejected_p.push_back(p);
    }
    for (const std::string& line : s.lines) {
      if (line.rfind("  + ", 0) == 0 && has(line, "correction")) {
        EXPECT_TRUE(has(line, "residual norm(max(0, p - q))") && has(line, "p'=") && has(line, "drawn from the residual"))
            << where << ": a sample-mode correction names the residual it is drawn from: " << line;
      }
    }
  }
  EXPECT_GE(residual_tests, 1) << where << ": the case must contain a test after a rejected sibling\n" << r.out;
}

// Coupled sampling: every decision shows the Gumbel scores of the draft and of the argmax it is
// compared with; a rejected draft scores below the argmax.
TEST(ExplainText, CoupledShowsGumbelScoresAndTheArgmax) {
  const std::string where = "case: eagle dynamic tree (depth 3, top-k 3, 8 tokens) coupled T=0.8 seed 0";
  const CliRun r = explain({"--method", "eagle", "--drafter", bundled("eagle1"), "--tree", "dynamic", "--depth", "3", "--tree-top-k", "3",
                            "--total-tokens", "8", "--sampling", "coupled", "--temperature", "0.8", "--seed", "0", "--prompt", "And God said"});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  int accepts = 0, rejects = 0;
  for (const ExplainedStep& s : parse_explain(r.out)) {
    for (const std::string& line : s.lines) {
      if (has(line, "✓ accept")) {
        ++accepts;
        EXPECT_TRUE(has(line, "Gumbel score logit/T+g=") && has(line, "the argmax")) << where << ": " << line;
      } else if (has(line, "✗ reject")) {
        ++rejects;
        const double mine = number_after(line, "Gumbel score "), best = number_after(line, " < ");
        EXPECT_TRUE(has(line, "of the argmax '")) << where << ": " << line;
        EXPECT_LT(mine, best) << where << ": a rejected draft scores below the argmax: " << line;
      } else if (line.rfind("  + ", 0) == 0) {
        EXPECT_TRUE(has(line, "Gumbel score logit/T+g=")) << where << ": the final token's score: " << line;
      }
    }
  }
  EXPECT_GE(accepts, 1) << where;
  EXPECT_GE(rejects, 1) << where << ": the case must contain a rejection\n" << r.out;
}

// Greedy: a rejected draft names the target's top choice at its point; in a tree that is the
// sibling accepted after it (or the correction), not the token that ends the step.
TEST(ExplainText, GreedyNamesTheTargetsTopChoiceAtEachPoint) {
  const std::string where = "case: eagle dynamic tree (depth 4, top-k 4, 12 tokens) greedy 'And God said'";
  const CliRun r = explain({"--method", "eagle", "--drafter", bundled("eagle1"), "--tree", "dynamic", "--depth", "4", "--tree-top-k", "4",
                            "--total-tokens", "12", "--prompt", "And God said", "--max-new-tokens", "40"});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  int checked = 0;
  const std::regex test_line("(✓ accept|✗ reject) d([0-9]+)(?: \\(node [0-9]+\\))? '([^']*)'");
  const std::regex choice("the target's top choice: '([^']*)'");
  for (const ExplainedStep& s : parse_explain(r.out)) {
    std::string pending_choice;
    int pending_depth = 0;
    for (const std::string& line : s.lines) {
      std::smatch m, c;
      if (std::regex_search(line, m, test_line)) {
        const int d = std::stoi(m[2]);
        if (m[1] == "✓ accept") {
          EXPECT_TRUE(has(line, ", the target's top choice")) << where << ": " << line;
          if (!pending_choice.empty() && pending_depth == d) {
            EXPECT_EQ(m[3].str(), pending_choice) << where << ": the accepted sibling is the choice named at its point: " << line;
            ++checked;
          }
          pending_choice.clear();
        } else {
          ASSERT_TRUE(std::regex_search(line, c, choice)) << where << ": " << line;
          pending_choice = c[1];
          pending_depth = d;
        }
      } else if (line.rfind("  + ", 0) == 0 && !pending_choice.empty() && has(line, "correction")) {
        EXPECT_TRUE(has(line, "+ '" + pending_choice + "'")) << where << ": the correction is the choice named: " << line;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 3) << where << "\n" << r.out;
}

// A newline token in a tree listing is written \n, like every other token and the text.
TEST(ExplainText, TokensAreEscapedTheSameWayEverywhere) {
  const std::string where = "case: eagle tree [[0],[1],[0,0],[0,1],[1,0]] sample T=0.8 (a '\\n' draft)";
  const CliRun r = explain({"--method", "eagle", "--drafter", bundled("eagle1"), "--tree", "[[0],[1],[0,0],[0,1],[1,0]]", "--sampling",
                            "sample", "--temperature", "0.8", "--seed", "0", "--prompt", "And God said", "--max-new-tokens", "32"});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  EXPECT_TRUE(has(r.out, " '\\n' parent ")) << where << ": the newline draft in the tree listing\n" << r.out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    // Every line is one of explain's own: a token never breaks one.
    static const std::regex own("^(method|legend|        |prompt|step |  |output|AL |[0-9]+ tokens)");
    EXPECT_TRUE(std::regex_search(line, own)) << where << ": a line explain did not start: [" << line << "]";
  }
  // One escaping for tokens and text: the unit itself.
  EXPECT_EQ(cli::escaped("a\nb\\c\td\re\x01 é"), "a\\nb\\\\c\\td\\re\\x01 é");
  EXPECT_EQ(cli::escaped(std::string("\xff\n", 2)), "\\xff\\n");
  // Without a vocabulary tokens are ids, in the same places.
  const fs::path dir = fs::temp_directory_path() / ("specdec_explain_text_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);  // init-model creates the checkpoint directory, not its parents
  ASSERT_EQ(testing::run({"init-model", "--preset", "tiny", "--seed", "3", "--out", (dir / "m").string()}).code, 0);
  fs::remove(dir / "m" / "vocab.json");
  const CliRun ids = testing::run({"explain", "--model", (dir / "m").string(), "--method", "draft", "--drafter", (dir / "m").string(),
                                   "--k", "2", "--prompt-ids", "0,40,41", "--max-new-tokens", "4", "--ignore-eos"});
  fs::remove_all(dir);
  ASSERT_EQ(ids.code, 0) << ids.err;
  EXPECT_TRUE(std::regex_search(ids.out, std::regex("accept d1 <[0-9]+>"))) << ids.out;
  EXPECT_TRUE(has(ids.out, "prompt [0 40 41]")) << ids.out;
}

// Draft-free methods: each step that copied its drafts says from where — the matched suffix, its
// earlier occurrence and what followed it in the context, the occurrence in [ ] and the copies in
// { } — the same place the run's trace records; a tree lists each node's source.
TEST(ExplainText, DraftFreeStepsShowWhereTheDraftsCameFrom) {
  const std::string prompt = "the light, and the light was good; the light";
  const std::vector<std::string> ngram = {"--method", "ngram,n_min=1,n_max=3", "--k", "4", "--prompt", prompt, "--max-new-tokens", "16",
                                          "--ignore-eos"};
  const std::string where = "case: ngram n 1..3 k=4 greedy '" + prompt + "'";
  const CliRun r = explain(ngram);
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  // The trace of the same run records the sources the text shows.
  const fs::path trace = fs::temp_directory_path() / ("specdec_explain_sources_" + std::to_string(::getpid()) + ".h5");
  std::vector<std::string> record = {"record", "--model", bundled("target"), "--out", trace.string()};
  record.insert(record.end(), ngram.begin(), ngram.end());
  ASSERT_EQ(testing::run(record).code, 0);
  const Trace t = read_trace(trace);
  fs::remove(trace);

  const std::regex source_line("^  source the last ([0-9]+) tokens? \"(.*)\" \\((?:positions? )([0-9]+)(?:-([0-9]+))?\\) occurred before at "
                               "positions? ([0-9]+)(?:-([0-9]+))?; the drafts copy what followed, from position ([0-9]+)$");
  const std::regex window_line("^         (…)?(.*)\\[(.*)\\]\\{(.+)\\}(.*?)(…)?   \\(\\[ \\] the earlier occurrence, \\{ \\} copied as drafts\\)$");
  int shown = 0, nothing = 0;
  const std::vector<ExplainedStep> steps = parse_explain(r.out);
  ASSERT_EQ(steps.size(), t.steps.size()) << where;
  for (const ExplainedStep& s : steps) {
    const StepRecord& rec = t.steps[static_cast<size_t>(s.index)];
    const std::string at = where + ", step " + std::to_string(s.index);
    if (s.sequential) continue;
    if (s.drafted == 0) {
      EXPECT_TRUE(has(s.lines[0], ": no drafts (no earlier occurrence of the last tokens")) << at << ": " << s.lines[0];
      ++nothing;
      continue;
    }
    ASSERT_GE(s.lines.size(), 3u) << at;
    std::smatch m, w;
    ASSERT_TRUE(std::regex_match(s.lines[1], m, source_line)) << at << ": [" << s.lines[1] << "]";
    ASSERT_TRUE(std::regex_match(s.lines[2], w, window_line)) << at << ": [" << s.lines[2] << "]";
    const int n = std::stoi(m[1]);
    const int64_t copied = std::stoll(m[7]);
    ASSERT_FALSE(rec.draft_sources.empty()) << at;
    EXPECT_EQ(n, rec.draft_sources[0].match_length) << at << ": the match length the trace records";
    EXPECT_EQ(copied, rec.draft_sources[0].position) << at << ": the position the trace records";
    EXPECT_EQ(std::stoll(m[3]), rec.position - n) << at << ": the suffix is the last n tokens of the history";
    EXPECT_EQ(std::stoll(m[5]), copied - n) << at << ": the occurrence ends just before the copied token";
    EXPECT_EQ(w[3].str(), m[2].str()) << at << ": the earlier occurrence is the matched suffix";
    EXPECT_FALSE(w[4].str().empty()) << at;
    ++shown;
  }
  EXPECT_GE(shown, 3) << where << "\n" << r.out;
  EXPECT_GE(nothing, 1) << where << ": the case must contain a step with no match\n" << r.out;

  // A tree of copies lists every node's source.
  const CliRun tree = explain({"--method", "ngram-tree,nodes=5", "--k", "3", "--prompt", prompt, "--max-new-tokens", "8", "--ignore-eos"});
  ASSERT_EQ(tree.code, 0) << tree.err;
  int nodes = 0, listed = 0;
  for (const ExplainedStep& s : parse_explain(tree.out)) {
    for (const std::string& line : s.lines) {
      if (line.rfind("    node ", 0) != 0) continue;
      ++nodes;
      listed += std::regex_search(line, std::regex("← copied from position [0-9]+$"));
    }
  }
  EXPECT_GE(nodes, 4) << tree.out;
  EXPECT_EQ(listed, nodes) << tree.out;
}

TEST(ExplainText, HtmlDestinationErrors) {
  const fs::path dir = fs::temp_directory_path() / ("specdec_explain_html_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(dir / "missing" / "page.html").string(), "does not exist"},
      {dir.string(), "is a directory"},
      {(dir / "a-file" / "page.html").string(), "is not a directory"},
  };
  { std::ofstream(dir / "a-file") << "x"; }
  for (const auto& [path, message] : cases) {
    const CliRun r = explain({"--prompt", "a", "--max-new-tokens", "2", "--html", path});
    EXPECT_EQ(r.code, 1) << "case: --html " << path;
    EXPECT_TRUE(has(r.err, "--html") && has(r.err, message)) << "case: --html " << path << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << "case: --html " << path << ": refused before decoding";
  }
  for (const std::vector<std::string>& empty : {std::vector<std::string>{"--html", ""}, std::vector<std::string>{"--html="}}) {
    std::vector<std::string> args = {"--prompt", "a", "--max-new-tokens", "2"};
    args.insert(args.end(), empty.begin(), empty.end());
    const CliRun r = explain(args);
    EXPECT_EQ(r.code, 1) << "case: " << empty[0] << " with an empty file name";
    // boost refuses "--html=" itself, naming the option
    EXPECT_TRUE(has(r.err, empty.size() > 1 ? "--html: empty file name" : "'--html' should follow immediately after the equal sign"))
        << "case: " << empty[0] << ": " << r.err;
  }
  fs::remove(dir / "a-file");
  // A good destination gets one complete page and nothing else in its directory.
  const CliRun ok = explain({"--prompt", "a", "--max-new-tokens", "3", "--html", (dir / "p.html").string()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"p.html"});
  std::ifstream in(dir / "p.html");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(has(page, "</html>\n"));
  for (const std::string bad : {" src=", " href=", "url(", "@import", "<link"})
    EXPECT_FALSE(has(page, bad)) << "the page loads nothing: found " << bad;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specdec
