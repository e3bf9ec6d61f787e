// specdec batch: decode a prompt file with continuous batching, B sequences at once, and report
// what a serving benchmark reports: throughput, TTFT / TPOT / queueing delay, acceptance. Every
// request decodes exactly as it does alone (reference/decoding/batched.hpp), its index in the
// queue being its sequence id (its own random stream).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <type_traits>

#include "runtime/backend.hpp"
#include "cli/batch_progress.hpp"
#include "cli/monitor_options.hpp"
#include "cli/options.hpp"
#include "experiments/sweep/prompt_set.hpp"
#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/model/presets.hpp"
#include "runtime/batch_job.hpp"
#include "runtime/batch_report.hpp"
#include "runtime/method_runner.hpp"

namespace specdec::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct BatchArgs {
  std::string prompts_file, prompt_set, out;
  int per_category = 0;
  int64_t concurrency = 8;
  std::optional<int64_t> requests;  // none: each prompt once
  std::optional<double> rate;       // none: every request at once
};

// The value of option `name` as a whole number (int64_t) or a number (double); anything else is
// an error naming the option. Read as text so that an option left out can be told apart.
template <typename T>
T parse_number(const std::string& text, const std::string& name) {
  std::size_t used = 0;
  T v{};
  try {
    if constexpr (std::is_same_v<T, int64_t>) v = std::stoll(text, &used);
    else v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw Error(name + ": '" + text + "' is not " + (std::is_same_v<T, int64_t> ? "a whole number" : "a number"));
  }
  return v;
}

// A prompt of the run: its text (or ids) and where it came from.
struct PromptItem {
  std::string id, category;
  std::optional<std::string> text;  // none: `ids` given (--prompt-ids)
  std::vector<int32_t> ids;
};

std::string number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string shortest(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// What can be checked before a model is loaded, so that a typo fails at once.
void check_args(const DecodeArgs& a, const BatchArgs& b) {
  check_concurrency(b.concurrency, "--concurrency");
  if (b.requests && (*b.requests < 1 || *b.requests > kMaxBatchRequests)) {
    throw Error("--requests must be in [1, " + std::to_string(kMaxBatchRequests) + "], got " + std::to_string(*b.requests));
  }
  if (b.rate && !(*b.rate > 0 && std::isfinite(*b.rate))) {
    throw Error("--rate must be a number of requests per second > 0, got " + shortest(*b.rate) +
                " (leave it out to send every request at once)");
  }
  if (b.per_category < 0) throw Error("--per-category must be >= 0 (0 = every prompt of each category)");
  const bool one_prompt = !a.prompt.empty() || !a.prompt_ids.empty();
  if (one_prompt && (!b.prompts_file.empty() || !b.prompt_set.empty())) {
    throw Error("give the prompts one way: --prompt / --prompt-ids (one prompt), --prompts FILE or --prompt-set NAME");
  }
  if (!b.prompts_file.empty() && !b.prompt_set.empty()) throw Error("give either --prompts FILE or --prompt-set NAME, not both");
  if (one_prompt && b.per_category) throw Error("--per-category selects from a prompt file or set, not from --prompt");
  if (!b.prompt_set.empty() && !sweep::is_bundled_prompt_set(b.prompt_set)) {
    std::string sets;
    for (const std::string& s : sweep::bundled_prompt_sets()) sets += (sets.empty() ? "'" : ", '") + s + "'";
    throw Error("--prompt-set: the bundled sets are " + sets + ", got '" + b.prompt_set + "'; give other prompts with --prompts FILE");
  }
  check_method_args(a);
  check_batch_speculation_args(a);
  sampling_params(a);
  generation_options(a);
  if (!b.out.empty()) {
    const fs::path parent = fs::absolute(b.out).parent_path();
    if (!fs::is_directory(parent)) throw Error("--out " + b.out + ": the directory " + parent.string() + " does not exist");
    // Checked now rather than when the run is done: only a new path or a regular file is replaced.
    const fs::file_status st = fs::symlink_status(b.out);
    if (fs::exists(st) && !fs::is_regular_file(st)) {
      throw Error("--out " + b.out + " exists and is not a regular file (a directory, link or device); give a file name");
    }
  }
}

// The prompts as text: a file, the bundled set, or --prompt / --prompt-ids (ids resolved later).
std::vector<PromptItem> load_prompt_items(const DecodeArgs& a, const BatchArgs& b, std::string& source) {
  std::vector<PromptItem> items;
  if (!a.prompt.empty() || !a.prompt_ids.empty()) {
    source = !a.prompt.empty() ? "--prompt" : "--prompt-ids";
    items.push_back({"prompt", "none", std::nullopt, {}});
    if (!a.prompt.empty()) items.back().text = a.prompt;
    return items;
  }
  const std::vector<sweep::Prompt> prompts = !b.prompts_file.empty()
                                                 ? sweep::load_prompt_file(b.prompts_file, b.per_category)
                                                 : sweep::load_bundled_prompts(b.prompt_set.empty() ? "heldout" : b.prompt_set, b.per_category);
  source = !b.prompts_file.empty() ? b.prompts_file : b.prompt_set.empty() ? "heldout" : b.prompt_set;
  for (const sweep::Prompt& p : prompts) items.push_back({p.id, p.category, p.text, {}});
  return items;
}

void print_summary(std::ostream& out, const json& s, const LoadedModel& m, const DecodeArgs& a, const std::string& source,
                   std::size_t prompt_count, const std::string& out_path) {
  const ModelConfig& c = m.config;
  const json& t = s["timing"];
  out << "model      " << m.path << " (" << c.architecture << ", " << parameter_count(c) / 1e6 << "M parameters, "
      << m.stored_dtype << ")\n";
  out << "method     " << a.method.label() << ", " << sampling_params(a).to_string() << ", backend " << backend_summary(a.backend) << "\n";
  out << "requests   " << s["requests"].get<int64_t>() << " from " << prompt_count << " prompt" << (prompt_count == 1 ? "" : "s")
      << " (" << source << "), " << s["concurrency"].get<int>() << " in flight at most, "
      << (s["rate"].is_null() ? std::string("all arriving at once")
                              : "Poisson arrivals at " + shortest(s["rate"].get<double>()) + " req/s (seed " +
                                    std::to_string(a.seed) + ")")
      << "\n";
  std::string stops;
  for (const auto& [reason, n] : s["stop_reasons"].items()) stops += (stops.empty() ? "" : ", ") + std::to_string(n.get<int>()) + " " + reason;
  out << "generated  " << s["generated_tokens"].get<int64_t>() << " tokens (stop: " << stops << ") in "
      << number(t["wall_s"].get<double>(), 3) << " s: " << number(t["throughput_tok_s"].get<double>(), 1) << " tok/s, "
      << number(t["throughput_req_s"].get<double>(), 2) << " req/s\n";
  const auto column = [](const std::string& v) { return std::string(v.size() < 10 ? 10 - v.size() : 1, ' ') + v; };
  out << "latency    " << column("mean") << column("p50") << column("p90") << column("p99") << "   (ms)\n";
  for (const auto& [key, name] : {std::pair{"ttft_s", "TTFT"}, {"tpot_s", "TPOT"}, {"queue_s", "queue"}}) {
    std::string label = std::string("  ") + name;
    label.resize(11, ' ');
    out << label;
    for (const char* q : {"mean", "p50", "p90", "p99"}) out << column(number(t[key][q].get<double>() * 1e3, 2));
    out << "\n";
  }
  if (a.method.name != "sequential" && s["sequence_steps"].get<int64_t>() > 0) {
    out << "accept     AL " << number(s["acceptance_length"].get<double>(), 3) << " (tokens per step, bonus included), "
        << s["accepted_tokens"].get<int64_t>() << "/" << s["drafted_tokens"].get<int64_t>() << " drafts accepted; by position:";
    for (const json& x : s["acceptance_by_position"]) out << ' ' << number(x.get<double>(), 3);
    out << "\n           accepted per step:";
    const json& h = s["accepted_per_step"];
    for (std::size_t n = 0; n < h.size(); ++n) out << "  " << n << ": " << h[n].get<int64_t>();
    out << "\n";
    const json& d = s["request_mean_draft_depth"];
    out << "depth      mean draft depth " << number(s["mean_draft_depth"].get<double>(), 2) << " per step"
        << (a.policy.name == "fixed" ? std::string() : " (policy " + a.policy.label() + ")") << "; per request: mean "
        << number(d["mean"].get<double>(), 2) << ", p50 " << number(d["p50"].get<double>(), 2) << ", p90 "
        << number(d["p90"].get<double>(), 2) << "\n           steps by depth:";
    const json& dh = s["draft_depth_per_step"];
    for (std::size_t n = 0; n < dh.size(); ++n) out << "  " << n << ": " << dh[n].get<int64_t>();
    out << "\n";
    if (s["fallbacks"].get<int64_t>() > 0) out << "fallback   " << s["fallbacks"].get<int64_t>() << " drafters switched off (see each request's \"fallbacks\" in --out)\n";
  }
  out << "steps      " << s["steps"].get<int64_t>() << " batched target forwards, " << number(s["rows_per_step"].get<double>(), 2)
      << " rows and " << number(s["sequences_per_step"].get<double>(), 2) << " sequences each; per step draft "
      << number(t["draft_s_per_step"].get<double>() * 1e3, 3) << " ms, verify " << number(t["verify_s_per_step"].get<double>() * 1e3, 3)
      << " ms\n";
  if (!out_path.empty()) out << "out        " << out_path << " (one JSON line per request, in finishing order)\n";
}

}  // namespace

int run_batch(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  BatchArgs b;
  std::string requests_text, rate_text;
  po::options_description desc("batch options");
  add_decode_options(desc, a);
  MonitorArgs monitor_args;
  add_monitor_options(desc, monitor_args);
  desc.add_options()
      ("prompts", po::value(&b.prompts_file), "prompt file: MT-Bench / Spec-Bench JSONL questions (question_id, category, turns; the first turn is decoded) or a JSON object of category -> texts")
      ("prompt-set", po::value(&b.prompt_set), "a bundled prompt set: heldout (the default without --prompts or --prompt) or context (passages and code the continuation repeats)")
      ("per-category", po::value(&b.per_category)->default_value(b.per_category), "the first N prompts of each category (0 = all)")
      ("concurrency", po::value(&b.concurrency)->default_value(b.concurrency), "sequences decoding at once, B (1..4096)")
      ("requests", po::value(&requests_text), "requests to send: the prompts cycled, or cut, to N (default: each prompt once)")
      ("rate", po::value(&rate_text), "arrivals per second, a Poisson process drawn from --seed (default: every request at once)")
      ("out", po::value(&b.out), "write one JSON line per request to this file as it finishes (tokens, text, TTFT, TPOT, queueing delay)");
  if (!parse_options(args, desc, io,
                     "specdec batch --model DIR [--prompts FILE | --prompt-set heldout|context] [--concurrency B] [--requests N] "
                     "[--rate R] [--out FILE.jsonl] [method and sampling options]")) {
    return 0;
  }
  if (!requests_text.empty()) b.requests = parse_number<int64_t>(requests_text, "--requests");
  if (!rate_text.empty()) b.rate = parse_number<double>(rate_text, "--rate");
  apply_threads(a.threads);
  check_args(a, b);
  Monitor monitor(monitor_args, io, a.json, /*stream=*/false);  // before loading: a bad --events path fails at once
  std::string source;
  std::vector<PromptItem> items = load_prompt_items(a, b, source);

  const LoadedModel m = load_model(a.model, a.backend);
  for (PromptItem& p : items) {
    if (!p.text) {
      p.ids = prompt_tokens(a, m);
    } else if (!m.tokenizer) {
      throw Error(m.path + " has no tokenizer (tokenizer.json, tokenizer.model or vocab.json), so the text prompts of " + source +
                  " cannot be encoded");
    } else {
      p.ids = m.tokenizer->encode(*p.text, true);
      if (p.ids.empty()) throw Error(source + ": prompt " + p.id + " encodes to no tokens");
    }
  }
  const std::size_t n = b.requests ? static_cast<std::size_t>(*b.requests) : items.size();
  std::vector<std::vector<int32_t>> prompts(n);
  for (std::size_t i = 0; i < n; ++i) prompts[i] = items[i % items.size()].ids;
  std::vector<BatchRequest> requests = batch_requests(a, prompts, /*sequence_per_request=*/true);
  if (b.rate) {
    const std::vector<double> arrivals = poisson_arrivals(n, *b.rate, a.seed);
    for (std::size_t i = 0; i < n; ++i) requests[i].arrival_s = arrivals[i];
  }

  // --live takes the progress bar's place (its line shows the requests finished too).
  BatchProgress progress(io.err, io.err_is_terminal && !a.json && !monitor.live(), n);
  monitor.set_requests(n);
  BatchRunOptions o;
  o.concurrency = static_cast<int>(b.concurrency);
  BatchResult result;
  // One observer per request while it decodes: its events carry the request's sequence id.
  if (monitor.active()) o.observer_for = [&](std::size_t i) { return monitor.observer(i, requests[i].sequence); };
  if (b.out.empty()) {
    o.on_finished = [&](std::size_t i, const RequestResult& r) {
      progress.finished(r.generation.tokens.size());
      monitor.release(i);
    };
    result = run_batched(a, m, requests, o);
  } else {
    // Each line is written as its request finishes (memory stays bounded by the sequences in
    // flight); the file appears under its name once the run is complete.
    write_file_atomically(b.out, [&](std::ostream& os) {
      o.on_finished = [&](std::size_t i, const RequestResult& r) {
        json line = request_json(i, requests[i], r, m.tokenizer.get());
        const PromptItem& p = items[i % items.size()];
        line["prompt_id"] = p.id;
        line["category"] = p.category;
        // Generated bytes need not be valid UTF-8: invalid sequences become U+FFFD in the text.
        os << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
        os.flush();
        progress.finished(r.generation.tokens.size());
        monitor.release(i);
      };
      result = run_batched(a, m, requests, o);
    });
  }
  progress.done();
  monitor.close();

  BatchSetup setup;
  setup.args = &a;
  setup.concurrency = o.concurrency;
  setup.rate = b.rate;
  json summary = batch_summary_json(result, setup);
  summary["model_fingerprint"] = m.fingerprint();
  summary["prompts"] = {{"source", source}, {"count", items.size()}};
  if (a.json) {
    io.out << summary.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  print_summary(io.out, summary, m, a, source, items.size(), b.out);
  return 0;
}

}  // namespace specdec::cli
