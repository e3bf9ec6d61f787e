// specdec explain: decode a prompt and show every step for teaching — what was drafted, what the
// target thought of each draft, which were accepted or rejected and why (every number named: the
// target's p, the draft's q, the residuals after rejected siblings, the uniforms drawn, the Gumbel
// scores of coupled sampling), the token that ended the step, and steps cut by --max-new-tokens
// or EOS. Coloured on a terminal, plain when piped; `--html OUT.html` also writes the same run as
// a page to step through (explain_html.cpp).
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/explain_html.hpp"
#include "cli/explain_steps.hpp"
#include "cli/run_header.hpp"
#include "cli/options.hpp"
#include "runtime/method_runner.hpp"
#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"
#include "reference/io/atomic_file.hpp"

namespace specdec::cli {

namespace {

struct Style {
  bool on = false;
  std::string green() const { return on ? "\033[32m" : ""; }
  std::string red() const { return on ? "\033[31m" : ""; }
  std::string yellow() const { return on ? "\033[33m" : ""; }
  std::string dim() const { return on ? "\033[2m" : ""; }
  std::string bold() const { return on ? "\033[1m" : ""; }
  std::string reset() const { return on ? "\033[0m" : ""; }
};

std::string fmt(double x, int digits = 3) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << x;
  return o.str();
}

std::string plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string cut_words(const std::string& cut) { return cut == "eos" ? "the end-of-sequence token" : "--max-new-tokens"; }

class TextView {
 public:
  TextView(std::ostream& out, Style style, const TokenText& tt, const ExplainRun& run)
      : out_(out), s_(style), tt_(tt), run_(run) {}

  void legend() const {
    const auto mode = run_.sampling.mode;
    out_ << s_.dim() << "legend  p = the target's probability";
    if (run_.method == "sequential") {
      out_ << (mode == SamplingParams::Mode::greedy ? " (softmax at T=1); greedy takes its top choice"
               : mode == SamplingParams::Mode::sample ? "; each token is drawn from p with the uniform u"
                                                       : "; coupled sampling takes argmax(logit/T + g), g Gumbel noise keyed by position and token")
           << s_.reset() << "\n";
      return;
    }
    if (mode == SamplingParams::Mode::greedy) out_ << " (softmax at T=1; greedy accepts a draft iff it is the target's top choice)";
    if (mode == SamplingParams::Mode::sample) {
      out_ << ", q = the draft's; a draft x is accepted iff u < min(1, p(x)/q(x)), u uniform in [0,1);\n"
           << "        a deterministic draft has one-hot q, so the test is u < p(x); after a rejected sibling the test uses\n"
           << "        the residual p' = norm(max(0, p - q)) (one-hot q: p without the rejected token) and q' = q without it;\n"
           << "        with no draft accepted the correction is drawn from the residual, after a leaf the bonus from p";
    }
    if (mode == SamplingParams::Mode::coupled) {
      out_ << "; coupled sampling picks argmax(logit/T + g), g Gumbel noise keyed by position and token:\n"
           << "        a draft is accepted iff it is that argmax (its Gumbel score is shown against the argmax's)";
    }
    out_ << s_.reset() << "\n";
  }

  void prompt() const {
    out_ << s_.bold() << "prompt" << s_.reset() << " " << tt_.text(run_.prompt) << "  (" << plural(static_cast<int>(run_.prompt.size()), "token") << ")\n";
  }

  void step(const StepRecord& r) const {
    if (r.sequential) {
      sequential(r);
      return;
    }
    const int N = static_cast<int>(r.tokens.size());
    const std::string nothing = run_.draft_free
                                    ? ": no drafts (no earlier occurrence of the last tokens to copy, or a plain step of the speculation policy)"
                                    : ": a plain step, nothing drafted (speculation policy depth 0, or no drafter left)";
    out_ << s_.bold() << "step " << r.index << s_.reset() << "  position " << r.position << "  after " << tt_.quoted(r.pending)
         << (N == 0 ? nothing : ": drafted " + std::to_string(N) + (r.chain ? " (chain)" : " (tree)"));
    if (!r.complete()) {
      out_ << "  " << s_.red() << "[cut by " << cut_words(r.cut) << ": " << r.emitted.size() << " of its " << r.produced
           << " tokens kept]" << s_.reset();
    }
    out_ << "\n";
    if (!r.chain) {
      for (int n = 0; n < N; ++n) {
        out_ << s_.dim() << "    node " << n << " " << tt_.quoted(r.tokens[n]) << " parent " << r.parents[n] << " depth " << r.depths[n]
             << "  " << (r.status[n] == "unreached" ? "not reached" : r.status[n]);
        if (!r.sources.empty()) out_ << "  " << node_source(r.sources.nodes[static_cast<size_t>(n)]);
        out_ << s_.reset() << "\n";
      }
    }
    if (!r.sources.empty()) sources(r);
    for (const Point& pt : r.points) {
      for (const NodeTest& t : pt.tests) test(r, t);
    }
    final_line(r);
    out_ << "  emitted " << tt_.text(r.emitted) << "  (";
    if (r.complete()) {
      out_ << plural(static_cast<int>(r.emitted.size()), "token");
    } else {
      out_ << r.emitted.size() << " of " << r.produced << " tokens, cut";
    }
    out_ << ", " << plural(r.drafter_forwards, "drafter forward") << ")\n";
  }

  void summary(const GenerationResult& g) const {
    out_ << s_.bold() << "output" << s_.reset() << " " << tt_.text(run_.output) << "  (" << plural(static_cast<int>(run_.output.size()), "token")
         << ", stop: " << run_.stop_reason << ")\n";
    int spec_steps = 0, step_tokens = 0, first_tokens = 0;
    std::vector<int> cut;
    for (const StepRecord& r : run_.steps) {
      if (r.sequential) {
        first_tokens += static_cast<int>(r.emitted.size());
        continue;
      }
      ++spec_steps;
      step_tokens += static_cast<int>(r.emitted.size());
      if (!r.complete()) cut.push_back(r.index);
    }
    if (spec_steps == 0) {
      out_ << plural(static_cast<int>(run_.output.size()), "token") << " in " << plural(g.stats.target_forwards, "target forward")
           << " (sequential decoding: one token per forward)\n";
      return;
    }
    const StepRecord& last = run_.steps.back();
    if (last.full_steps > 0) {
      out_ << "AL " << fmt(static_cast<double>(last.full_step_tokens) / last.full_steps, 2) << " tokens per step (bonus included) over "
           << plural(last.full_steps, "full step");
    } else {
      out_ << "AL not measured: no step ran to its end";
    }
    if (!cut.empty()) {
      out_ << "; step";
      for (size_t i = 0; i < cut.size(); ++i) out_ << (i ? ", " : " ") << cut[i];
      out_ << " cut short and excluded";
    }
    if (last.full_steps > 0) out_ << "; " << run_.accepted_full << "/" << run_.drafted_full << " drafts accepted in full steps";
    out_ << "\n";
    out_ << plural(static_cast<int>(run_.output.size()), "token") << " = " << first_tokens << " from the prefill + " << step_tokens
         << " from " << plural(spec_steps, "step") << "; " << plural(g.stats.target_forwards, "target forward") << " ("
         << fmt(static_cast<double>(run_.output.size()) / g.stats.target_forwards, 2) << " tokens each), "
         << plural(g.stats.drafter_forwards, "drafter forward") << "\n";
  }

 private:
  // A tree node's source, in a few words.
  static std::string node_source(const DraftSource& d) {
    const std::string at = d.position >= 0 ? "position " + std::to_string(d.position) : "an unknown position";
    if (d.origin == DraftSource::Origin::responses) return "← copied from " + at + " of the response of request " + std::to_string(d.request);
    return "← copied from " + at;
  }

  // One token of the history as the window shows it: its text, or its id without a vocabulary.
  std::string piece(int32_t token) const { return tt_.has_vocabulary() ? tt_.label(token) : std::to_string(token); }
  std::string pieces(const std::vector<int32_t>& ids) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i && !tt_.has_vocabulary()) out += ' ';  // not " " + piece(): GCC 12 warns falsely (-Wrestrict)
      out += piece(ids[i]);
    }
    return out;
  }

  // Where a draft-free drafter copied the step's drafts from: the matched suffix, its earlier
  // occurrence (or the earlier response) and the history around it, the occurrence in [ ] and the
  // copied tokens in { }.
  void sources(const StepRecord& r) const {
    const DraftSources& d = r.sources;
    const int64_t L = d.history;
    out_ << "  source ";
    if (d.match_length > 0) {
      out_ << "the last " << plural(d.match_length, "token") << " \"" << pieces(d.suffix) << "\" (" << span(L - d.match_length, L - 1) << ")";
    } else {
      out_ << "no suffix matched";
    }
    if (d.origin == "responses") {
      out_ << (d.match_length > 0 ? " matched " : "; ") << "the response of request " << d.request << ": the drafts copy it from its position "
           << d.copied_from << "\n";
      return;
    }
    if (d.match_start < 0) {
      out_ << "; the drafts copy from " << (d.copied_from >= 0 ? "position " + std::to_string(d.copied_from) : std::string("an unknown position"))
           << "\n";
      return;
    }
    out_ << " occurred before at " << span(d.match_start, d.copied_from - 1) << "; the drafts copy what followed, from position "
         << d.copied_from << "\n";
    std::string text = d.window.front().position > 0 ? "…" : "";
    std::string role;
    for (size_t i = 0; i < d.window.size(); ++i) {
      const SourceToken& w = d.window[i];
      if (w.role != role) {  // close the last bracket, then open this one: "35 [114 105] {35 119} 107"
        if (role == "match") text += "]" + s_.reset();
        if (role == "copied") text += "}" + s_.reset();
      }
      if (i > 0 && !tt_.has_vocabulary()) text += " ";
      if (w.role != role) {
        if (w.role == "match") text += s_.yellow() + "[";
        if (w.role == "copied") text += s_.green() + "{";
      }
      text += piece(w.token);
      role = w.role;
    }
    if (role == "match") text += "]" + s_.reset();
    if (role == "copied") text += "}" + s_.reset();
    if (d.window.back().position + 1 < L) text += "…";
    out_ << "         " << text << s_.dim() << "   ([ ] the earlier occurrence, { } copied as drafts)" << s_.reset() << "\n";
  }

  static std::string span(int64_t from, int64_t to) {
    return from == to ? "position " + std::to_string(from) : "positions " + std::to_string(from) + "-" + std::to_string(to);
  }

  void sequential(const StepRecord& r) const {
    const FinalToken& f = r.final;
    out_ << s_.bold() << "step " << r.index << s_.reset() << "  position " << r.position << "  "
         << (r.index == 0 ? "prefill" : "target forward") << " → " << s_.yellow() << tt_.quoted(f.token) << s_.reset() << s_.dim()
         << "  target p=" << fmt(f.p);
    origin(f, false);
    out_ << s_.reset() << "\n";
  }

  // How the final token (or a sequential token) was chosen.
  void origin(const FinalToken& f, bool residual) const {
    if (f.from == "argmax") {
      out_ << ", the target's top choice";
    } else if (f.from == "gumbel-argmax") {
      out_ << "  Gumbel score logit/T+g=" << fmt(f.score) << ", the argmax";
      if (f.scores.size() > 1) out_ << " (next: " << tt_.quoted(f.scores[1].token) << " " << fmt(f.scores[1].score) << ")";
    } else {
      out_ << "  u=" << fmt(f.u) << " drawn from " << (residual ? "the residual" : "p");
      if (!f.distribution.empty()) {
        out_ << " [";
        size_t shown = 0;
        for (; shown < f.distribution.size() && shown < 4 && (shown == 0 || f.distribution[shown].p >= 0.0005); ++shown)
          out_ << (shown ? ", " : "") << tt_.quoted(f.distribution[shown].token) << " " << fmt(f.distribution[shown].p);
        out_ << (f.distribution.size() > shown ? ", …]" : "]");
      }
    }
  }

  void test(const StepRecord& r, const NodeTest& t) const {
    const bool ok = t.accepted;
    const std::string& status = r.status[t.node];
    out_ << "  " << (ok ? s_.green() + "✓ accept " : s_.red() + "✗ reject ") << s_.reset() << "d" << r.depths[t.node]
         << (r.chain ? "" : " (node " + std::to_string(t.node) + ")") << " " << tt_.quoted(t.token) << "  target p=" << fmt(t.p);
    if (!std::isnan(t.q)) out_ << "  draft q=" << fmt(t.q);
    const auto mode = run_.sampling.mode;
    if (mode == SamplingParams::Mode::sample) {
      const bool det = std::isnan(t.q);
      if (!t.removed.empty()) {
        out_ << "  after rejecting";
        for (size_t i = 0; i < t.removed.size(); ++i) out_ << (i ? ", " : " ") << tt_.quoted(t.removed[i]);
        out_ << ": residual p'=" << fmt(t.p_used);
        if (!det) out_ << " q'=" << fmt(t.q_used);
        out_ << "  u=" << fmt(t.u) << (ok ? " < " : " ≥ ") << (det ? "p'=" : "min(1, p'/q')=") << fmt(t.accept_prob);
      } else {
        out_ << "  u=" << fmt(t.u) << (ok ? " < " : " ≥ ") << (det ? "p=" : "min(1, p/q)=") << fmt(t.accept_prob);
      }
    } else if (mode == SamplingParams::Mode::greedy) {
      if (ok) {
        out_ << ", the target's top choice";
      } else {
        out_ << "  the target's top choice: " << tt_.quoted(t.choice) << " p=" << fmt(t.choice_p);
      }
    } else {
      const std::string score = std::isnan(t.score) ? "-inf (outside top-k/top-p)" : fmt(t.score);
      if (ok) {
        out_ << "  Gumbel score logit/T+g=" << score << ", the argmax";
      } else {
        out_ << "  Gumbel score " << score << " < " << fmt(t.choice_score) << " of the argmax " << tt_.quoted(t.choice)
             << " (p=" << fmt(t.choice_p) << ")";
      }
    }
    if (status == "discarded") out_ << "  " << s_.red() << "[discarded: cut by " << cut_words(r.cut) << "]" << s_.reset();
    out_ << "\n";
  }

  void final_line(const StepRecord& r) const {
    const FinalToken& f = r.final;
    const std::string after = f.point < 0 ? "at the root" : "after d" + std::to_string(r.depths[f.point]) + " " + tt_.quoted(r.tokens[f.point]);
    std::string why;
    if (f.kind == "bonus" && r.tokens.empty()) {
      why = "the target's own token (a plain step), from the target " + after;
    } else if (f.kind == "bonus") {
      why = "bonus (every draft on the path accepted), from the target " + after;
    } else {
      why = "correction (no draft accepted " + after + "), from the target" +
            (f.from == "residual" ? "'s residual norm(max(0, p - q))" : "");
    }
    out_ << "  " << s_.yellow() << "+ " << tt_.quoted(f.token) << s_.reset() << "  " << why << (f.from == "residual" ? "  p'=" : "  target p=")
         << fmt(f.p);
    origin(f, f.from == "residual");
    if (static_cast<int>(r.emitted.size()) < r.produced) out_ << "  " << s_.red() << "[discarded: cut by " << cut_words(r.cut) << "]" << s_.reset();
    out_ << "\n";
  }

  std::ostream& out_;
  Style s_;
  const TokenText& tt_;
  const ExplainRun& run_;
};

}  // namespace

int run_explain(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  a.max_new_tokens = 16;
  std::string color = "auto";
  std::string html;
  po::options_description desc("explain options");
  add_decode_options(desc, a);
  desc.add_options()("color", po::value(&color)->default_value(color), "auto (on a terminal) | always | never")(
      "html", po::value(&html),
      "also write the run as a self-contained page to step through (OUT.html; no network): a readable header and intro, each "
      "step's draft tree fitted to its panel (zoom, pan), the selected node's p and q on a 0..1 axis with its test, the step's "
      "cost in forwards against sequential decoding, the text so far");
  if (!parse_options(args, desc, io, "specdec explain --model DIR (--prompt TEXT | --prompt-ids IDS) [--method M] [--html OUT.html] [options]")) return 0;
  if (color != "auto" && color != "always" && color != "never") throw Error("--color must be auto, always or never");
  check_html_option(args, html);
  DecodeJob job = prepare_decode(a);
  const GenerationOptions& options = job.options;
  const SamplingParams& sampling = job.sampling;
  const LoadedModel& m = job.target;
  Style style;
  style.on = color == "always" || (color == "auto" && io.out_is_terminal);
  const TokenText tt(m.tokenizer.get());

  ExplainRun run;
  run.model = m.path;
  run.method = a.method.name;
  run.draft_free = method_entry(a.method.name).drafter.kind == DrafterNeed::Kind::context;
  run.method_json = method_json(a).dump();
  run.shape = a.method.tree == "chain" ? "chain" : "tree";
  run.max_new_tokens = options.max_new_tokens;
  const ModelConfig& config = m.config;
  ExplainRecorder recorder(run, sampling, options.sequence, [&config](int32_t t) { return config.is_eos(t); });
  TextView view(io.out, style, tt, run);
  recorder.on_prompt = [&] { view.prompt(); };
  recorder.on_step = [&](const StepRecord& r) { view.step(r); };
  io.out << style.bold() << "method" << style.reset() << " " << run.method_json << ", " << sampling.to_string() << "\n";
  view.legend();
  const GenerationResult r = run_method(a, m, job.prompt, sampling, options, &recorder);
  view.summary(r);
  if (!html.empty()) {
    nlohmann::json facts = method_facts(a);
    for (const auto& f : context_facts(a, m.path, sampling, tt.text(run.prompt), static_cast<int>(run.prompt.size()))) facts.push_back(f);
    write_file_atomically(html, explain_page(run, tt, facts));
    io.out << "page   " << html << "\n";
  }
  return 0;
}

}  // namespace specdec::cli
