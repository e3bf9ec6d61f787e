// The `specdec explain --html` and `specdec compare --html` pages in a real headless Chromium, on
// the bundled models: for a chain, a dynamic tree, an n-gram and a P-EAGLE run the explain page
// loads with no script error and no network request, the tree of every step has as many nodes of
// each colour as the text says (accepted, rejected, not reached, discarded, bonus, correction),
// keys and buttons step forward and back and change what is shown, and a screenshot is produced.
// On every page: the root and the accepted path of every step lie inside the tree panel's visible
// box, probability bars sit on a 0..1 axis with ticks (each bar as long as its value), the header
// is words rather than JSON, the intro is there, and the cost strip shows the step's own drafter
// forwards, verified rows and tokens. A 60-node dynamic tree, an 800 px wide window and the
// compare page (one column per method, outputs agreeing with `compare --json`) have their own
// cases. The page's own self-test (`#selftest`) reports what it sees, geometry included, as
// JSON; this test compares it with the text output of the same run. Skips only when no Chromium
// is installed (scripts/setup.sh installs Debian's `chromium`); $SPECDEC_CHROMIUM picks another
// browser binary. Bad --html destinations of compare are refused without a browser.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/cli_runner.hpp"
#include "tests/cli/explain_parse.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ExplainedStep;

std::string bundled(const std::string& name) { return std::string(SPECDEC_SOURCE_DIR) + "/models/" + name; }

// The browser: $SPECDEC_CHROMIUM when set (a name or path; "none" to test the skip), else the first
// of the usual names on PATH.
std::string find_chromium() {
  if (const char* chosen = std::getenv("SPECDEC_CHROMIUM")) {
    const std::string cmd = std::string("command -v '") + chosen + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? chosen : "";
  }
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

struct Shell {
  int code = -1;
  std::string out;
};
Shell shell(const std::string& cmd) {
  Shell r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string unescape_html(std::string s) {
  const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += std::strlen(to)) s.replace(at, std::strlen(from), to);
  }
  return s;
}

class ExplainPage : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty()) GTEST_SKIP() << "no Chromium installed (apt-get install chromium; scripts/setup.sh does)";
    dir_ = fs::temp_directory_path() / ("specdec_explain_page_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string browser(const std::string& what) const {
    // --user-data-dir keeps each run apart and away from any profile; --no-sandbox lets it run as root.
    return "timeout 90 " + chromium_ + " --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions " +
           "--user-data-dir='" + (dir_ / "profile").string() + "' " + what;
  }

  // The page's self-test result, the page opened in a window of `width` x `height`.
  json selftest(const fs::path& page, const std::string& where, int width = 1280, int height = 900) {
    const std::string url = "'file://" + page.string() + "#selftest'";
    const Shell dom = shell(browser("--window-size=" + std::to_string(width) + "," + std::to_string(height) +
                                    " --enable-logging=stderr --v=0 --dump-dom " + url + " 2>'" + (dir_ / "stderr.txt").string() + "'"));
    EXPECT_EQ(dom.code, 0) << where << ": chromium failed\n" << read(dir_ / "stderr.txt");
    const std::string log = read(dir_ / "stderr.txt");
    EXPECT_EQ(log.find("Uncaught"), std::string::npos) << where << ": a script error\n" << log;
    EXPECT_EQ(log.find("Content Security Policy"), std::string::npos) << where << ": the page tried to load something\n" << log;
    const std::string open = "<pre id=\"selftest-result\">";
    const size_t at = dom.out.find(open);
    if (at == std::string::npos) {
      ADD_FAILURE() << where << ": the self-test did not run\n" << dom.out.substr(0, 2000) << log;
      return json();
    }
    const size_t end = dom.out.find("</pre>", at);
    const json st = json::parse(unescape_html(dom.out.substr(at + open.size(), end - at - open.size())));
    EXPECT_EQ(st["errors"], json::array()) << where;
    EXPECT_EQ(st["resources"], 0) << where << ": the page made network requests";
    EXPECT_EQ(st["external"], 0) << where << ": the page references external resources";
    return st;
  }

  // Runs explain with `args` writing the page, then checks the page against the text.
  // `more` (when set) checks further what the page's self-test saw against the text's steps.
  void check(const std::string& where, const std::vector<std::string>& args, int screenshot_step, int parallel_positions,
             const std::function<void(const std::vector<ExplainedStep>&, const json&)>& more = nullptr, int width = 1280) {
    const fs::path page = dir_ / "page.html";
    std::vector<std::string> all = {"explain", "--model", bundled("target")};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--html", page.string()});
    const testing::CliRun r = testing::run(all);
    ASSERT_EQ(r.code, 0) << where << ": " << r.err;
    const std::vector<ExplainedStep> steps = testing::parse_explain(r.out);
    ASSERT_FALSE(steps.empty()) << where << "\n" << r.out;

    const json st = selftest(page, where, width);
    ASSERT_TRUE(st.is_object()) << where;
    for (const auto& [name, ok] : st["checks"].items()) EXPECT_TRUE(ok.get<bool>()) << where << ": in-page check " << name;

    ASSERT_EQ(st["steps"].size(), steps.size()) << where << ": one page step per explained step";
    const int prompt_tokens = prompt_length(r.out);
    int with_rejections = 0, with_unreached = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const ExplainedStep& s = steps[i];
      const json& c = st["steps"][i];
      const std::string at_step = where + ", step " + std::to_string(s.index);
      ASSERT_EQ(c["index"], s.index) << at_step;
      EXPECT_EQ(c["root"], 1) << at_step;
      EXPECT_EQ(c["nodes"], s.drafted + 2) << at_step << ": root, drafts and the final token";
      EXPECT_EQ(c["accepted"], s.accepted) << at_step;
      EXPECT_EQ(c["discarded"], s.discarded) << at_step;
      EXPECT_EQ(c["rejected"], s.rejected) << at_step;
      EXPECT_EQ(c["unreached"], s.unreached()) << at_step;
      EXPECT_EQ(c["bonus"], s.final_kind == "bonus" ? 1 : 0) << at_step;
      EXPECT_EQ(c["correction"], s.final_kind == "correction" ? 1 : 0) << at_step;
      EXPECT_EQ(c["target"], s.final_kind == "target" ? 1 : 0) << at_step;
      EXPECT_EQ(c["cut"], s.final_discarded ? 1 : 0) << at_step;
      EXPECT_EQ(c["parallel_slots"], s.sequential ? 0 : parallel_positions) << at_step << ": P-EAGLE's parallel positions";
      expect_path_in_view(c["tree"], s.accepted + s.discarded, at_step);
      expect_axis(c["bars"], at_step);
      expect_cost(c["cost"], s, prompt_tokens, at_step);
      with_rejections += s.rejected > 0;
      with_unreached += s.unreached() > 0;
    }
    EXPECT_GE(with_rejections, 1) << where << ": the run must contain a rejection";
    expect_readable_header(st["header"].get<std::string>(), where);
    expect_intro(st["intro"]["text"].get<std::string>(), where);
    EXPECT_FALSE(st["intro"]["open"].get<bool>()) << where << ": the intro starts collapsed";
    expect_fits_width(st["layout"], where);
    if (more) more(steps, st);

    // A screenshot of a known step.
    const fs::path png = dir_ / "step.png";
    const Shell shot = shell(browser("--window-size=1280,900 --screenshot='" + png.string() + "' 'file://" + page.string() +
                                     "#step=" + std::to_string(screenshot_step) + "' 2>&1"));
    ASSERT_EQ(shot.code, 0) << where << ": " << shot.out;
    const std::string image = read(png);
    ASSERT_GT(image.size(), 10000u) << where << ": screenshot missing or blank";
    EXPECT_EQ(image.substr(1, 3), "PNG") << where;
    const auto be32 = [&](size_t o) {
      return (static_cast<uint32_t>(static_cast<unsigned char>(image[o])) << 24) | (static_cast<unsigned char>(image[o + 1]) << 16) |
             (static_cast<unsigned char>(image[o + 2]) << 8) | static_cast<unsigned char>(image[o + 3]);
    };
    EXPECT_EQ(be32(16), 1280u) << where << ": screenshot width";
    EXPECT_EQ(be32(20), 900u) << where << ": screenshot height";
  }

  // "prompt "<bos>And God said"  (13 tokens)" in explain's text.
  static int prompt_length(const std::string& out) {
    const size_t at = out.find("\nprompt ");
    const size_t open = out.find("  (", at);
    return at == std::string::npos || open == std::string::npos ? -1 : std::stoi(out.substr(open + 3));
  }

  // A rectangle {l, t, r, b} inside another, to half a pixel.
  static bool inside(const json& in, const json& out) {
    const double e = 0.5;
    return in["l"].get<double>() >= out["l"].get<double>() - e && in["r"].get<double>() <= out["r"].get<double>() + e &&
           in["t"].get<double>() >= out["t"].get<double>() - e && in["b"].get<double>() <= out["b"].get<double>() + e;
  }

  // The root, the `accepted` accepted drafts and the final token are all drawn inside the tree
  // panel's visible box.
  static void expect_path_in_view(const json& tree, int accepted, const std::string& where) {
    ASSERT_TRUE(tree.is_object()) << where << ": no tree geometry";
    const json& panel = tree["panel"];
    EXPECT_GT(panel["r"].get<double>() - panel["l"].get<double>(), 100) << where << ": the tree panel has no width";
    EXPECT_EQ(tree["path"].size(), static_cast<size_t>(accepted + 2)) << where << ": root, accepted drafts, final token";
    for (const json& key : tree["path"]) {
      const std::string k = key;
      ASSERT_TRUE(tree["nodes"].contains(k)) << where << ": node " << k << " not drawn";
      EXPECT_TRUE(inside(tree["nodes"][k], panel)) << where << ": node " << k << " of the accepted path is outside the panel "
                                                  << tree["nodes"][k].dump() << " not in " << panel.dump() << " (scale "
                                                  << tree["scale"] << ", fitted " << tree["fitted"] << ")";
    }
  }

  // Bars on a 0..1 axis: ticks 0, 0.25, 0.5, 0.75, 1 where their values say, each bar as long as
  // its value (a hundredth of the axis).
  static void expect_axis(const json& bars, const std::string& where) {
    ASSERT_TRUE(bars.is_object()) << where << ": no probability axis in the selected node's panel";
    std::vector<std::string> labels;
    for (const json& t : bars["ticks"]) {
      labels.push_back(t[0]);
      EXPECT_NEAR(t[1].get<double>(), std::stod(t[0].get<std::string>()), 0.01) << where << ": tick " << t[0] << " misplaced";
    }
    EXPECT_EQ(labels, (std::vector<std::string>{"0", "0.25", "0.5", "0.75", "1"})) << where;
    ASSERT_FALSE(bars["bars"].empty()) << where << ": no bars";
    for (const json& b : bars["bars"]) {
      EXPECT_NEAR(b[1].get<double>(), b[0].get<double>(), 0.01) << where << ": a bar of value " << b[0] << " is " << b[1] << " of the axis";
    }
  }

  // The cost strip shows the step as run: its drafter forwards, one target forward over the
  // prompt (the prefill), one row (a sequential token) or the pending token and every draft, the
  // tokens kept, and as many target forwards for sequential decoding.
  static void expect_cost(const json& cost, const ExplainedStep& s, int prompt_tokens, const std::string& where) {
    ASSERT_TRUE(cost.is_object()) << where << ": no cost strip";
    const int rows = s.sequential ? (s.index == 0 ? prompt_tokens : 1) : s.drafted + 1;
    EXPECT_EQ(cost["drafter-forwards"], s.drafter_forwards) << where << ": drafter forwards";
    EXPECT_EQ(cost["target-rows"], rows) << where << ": rows of the target forward";
    EXPECT_EQ(cost["target-forwards"], 1) << where;
    EXPECT_EQ(cost["tokens"], s.kept) << where << ": tokens kept";
    EXPECT_EQ(cost["sequential-forwards"], s.kept) << where << ": sequential decoding's forwards for those tokens";
    const std::string text = cost["text"];
    const std::string row_words = std::to_string(rows) + (s.index == 0 && s.sequential ? " prompt row" : " row");
    EXPECT_NE(text.find(row_words), std::string::npos) << where << ": '" << row_words << "' not shown: " << text;
    EXPECT_NE(text.find("Measured on this machine"), std::string::npos) << where << ": times must say where they come from";
    if (s.drafter_forwards > 0) {
      const std::string d = std::to_string(s.drafter_forwards) + " drafter forward";
      EXPECT_NE(text.find(d), std::string::npos) << where << ": '" << d << "' not shown: " << text;
    }
  }

  static void expect_readable_header(const std::string& header, const std::string& where) {
    for (const char* raw : {"{", "}", "\"method\"", "\"tree\"", "mode="}) {
      EXPECT_EQ(header.find(raw), std::string::npos) << where << ": the header shows raw '" << raw << "': " << header;
    }
    for (const char* label : {"method", "model", "sampling", "prompt"}) {
      EXPECT_NE(header.find(label), std::string::npos) << where << ": the header has no " << label << ": " << header;
    }
  }

  static void expect_intro(const std::string& intro, const std::string& where) {
    for (const char* word : {"draft", "verifies all of them in one forward", "accepted", "rejection", "correction", "bonus"}) {
      EXPECT_NE(intro.find(word), std::string::npos) << where << ": the intro does not explain '" << word << "'";
    }
  }

  static void expect_fits_width(const json& layout, const std::string& where) {
    EXPECT_LE(layout["document_width"].get<double>(), layout["window_width"].get<double>())
        << where << ": the page scrolls sideways (" << layout.dump() << ")";
  }

  std::string chromium_;
  fs::path dir_;
};

TEST_F(ExplainPage, DraftChainSampleWithCutStep) {
  check("case: draft chain k=3 sample 'Hi'",
        {"--method", "draft", "--drafter", bundled("draft"), "--k", "3", "--sampling", "sample", "--seed", "0", "--prompt", "Hi"}, 6, 0);
}

TEST_F(ExplainPage, Eagle2DynamicTreeCoupled) {
  check("case: eagle dynamic tree coupled T=0.8",
        {"--method", "eagle", "--drafter", bundled("eagle1"), "--tree", "dynamic", "--depth", "3", "--tree-top-k", "3", "--total-tokens",
         "8", "--sampling", "coupled", "--temperature", "0.8", "--seed", "0", "--prompt", "And God said", "--max-new-tokens", "12"},
        1, 0, [](const std::vector<ExplainedStep>&, const json& st) {
          // The header says what ran, in words.
          const std::string header = st["header"];
          for (const std::string& fact : {std::string("EAGLE-1 (eagle)"), std::string("a dynamic tree (EAGLE-2)"), std::string("3 levels"),
                                          std::string("coupled sampling"), std::string("temperature 0.8, seed 0"), std::string("And God said"),
                                          std::string("at most 12"), bundled("target"), bundled("eagle1")}) {
            EXPECT_NE(header.find(fact), std::string::npos) << "case: eagle dynamic tree coupled: the header lacks '" << fact << "': " << header;
          }
        });
}

// A draft-free method: every step that copied its drafts shows where from — the matched tokens'
// earlier occurrence highlighted (as many tokens as the text's match length), the copied ones
// beside it; a step that found no match says so; no panel for the prefill.
TEST_F(ExplainPage, NgramShowsWhereTheDraftsCameFrom) {
  check("case: ngram n 1..3 k=4 greedy",
        {"--method", "ngram,n_min=1,n_max=3", "--k", "4", "--prompt", "the light, and the light was good; the light", "--max-new-tokens",
         "16", "--ignore-eos"},
        5, 0, [](const std::vector<ExplainedStep>& steps, const json& st) {
          int shown = 0;
          for (size_t i = 0; i < steps.size(); ++i) {
            const ExplainedStep& s = steps[i];
            const json& c = st["steps"][i];
            const std::string at = "step " + std::to_string(s.index);
            const std::string text = c["source_text"];
            if (s.sequential) {
              EXPECT_EQ(text, "") << at;
              continue;
            }
            if (s.drafted == 0) {
              EXPECT_NE(text.find("Nothing drafted"), std::string::npos) << at << ": " << text;
              continue;
            }
            ASSERT_GE(s.lines.size(), 2u) << at;
            const size_t last = s.lines[1].find("the last ");
            ASSERT_NE(last, std::string::npos) << at << ": " << s.lines[1];
            const int n = std::stoi(s.lines[1].substr(last + 9));
            EXPECT_EQ(c["source_match"], n) << at << ": the occurrence highlighted, one token per matched token";
            EXPECT_GE(c["source_copied"].get<int>(), 1) << at;
            EXPECT_LE(c["source_copied"].get<int>(), s.drafted) << at;
            EXPECT_NE(text.find("occurred earlier at"), std::string::npos) << at << ": " << text;
            ++shown;
          }
          EXPECT_GE(shown, 3);
        });
}

TEST_F(ExplainPage, PEagleParallelChainGreedy) {
  check("case: peagle k=4 greedy",
        {"--method", "peagle", "--drafter", bundled("peagle"), "--k", "4", "--prompt", "And God said", "--max-new-tokens", "12"}, 3, 4);
}

// EAGLE-3's default dynamic tree (59 drafts a step): every step opens with its root and accepted
// path inside the tree panel; "whole tree" fits every node of the largest step into the panel and
// "accepted path" brings the path back.
TEST_F(ExplainPage, LargeDynamicTreeOpensWithRootAndAcceptedPathInPanel) {
  const std::string where = "case: eagle3 dynamic tree of 60, greedy";
  check(where, {"--method", "eagle3", "--drafter", bundled("eagle3"), "--tree", "dynamic", "--prompt", "And God said", "--max-new-tokens", "24"}, 1, 0,
        [&](const std::vector<ExplainedStep>& steps, const json& st) {
          const ExplainedStep* big = &steps.front();
          for (const ExplainedStep& s : steps)
            if (s.drafted > big->drafted) big = &s;
          ASSERT_GE(big->drafted, 50) << where << ": the run must draw a large tree";
          const json& all = st["fit_all"];
          EXPECT_EQ(all["nodes"].size(), static_cast<size_t>(big->drafted + 2)) << where;
          for (const auto& [key, r] : all["nodes"].items()) {
            EXPECT_TRUE(inside(r, all["panel"])) << where << ", step " << big->index << ": after 'whole tree' node " << key << " is outside the panel";
          }
          expect_path_in_view(st["fit_path"], big->accepted + big->discarded, where + ", step " + std::to_string(big->index) + " after 'accepted path'");
        });
}

// An 800 px wide window: the page is no wider than the window, the panels stack (the selected
// node's panel under the tree's), and the large tree still opens with its path in view.
TEST_F(ExplainPage, NarrowWindowDoesNotScrollSideways) {
  const std::string where = "case: eagle3 dynamic tree of 60 in an 800 px window";
  check(where, {"--method", "eagle3", "--drafter", bundled("eagle3"), "--tree", "dynamic", "--prompt", "And God said", "--max-new-tokens", "24"}, 1, 0,
        [&](const std::vector<ExplainedStep>&, const json& st) {
          EXPECT_EQ(st["layout"]["window_width"], 800) << where;
          EXPECT_GE(st["panels"]["detail"]["t"].get<double>(), st["panels"]["tree"]["b"].get<double>())
              << where << ": the panels do not stack " << st["panels"].dump();
        },
        800);
}

// compare --html: one column per method, each showing the tokens of compare's own --json output
// (the same in every column: the outputs agree), its AL, its tokens per step adding up to its
// output, and every step's tree with the accepted path in view; no sideways scroll at 800 px.
TEST_F(ExplainPage, ComparePageHasOneColumnPerMethodAndTheOutputsAgree) {
  const std::string where = "case: compare sequential,draft,eagle,eagle3 dynamic,peagle greedy";
  const fs::path page = dir_ / "compare.html";
  const testing::CliRun r = testing::run({"compare", "--model", bundled("target"), "--prompt", "And God said", "--max-new-tokens", "20", "--methods",
                                          "sequential,draft,eagle,eagle3:tree=dynamic,peagle", "--json", "--html", page.string()});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  const json out = json::parse(r.out);
  ASSERT_TRUE(out["all_outputs_agree"].get<bool>()) << where;
  const json st = selftest(page, where, 800);
  ASSERT_TRUE(st.is_object()) << where;
  ASSERT_EQ(st["checks"].size(), 2u) << where;
  for (const auto& [name, ok] : st["checks"].items()) EXPECT_TRUE(ok.get<bool>()) << where << ": in-page check " << name;
  const json& cols = st["columns"];
  ASSERT_EQ(cols.size(), out["runs"].size()) << where << ": one column per method";
  ASSERT_EQ(cols.size(), 5u) << where;
  const std::string first_text = cols[0]["output_text"];
  EXPECT_FALSE(first_text.empty()) << where;
  for (size_t i = 0; i < cols.size(); ++i) {
    const json& c = cols[i];
    const json& run = out["runs"][i];
    const std::string at = where + ", column " + std::to_string(i) + " (" + c["method"].get<std::string>() + ")";
    EXPECT_EQ(c["method"].get<std::string>().rfind(run["method"]["method"].get<std::string>(), 0), 0u) << at << ": columns in --methods order";
    std::string ids;
    for (const json& t : run["output_tokens"]) ids += (ids.empty() ? "" : " ") + std::to_string(t.get<int>());
    EXPECT_EQ(c["output_ids"], ids) << at << ": the column's tokens are compare's";
    EXPECT_EQ(c["output_text"], first_text) << at << ": the outputs must agree";
    EXPECT_NEAR(c["al"].get<double>(), run["acceptance_length"].get<double>(), 1e-9) << at;
    int tokens = 0;
    for (const json& n : c["step_tokens"]) tokens += n.get<int>();
    EXPECT_EQ(tokens, static_cast<int>(run["output_tokens"].size())) << at << ": tokens per step add up to the output";
    EXPECT_EQ(c["trees"].size(), c["step_tokens"].size()) << at;
    for (size_t j = 0; j < c["trees"].size(); ++j) {
      const json& tree = c["trees"][j];
      int accepted = 0;
      for (const json& k : tree["path"]) accepted += k != "root" && k != "final";
      expect_path_in_view(tree, accepted, at + ", step " + std::to_string(j));
      EXPECT_EQ(c["cost"][j]["tokens"], c["step_tokens"][j]) << at << ", step " << j << ": the cost strip's tokens";
    }
  }
  EXPECT_NE(st["agreement"].get<std::string>().find("agree token for token"), std::string::npos) << where << ": " << st["agreement"];
  expect_readable_header(st["header"].get<std::string>(), where);
  expect_intro(st["intro"].get<std::string>(), where);
  expect_fits_width(st["layout"], where);
}

// Under plain sampling the methods draw different random numbers: the page must say the outputs
// differ, and show each method's own tokens, as compare --json has them.
TEST_F(ExplainPage, ComparePageShowsDifferingOutputsUnderSampling) {
  const std::string where = "case: compare sequential,eagle,draft sample T=0.8 seed 3";
  const fs::path page = dir_ / "compare.html";
  const testing::CliRun r = testing::run({"compare", "--model", bundled("target"), "--prompt", "And God said", "--max-new-tokens", "16", "--methods",
                                          "sequential,eagle,draft", "--sampling", "sample", "--temperature", "0.8", "--seed", "3", "--json",
                                          "--html", page.string()});
  ASSERT_EQ(r.code, 0) << where << ": " << r.err;
  const json out = json::parse(r.out);
  ASSERT_FALSE(out["all_outputs_agree"].get<bool>()) << where << ": this case needs outputs that differ";
  const json st = selftest(page, where);
  ASSERT_TRUE(st.is_object()) << where;
  ASSERT_EQ(st["columns"].size(), 3u) << where;
  int differing = 0;
  for (size_t i = 0; i < st["columns"].size(); ++i) {
    const json& c = st["columns"][i];
    std::string ids;
    for (const json& t : out["runs"][i]["output_tokens"]) ids += (ids.empty() ? "" : " ") + std::to_string(t.get<int>());
    EXPECT_EQ(c["output_ids"], ids) << where << ", column " << i << ": the column's tokens are compare's";
    differing += c["output_text"] != st["columns"][0]["output_text"];
  }
  EXPECT_GE(differing, 1) << where << ": the columns' texts must differ as the outputs do";
  const std::string agreement = st["agreement"];
  EXPECT_NE(agreement.find("The outputs differ"), std::string::npos) << where << ": " << agreement;
  EXPECT_EQ(agreement.find("agree token for token"), std::string::npos) << where << ": " << agreement;
}

// compare refuses a --html destination it cannot write, before decoding (no browser needed).
TEST(ComparePageErrors, BadHtmlDestinationsAreRefusedBeforeDecoding) {
  const fs::path dir = fs::temp_directory_path() / ("specdec_compare_html_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  { std::ofstream(dir / "a-file") << "x"; }
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--html", (dir / "missing" / "page.html").string()}, "does not exist"},
      {{"--html", dir.string()}, "is a directory"},
      {{"--html", (dir / "a-file" / "page.html").string()}, "is not a directory"},
      {{"--html", ""}, "empty file name"},
      {{"--html="}, "should follow immediately after the equal sign"},  // boost's words, naming the option
  };
  for (const auto& [option, message] : cases) {
    std::vector<std::string> args = {"compare", "--model", bundled("target"), "--prompt", "a", "--max-new-tokens", "2", "--methods", "sequential,eagle"};
    args.insert(args.end(), option.begin(), option.end());
    const testing::CliRun r = testing::run(args);
    const std::string at = "case: compare " + option[0] + (option.size() > 1 ? " '" + option[1] + "'" : "");
    EXPECT_EQ(r.code, 1) << at;
    EXPECT_NE(r.err.find("--html"), std::string::npos) << at << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << at << ": expected '" << message << "': " << r.err;
    EXPECT_TRUE(r.out.empty()) << at << ": refused before decoding";
  }
  if (::geteuid() != 0) {  // root writes anywhere: the permission case needs an ordinary user
    fs::create_directories(dir / "locked");
    fs::permissions(dir / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    const testing::CliRun r = testing::run({"compare", "--model", bundled("target"), "--prompt", "a", "--methods", "sequential", "--html",
                                            (dir / "locked" / "page.html").string()});
    EXPECT_EQ(r.code, 1) << "case: compare --html in a read-only directory";
    EXPECT_NE(r.err.find("is not writable"), std::string::npos) << "case: compare --html in a read-only directory: " << r.err;
    fs::permissions(dir / "locked", fs::perms::owner_all);
  }
  // A good destination: the page, complete, and nothing else beside it.
  fs::remove(dir / "a-file");
  const testing::CliRun ok = testing::run({"compare", "--model", bundled("target"), "--prompt", "a", "--max-new-tokens", "3", "--methods",
                                           "sequential,eagle", "--html", (dir / "c.html").string()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("page   " + (dir / "c.html").string()), std::string::npos) << ok.out;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"c.html"});
  const std::string html = read(dir / "c.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
  for (const std::string bad : {" src=", " href=", "url(", "@import", "<link"})
    EXPECT_EQ(html.find(bad), std::string::npos) << "the page loads nothing: found " << bad;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specdec
