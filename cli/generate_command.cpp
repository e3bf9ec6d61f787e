// specdec generate: decode a prompt and print the output with its statistics.
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/monitor_options.hpp"
#include "cli/options.hpp"
#include "runtime/backend.hpp"
#include "runtime/method_runner.hpp"
#include "runtime/speculation_report.hpp"
#include "reference/acceptance/forced_acceptor.hpp"
#include "reference/acceptance/typical_acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"
#include "reference/model/presets.hpp"

namespace specdec::cli {

namespace {

// --stream: the output text printed as each step's tokens arrive, never cut inside a character.
class StreamingText final : public DecodeObserver {
 public:
  StreamingText(const text::Tokenizer& tokenizer, std::ostream& out) : stream_(tokenizer), out_(out) {}
  void on_sequential_step(const SequentialStep& step) override { emit(step.token); }
  void on_speculative_step(const SpeculativeStep& step) override {
    for (int32_t t : step.emitted) emit(t);
  }
  void finish() { out_ << printable(stream_.finish()) << "\n"; }

 private:
  void emit(int32_t token) { out_ << printable(stream_.push(token)) << std::flush; }
  text::TextStream stream_;
  std::ostream& out_;
};

// A draft-free method's steps by where their drafts came from (--json "draft_sources"): steps that
// found an earlier occurrence to copy and steps that did not, the mean length of the matched
// suffix, and the draft nodes copied from the sequence itself and from earlier responses.
class DraftSourceSummary final : public DecodeObserver {
 public:
  void on_speculative_step(const SpeculativeStep& step) override {
    ++steps_;
    if (!step.sources || step.sources->empty()) {
      ++without_;
      return;
    }
    ++with_;
    match_sum_ += step.sources->front().match_length;
    for (const DraftSource& d : *step.sources) (d.origin == DraftSource::Origin::responses ? responses_ : context_) += 1;
  }
  nlohmann::json to_json() const {
    return {{"steps", steps_},
            {"with_match", with_},
            {"without_match", without_},
            {"mean_match_length", with_ ? nlohmann::json(static_cast<double>(match_sum_) / with_) : nlohmann::json(nullptr)},
            {"drafts_from_context", context_},
            {"drafts_from_responses", responses_}};
  }

 private:
  int64_t steps_ = 0, with_ = 0, without_ = 0, match_sum_ = 0, context_ = 0, responses_ = 0;
};

}  // namespace

int run_generate(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  po::options_description desc("generate options");
  add_decode_options(desc, a);
  bool stream = false;
  desc.add_options()("stream", po::bool_switch(&stream), "print the output text as it is generated (needs a tokenizer; not with --json)");
  std::optional<ForcedAcceptance> forced;
  add_forced_acceptance_option(desc, forced);
  std::optional<TypicalAcceptance> typical;
  add_typical_acceptance_option(desc, typical);
  MonitorArgs monitor_args;
  add_monitor_options(desc, monitor_args);
  if (!parse_options(args, desc, io, "specdec generate --model DIR (--prompt TEXT | --prompt-ids IDS) [options]")) return 0;
  // Typical acceptance: checked before loading anything.
  if (typical && forced)
    throw Error("--typical-acceptance and --forced-acceptance both decide which drafts are accepted; give one");
  if (typical && sampling_params(a).mode == SamplingParams::Mode::greedy)
    throw Error("--typical-acceptance needs --sampling sample or coupled: under greedy decoding Medusa's typical acceptance is exact "
                "matching against the target's argmax, which the default rule already is");
  if (typical && !method_entry(a.method.name).make_proposer)
    throw Error("--typical-acceptance decides which drafts are accepted; it needs a speculative --method, not " + a.method.name);
  Monitor monitor(monitor_args, io, a.json, stream);  // before loading: a bad --events path fails at once
  DecodeJob job = prepare_decode(a);
  const GenerationOptions& options = job.options;
  const SamplingParams& sampling = job.sampling;
  const LoadedModel& m = job.target;
  const std::vector<int32_t>& prompt = job.prompt;

  if (forced && !method_entry(a.method.name).make_proposer)
    throw Error("--forced-acceptance decides which drafts are accepted; it needs a speculative --method, not " + a.method.name);
  if (stream && a.json) throw Error("--stream prints text as it comes; it cannot be combined with --json");
  if (stream && !m.tokenizer) throw Error("--stream needs a tokenizer, and " + m.path + " has none (tokenizer.json, tokenizer.model or vocab.json)");
  const ModelConfig& c = m.config;
  const auto print_header = [&] {
    io.out << "model    " << m.path << " (" << c.architecture << ", " << parameter_count(c) / 1e6 << "M parameters, "
           << m.stored_dtype << ")\n";
    io.out << "method   " << a.method.label() << ", " << sampling.to_string() << ", backend " << backend_summary(a.backend) << "\n";
    if (m.tokenizer) io.out << "prompt   " << printable(m.tokenizer->decode(prompt)) << "  (" << prompt.size() << " tokens)\n";
  };
  std::optional<StreamingText> streaming;
  if (stream) {
    print_header();
    io.out << "output   " << std::flush;
    streaming.emplace(*m.tokenizer, io.out);
  }
  // Draft-free methods: where the drafts came from, summarised for --json.
  std::optional<DraftSourceSummary> sources;
  if (a.json && method_entry(a.method.name).drafter.kind == DrafterNeed::Kind::context) sources.emplace();
  ObserverFanout observers{streaming ? &*streaming : nullptr, monitor.observer(0, options.sequence), sources ? &*sources : nullptr};
  if (forced) io.err << "warning: --forced-acceptance " << forced->to_string() << ": the output is not the model's text (drafts are accepted at a forced rate)" << std::endl;
  // Forced acceptance: the method's own run with the ForcedAcceptor in place of the default rule.
  std::optional<ForcedAcceptor> forced_rule;
  if (forced) forced_rule.emplace(*forced);
  // Typical acceptance (lossy): the method's own run with the TypicalAcceptor in its place.
  if (typical)
    io.err << "warning: --typical-acceptance " << typical->to_string()
           << ": lossy; the output is not guaranteed to be the target's (drafts the target finds typical are accepted)" << std::endl;
  std::optional<TypicalAcceptor> typical_rule;
  if (typical) typical_rule.emplace(*typical);
  const TokenAcceptor* rule = forced_rule ? static_cast<const TokenAcceptor*>(&*forced_rule)
                              : typical_rule ? static_cast<const TokenAcceptor*>(&*typical_rule)
                                             : nullptr;
  const GenerationResult r = run_method(a, m, prompt, sampling, options, observers.get(), nullptr, rule);
  if (streaming) streaming->finish();
  monitor.close();

  const std::string text = m.tokenizer ? m.tokenizer->decode(r.tokens) : "";
  if (a.json) {
    nlohmann::json j = {
        {"model", m.path},
        {"model_fingerprint", m.fingerprint()},
        {"backend", a.backend},
        {"method", method_json(a)},
        {"sampling", sampling},
        {"prompt_tokens", prompt},
        {"output_tokens", r.tokens},
        {"stop_reason", r.stop_reason},
        {"stats",
         {{"generated_tokens", r.tokens.size()},
          {"target_forwards", r.stats.target_forwards},
          {"steps", r.stats.steps},
          {"drafter_forwards", r.stats.drafter_forwards},
          {"drafted_tokens", r.stats.drafted_tokens},
          {"accepted_tokens", r.stats.accepted_tokens},
          {"acceptance_length", r.stats.steps ? r.stats.acceptance_length() : 1.0},
          {"acceptance_by_depth", r.stats.acceptance_by_depth()},
          {"accepted_per_step", r.stats.accepted_per_step},
          {"mean_draft_depth", r.stats.mean_draft_depth()},
          {"draft_depth_per_step", r.stats.draft_depth_per_step},
          {"tokens_per_target_forward", static_cast<double>(r.tokens.size()) / r.stats.target_forwards}}},
        // Wall-clock measurements, apart from the results, so identical runs compare equal
        // once "timing" is dropped.
        {"timing",
         {{"prefill_ms", r.stats.prefill_ns / 1e6},
          {"decode_ms", r.stats.decode_ns / 1e6},
          {"decode_tokens_per_second", r.decode_tokens_per_second()}}},
    };
    if (m.tokenizer) j["output_text"] = text;
    // Which kernels ran is machine-specific like the timings (every path gives the same bits).
    if (a.backend == "cpu") j["timing"]["cpu_isa"] = cpu_kernel_path();
    add_speculation_json(j, a.policy, r);  // policy, mean_draft_depth, draft_depth_per_step, fallbacks
    if (sources) j["draft_sources"] = sources->to_json();  // draft-free methods only
    if (forced) {
      j["forced_acceptance"] = *forced;
      j["output_meaningful"] = false;
    }
    if (typical) {
      j["typical_acceptance"] = *typical;
      j["lossless"] = false;
    }
    // Generated bytes need not be valid UTF-8: invalid sequences become U+FFFD in the JSON text
    // (output_tokens stay exact).
    io.out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (!stream) {
    print_header();
    if (m.tokenizer) io.out << "output   " << printable(text) << "\n";
  }
  if (forced) io.out << "note     outputs are not meaningful text: forced acceptance " << forced->to_string() << "\n";
  if (typical) io.out << "note     lossy: typical acceptance " << typical->to_string() << "; the output is not guaranteed to be the target's\n";
  io.out << "tokens  ";
  for (int32_t t : r.tokens) io.out << ' ' << t;
  io.out << "\n";
  if (r.stats.steps > 0 && a.method.name != "sequential") {
    io.out << "accept   AL " << r.stats.acceptance_length() << " (tokens per step, bonus included), " << r.stats.accepted_tokens
           << "/" << r.stats.drafted_tokens << " drafts accepted, by depth:";
    for (double x : r.stats.acceptance_by_depth()) io.out << ' ' << x;
    io.out << "\n";
  }
  print_speculation(io.out, a.policy, r, a.method.name != "sequential");
  io.out << "stats    " << r.tokens.size() << " tokens, stop: " << r.stop_reason << ", " << r.stats.target_forwards
         << " target forwards (" << static_cast<double>(r.tokens.size()) / r.stats.target_forwards
         << " tokens each), " << r.stats.drafter_forwards << " drafter forwards, prefill " << r.stats.prefill_ns / 1e6 << " ms, decode " << r.decode_tokens_per_second()
         << " tokens/s\n";
  return 0;
}

}  // namespace specdec::cli
