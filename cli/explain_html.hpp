#pragma once
// The page `specdec explain --html OUT.html` writes: one self-contained HTML file (inline style,
// script and data; no network, no external scripts or fonts) to step through a run — a readable
// header and a short intro; each step's draft tree drawn as SVG, fitted to its panel (zoom, pan),
// its nodes coloured accepted / rejected / not reached / discarded / bonus / correction; the
// step's cost in forwards against sequential decoding; for the selected node the top of p and q
// on a 0..1 axis and its acceptance test with the numbers; the text so far marked by step;
// per-step and running counters; for P-EAGLE the one parallel drafter pass; for a draft-free
// method (n-gram lookup, suffix decoding) where the drafts were copied from. The compare page
// (compare_html.hpp) is drawn by the same script. `#selftest` in the page's address runs an
// in-page check (used by the tests in a headless browser); `#step=S&node=N` opens a step and node,
// `#intro=1` opens the intro.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/explain_steps.hpp"
#include "text/tokenizer.hpp"

namespace specdec::cli {

// Tokens and text shown the same way in the text and the page (escaped()).
class TokenText {
 public:
  explicit TokenText(const text::Tokenizer* tokenizer) : tokenizer_(tokenizer) {}
  std::string label(int32_t token) const;                     // x (escaped), or #id without a vocabulary
  std::string quoted(int32_t token) const;                    // 'x', or <id>
  std::string text(const std::vector<int32_t>& ids) const;    // "xyz", or [1 2 3]
  bool has_vocabulary() const { return tokenizer_ != nullptr; }

 private:
  const text::Tokenizer* tokenizer_;
};

// Throws specdec::Error unless `path` can be written: its directory exists, is a directory and is
// writable, and `path` is not a directory itself (checked before decoding).
void check_html_destination(const std::string& path);
// --html as a command parsed it into `path` (empty: not given): refuses an empty file name given
// explicitly in `args` (--html ""), then checks the destination.
void check_html_option(const std::vector<std::string>& args, const std::string& path);

// One run as the pages' script reads it: its steps (trees, tests, final tokens, costs), prompt,
// output and sampling. The compare page holds one per method.
nlohmann::json run_json(const ExplainRun& run, const TokenText& text);

// A complete page: the shared style and rendering, the data as JSON, and the script of `kind`.
enum class PageKind { explain, compare };
std::string html_page(PageKind kind, const std::string& title, const nlohmann::json& data);

// The explain page for `run`; `facts` ([[label, value], ...], run_header.hpp) make its header.
std::string explain_page(const ExplainRun& run, const TokenText& text, const nlohmann::json& facts);

}  // namespace specdec::cli
