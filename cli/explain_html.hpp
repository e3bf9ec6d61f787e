#pragma once
// The page `specdec explain --html OUT.html` writes: one self-contained HTML file (inline style,
// script and data; no network, no external scripts or fonts) to step through a run — each step's
// draft tree drawn as SVG with its nodes coloured accepted / rejected / not reached / discarded /
// bonus / correction; for the selected node the top of p and q side by side and its acceptance
// test with the numbers; the text so far marked by step; per-step and running counters; for
// P-EAGLE the one parallel drafter pass; for a draft-free method (n-gram lookup, suffix decoding) where
// the drafts were copied from, the earlier occurrence highlighted. `#selftest` in the page's address runs an in-page check
// (used by the tests in a headless browser); `#step=S&node=N` opens a step and node.
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

// Throws specdec::Error unless `path` can be written: its directory exists and it is not a
// directory itself (checked before decoding).
void check_html_destination(const std::string& path);

// The page for `run`.
std::string explain_page(const ExplainRun& run, const TokenText& text);

}  // namespace specdec::cli
