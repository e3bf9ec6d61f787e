// specdec explain: decode a prompt and show every step for teaching — what was drafted, what the
// target thought of each draft, which were accepted or rejected and why (probabilities and the
// uniforms drawn), and the token that ended the step. Coloured on a terminal, plain when piped.
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "experiments/cli/method_runner.hpp"
#include "reference/core/error.hpp"
#include "reference/sampling/sampler.hpp"

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

class ExplainObserver final : public DecodeObserver {
 public:
  ExplainObserver(std::ostream& out, Style style, const LoadedModel& target, const SamplingParams& sampling)
      : out_(out), style_(style), target_(target), sampling_(sampling) {}

  void on_prefill(const std::vector<int32_t>& prompt, int64_t) override {
    out_ << style_.bold() << "prompt" << style_.reset() << " " << text(prompt) << "  (" << prompt.size() << " tokens)\n";
  }

  void on_sequential_step(const SequentialStep& s) override {
    const auto p = display_probs(s.logits, s.vocab_size);
    out_ << style_.bold() << "step " << s.index << style_.reset() << "  position " << s.position << "  "
         << (s.index == 0 ? "prefill" : "target forward") << " → " << style_.yellow() << tok(s.token) << style_.reset()
         << style_.dim() << "  p=" << fmt(p[s.token]) << style_.reset() << "\n";
  }

  void on_speculative_step(const SpeculativeStep& s) override {
    const DraftTree& tree = *s.tree;
    const VerifyResult& v = *s.verify;
    const int V = static_cast<int>(s.target_logits->cols());
    out_ << style_.bold() << "step " << s.index << style_.reset() << "  position " << s.root_position << "  after "
         << tok(s.pending_token) << ": drafted " << tree.size() << (tree.is_chain() ? " (chain)" : " (tree)") << "\n";
    if (!tree.is_chain()) {
      for (int n = 0; n < tree.size(); ++n)
        out_ << style_.dim() << "    node " << n << " " << tok(tree.tokens[n]) << " parent " << tree.parents[n] << style_.reset() << "\n";
    }
    size_t draw = 0;
    for (size_t i = 0; i < v.decisions.size(); ++i) {
      const int n = v.decision_nodes[i];
      const int parent = tree.parents[n];
      const std::vector<double> p = display_probs(s.target_logits->row(parent + 1).data(), V);
      const int32_t x = tree.tokens[n];
      const bool ok = v.decisions[i] != 0;
      out_ << "  " << (ok ? style_.green() + "✓ accept " : style_.red() + "✗ reject ") << style_.reset() << "d"
           << tree.depth(n) << (tree.is_chain() ? "" : " (node " + std::to_string(n) + ")") << " " << tok(x)
           << "  target p=" << fmt(p[x]);
      const auto& q = *s.draft_probs;
      if (!q.empty() && !q[parent + 1].empty()) out_ << "  draft q=" << fmt(q[parent + 1][x]);
      if (i < v.accept_probs.size() && draw < v.draws.size()) {
        // The probability the test used: min(1, p/q), or p for a deterministic draft (one-hot q),
        // after removing earlier rejected siblings.
        out_ << "  u=" << fmt(v.draws[draw].value) << (ok ? " < " : " ≥ ")
             << (!q.empty() && !q[parent + 1].empty() ? "min(1, p/q)=" : "p=") << fmt(v.accept_probs[i]);
        ++draw;
      } else {
        const int32_t target_choice = v.emitted[std::min(v.accepted_nodes.size(), v.emitted.size() - 1)];
        if (!ok) out_ << "  target chose " << tok(target_choice);
      }
      out_ << "\n";
    }
    const int32_t last = v.emitted.back();
    const std::string why = v.bonus_token >= 0 ? "bonus (every draft on the path accepted)"
                                               : "correction (from the target" + std::string(sampling_.mode == SamplingParams::Mode::sample ? "'s residual distribution)" : ")");
    out_ << "  " << style_.yellow() << "+ " << tok(last) << style_.reset() << "  " << why;
    if (draw < v.draws.size()) out_ << "  u=" << fmt(v.draws[draw].value);
    out_ << "\n  emitted " << text(s.emitted) << "  (" << s.emitted.size() << " token" << (s.emitted.size() == 1 ? "" : "s")
         << ", " << s.drafter_forwards << " drafter forward" << (s.drafter_forwards == 1 ? "" : "s") << ")\n";
  }

  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override {
    out_ << style_.bold() << "output" << style_.reset() << " " << text(output) << "  (" << output.size() << " tokens, stop: " << stop_reason << ")\n";
  }

 private:
  // What the target's probabilities look like at a point: the sampling distribution, or for
  // greedy decoding the plain softmax (the one-hot would say nothing).
  std::vector<double> display_probs(const float* logits, int V) const {
    SamplingParams p = sampling_;
    if (p.mode == SamplingParams::Mode::greedy) {
      p = SamplingParams{};
      p.mode = SamplingParams::Mode::sample;
    }
    return probabilities(logits, V, p);
  }
  // Strings are built by appending: GCC 12 warns falsely (-Wrestrict) on "x" + temporary.
  std::string tok(int32_t t) const {
    std::string s(1, target_.vocabulary ? '\'' : '<');
    s += target_.vocabulary ? printable(target_.vocabulary->token_text(t)) : std::to_string(t);
    s += target_.vocabulary ? '\'' : '>';
    return s;
  }
  std::string text(const std::vector<int32_t>& ids) const {
    std::string s(1, target_.vocabulary ? '"' : '[');
    if (target_.vocabulary) {
      s += printable(target_.vocabulary->decode(ids));
    } else {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i) s += ' ';
        s += std::to_string(ids[i]);
      }
    }
    s += target_.vocabulary ? '"' : ']';
    return s;
  }
  static std::string fmt(double x) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(3) << x;
    return o.str();
  }

  std::ostream& out_;
  Style style_;
  const LoadedModel& target_;
  SamplingParams sampling_;
};

}  // namespace

int run_explain(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  a.max_new_tokens = 16;
  std::string color = "auto";
  po::options_description desc("explain options");
  add_decode_options(desc, a);
  desc.add_options()("color", po::value(&color)->default_value(color), "auto (on a terminal) | always | never");
  if (!parse_options(args, desc, io, "specdec explain --model DIR (--prompt TEXT | --prompt-ids IDS) [--method M] [options]")) return 0;
  if (color != "auto" && color != "always" && color != "never") throw Error("--color must be auto, always or never");
  DecodeJob job = prepare_decode(a);
  const GenerationOptions& options = job.options;
  const SamplingParams& sampling = job.sampling;
  const LoadedModel& m = job.target;
  const std::vector<int32_t>& prompt = job.prompt;
  Style style;
  style.on = color == "always" || (color == "auto" && io.out_is_terminal);
  io.out << style.bold() << "method" << style.reset() << " " << method_json(a).dump() << ", " << sampling.to_string() << "\n";
  ExplainObserver observer(io.out, style, m, sampling);
  const GenerationResult r = run_method(a, m, prompt, sampling, options, &observer);
  if (r.stats.steps > 0) {
    io.out << "AL " << std::fixed << std::setprecision(2) << r.stats.acceptance_length() << " tokens per step (bonus included), "
           << r.stats.accepted_tokens << "/" << r.stats.drafted_tokens << " drafts accepted, " << r.stats.target_forwards
           << " target forwards\n";
  }
  return 0;
}

}  // namespace specdec::cli
