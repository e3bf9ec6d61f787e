// The `specdec explain --html` page in a real headless Chromium, for a chain, a dynamic tree and a
// P-EAGLE run on the bundled models: it loads with no script error and no network request, the
// tree of every step has as many nodes of each colour as the text says (accepted, rejected, not
// reached, discarded, bonus, correction), keys and buttons step forward and back and change what
// is shown, and a screenshot is produced. The page's own self-test (`#selftest`) reports what it
// sees as JSON; this test compares it with the text output of the same run. Skips only when no
// Chromium is installed (scripts/setup.sh installs Debian's `chromium`); $SPECDEC_CHROMIUM picks
// another browser binary.
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

  // Runs explain with `args` writing the page, then checks the page against the text.
  // `more` (when set) checks further what the page's self-test saw against the text's steps.
  void check(const std::string& where, const std::vector<std::string>& args, int screenshot_step, int parallel_positions,
             const std::function<void(const std::vector<ExplainedStep>&, const json&)>& more = nullptr) {
    const fs::path page = dir_ / "page.html";
    std::vector<std::string> all = {"explain", "--model", bundled("target")};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--html", page.string()});
    const testing::CliRun r = testing::run(all);
    ASSERT_EQ(r.code, 0) << where << ": " << r.err;
    const std::vector<ExplainedStep> steps = testing::parse_explain(r.out);
    ASSERT_FALSE(steps.empty()) << where << "\n" << r.out;

    const std::string url = "'file://" + page.string() + "#selftest'";
    const Shell dom = shell(browser("--enable-logging=stderr --v=0 --dump-dom " + url + " 2>'" + (dir_ / "stderr.txt").string() + "'"));
    ASSERT_EQ(dom.code, 0) << where << ": chromium failed\n" << read(dir_ / "stderr.txt");
    const std::string log = read(dir_ / "stderr.txt");
    EXPECT_EQ(log.find("Uncaught"), std::string::npos) << where << ": a script error\n" << log;
    EXPECT_EQ(log.find("Content Security Policy"), std::string::npos) << where << ": the page tried to load something\n" << log;
    const std::string open = "<pre id=\"selftest-result\">";
    const size_t at = dom.out.find(open);
    ASSERT_NE(at, std::string::npos) << where << ": the self-test did not run\n" << dom.out.substr(0, 2000) << log;
    const size_t end = dom.out.find("</pre>", at);
    const json st = json::parse(unescape_html(dom.out.substr(at + open.size(), end - at - open.size())));

    EXPECT_EQ(st["errors"], json::array()) << where;
    EXPECT_EQ(st["resources"], 0) << where << ": the page made network requests";
    EXPECT_EQ(st["external"], 0) << where << ": the page references external resources";
    for (const auto& [name, ok] : st["checks"].items()) EXPECT_TRUE(ok.get<bool>()) << where << ": in-page check " << name;

    ASSERT_EQ(st["steps"].size(), steps.size()) << where << ": one page step per explained step";
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
      with_rejections += s.rejected > 0;
      with_unreached += s.unreached() > 0;
    }
    EXPECT_GE(with_rejections, 1) << where << ": the run must contain a rejection";
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
        1, 0);
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

}  // namespace
}  // namespace specdec
