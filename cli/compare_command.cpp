// specdec compare: the same prompt through several decoding methods side by side — output,
// acceptance length, tokens per target forward, speed — and whether every output equals the
// first method's (it must, token for token, under greedy and coupled sampling). `--html OUT.html`
// also records every step as explain does and writes the methods side by side as one page
// (compare_html.hpp).
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <utility>

#include "runtime/backend.hpp"
#include "runtime/method_runner.hpp"
#include "runtime/speculation_report.hpp"
#include "cli/compare_html.hpp"
#include "cli/explain_steps.hpp"
#include "cli/options.hpp"
#include "cli/run_header.hpp"
#include "reference/core/error.hpp"
#include "reference/core/option_text.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/methods/registry.hpp"
#include "reference/model/presets.hpp"

namespace specdec::cli {

namespace {

struct MethodRun {
  std::string label;  // the method and its shape: "eagle3 k=2", "sequential"
  DecodeArgs args;
  GenerationResult result;
  ExplainRun steps;   // --html: every step as explain records it
};

// One KEY=VALUE of an entry's options onto its method: the shape (k, tree, depth, tree_top_k,
// total_tokens, force_depth) or, for any other key, one of the method's own parameters (gathered
// into `params` as "key=value" for parse_method_text).
void apply_method_option(const std::string& option, MethodSpec& m, std::string& params, const std::string& where) {
  const std::size_t eq = option.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(where + ": '" + option + "' is not KEY=VALUE (e.g. k=2, tree=dynamic, depth=5)");
  }
  std::string key = option.substr(0, eq);
  std::replace(key.begin(), key.end(), '-', '_');  // tree-top-k as the command-line option spells it
  const std::string value = option.substr(eq + 1), at = where + ": " + key;
  if (key == "k") m.k = parse_int(value, at);
  else if (key == "tree") m.tree = value;
  else if (key == "depth") m.depth = parse_int(value, at);
  else if (key == "tree_top_k") m.tree_top_k = parse_int(value, at);
  else if (key == "total_tokens") m.total_tokens = parse_int(value, at);
  else if (key == "force_depth") {
    if (value != "true" && value != "false" && value != "1" && value != "0") throw Error(at + ": '" + value + "' is not true or false");
    m.force_depth = value == "true" || value == "1";
  } else {
    params += "," + key + "=" + value;
  }
}

// "sequential,eagle,peagle=models/peagle,eagle3:k=2,eagle3:tree=dynamic:depth=5" -> one
// DecodeArgs per entry: NAME[=DRAFTER][:KEY=VALUE]..., the options overriding the command's.
std::vector<MethodRun> parse_methods(const std::string& list, const DecodeArgs& base) {
  std::vector<MethodRun> out;
  std::stringstream ss(list);
  std::string item;
  const std::filesystem::path siblings = std::filesystem::path(base.model).lexically_normal().parent_path();
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw Error("--methods '" + list + "': empty entry; expected e.g. sequential,eagle,peagle");
    const std::string where = "--methods " + item;
    MethodRun r{"", base, {}, {}};
    r.args.fallback_method.clear();  // --fallback-* and --drafter-fault go with the speculative entries only
    r.args.fallback_drafter.clear();
    r.args.drafter_fault.clear();
    const std::size_t colon = item.find(':');
    const std::string head = item.substr(0, colon);
    const auto eq = head.find('=');
    // The drafter a method uses when --methods names none: the bundled models' layout, a sibling
    // of the target directory.
    const MethodEntry& method = method_entry(head.substr(0, eq), "--methods");
    r.args.method.name = method.name;
    std::string params;
    if (colon != std::string::npos) {
      std::stringstream options(item.substr(colon + 1));
      std::string option;
      while (std::getline(options, option, ':')) apply_method_option(option, r.args.method, params, where);
    }
    if (!params.empty()) r.args.method.params = parse_method_text(method.name + params, where).params;
    if (eq != std::string::npos) {
      r.args.drafter = head.substr(eq + 1);
    } else if (!method.drafter.bundled_dir.empty()) {
      r.args.drafter = (siblings / method.drafter.bundled_dir).string();
      std::error_code ec;
      if (!std::filesystem::exists(r.args.drafter, ec)) {
        throw Error(where + ": no drafter given, and the bundled layout's '" + r.args.drafter +
                    "' (beside --model) does not exist; name one as " + head + "=DIR");
      }
    }
    if (method.make_proposer) {
      r.args.fallback_method = base.fallback_method;
      r.args.fallback_drafter = base.fallback_drafter;
      r.args.drafter_fault = base.drafter_fault;
    }
    check_method_args(r.args);
    r.label = r.args.method.label();
    out.push_back(std::move(r));
  }
  if (out.empty()) throw Error("--methods is empty; expected e.g. sequential,eagle,peagle");
  return out;
}

}  // namespace

int run_compare(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  a.max_new_tokens = 48;
  std::string methods = "sequential,eagle,peagle";
  std::string json_file;
  std::string html;
  po::options_description desc("compare options");
  add_decode_options(desc, a);
  desc.add_options()("methods", po::value(&methods)->default_value(methods),
                     "methods to run, comma-separated, each METHOD[=DRAFTER_DIR][:KEY=VALUE]... (options of its "
                     "shape or parameters, e.g. eagle3:k=2,eagle3:tree=dynamic:depth=5,ngram:n_min=2); a missing "
                     "drafter directory defaults to the bundled layout beside --model (draft, eagle1, eagle3, peagle)")(
      "json-file", po::value(&json_file), "also write the --json output to this file (written atomically)")(
      "html", po::value(&html),
      "also write the methods side by side as one self-contained page (OUT.html; no network): per method its tokens per "
      "step, each step's draft tree or chain and cost in forwards, its output, the mean acceptance length and whether "
      "the outputs agree; drawn as `specdec explain --html` draws one run");
  if (!parse_options(args, desc, io,
                     "specdec compare --model DIR (--prompt TEXT | --prompt-ids IDS) [--methods sequential,eagle,peagle] "
                     "[--html OUT.html] [options]")) {
    return 0;
  }
  if (a.method.name != "sequential" || !a.drafter.empty()) {
    throw Error("compare runs the methods listed in --methods; drop --method / --drafter");
  }
  check_html_option(args, html);
  std::vector<MethodRun> runs = parse_methods(methods, a);
  DecodeArgs plain = a;  // the target, prompt and sampling (fallbacks and faults belong to the speculative runs)
  plain.fallback_method.clear();
  plain.fallback_drafter.clear();
  plain.drafter_fault.clear();
  DecodeJob job = prepare_decode(plain);
  const ModelConfig& config = job.target.config;
  for (MethodRun& r : runs) {
    if (html.empty()) {
      r.result = run_method(r.args, job.target, job.prompt, job.sampling, job.options);
      continue;
    }
    r.steps.model = job.target.path;
    r.steps.method = r.args.method.name;
    r.steps.draft_free = method_entry(r.args.method.name).drafter.kind == DrafterNeed::Kind::context;
    r.steps.method_json = method_json(r.args).dump();
    r.steps.max_new_tokens = job.options.max_new_tokens;
    ExplainRecorder recorder(r.steps, job.sampling, job.options.sequence, [&config](int32_t t) { return config.is_eos(t); });
    r.result = run_method(r.args, job.target, job.prompt, job.sampling, job.options, &recorder);
  }
  const std::vector<int32_t>& first = runs.front().result.tokens;
  bool all_agree = true;
  for (const MethodRun& r : runs) all_agree = all_agree && r.result.tokens == first;
  const auto text = [&](const std::vector<int32_t>& t) {
    return job.target.tokenizer ? job.target.tokenizer->decode(t) : std::string();
  };
  const auto al = [](const GenerationResult& g) { return g.stats.steps ? g.stats.acceptance_length() : 1.0; };
  const auto per_forward = [](const GenerationResult& g) {
    return g.stats.target_forwards ? static_cast<double>(g.tokens.size()) / g.stats.target_forwards : 0.0;
  };

  const bool exact_mode = job.sampling.mode != SamplingParams::Mode::sample;
  if (!html.empty()) {
    const TokenText tt(job.target.tokenizer.get());
    std::vector<ComparedRun> page;
    for (MethodRun& r : runs) {
      page.push_back({r.label, method_facts(r.args), std::move(r.steps), al(r.result), r.result.stats.target_forwards,
                      r.result.stats.drafter_forwards});
    }
    const nlohmann::json facts = context_facts(a, job.target.path, job.sampling, tt.text(job.prompt), static_cast<int>(job.prompt.size()));
    write_file_atomically(html, compare_page(page, facts, exact_mode, tt));
  }

  if (a.json || !json_file.empty()) {
    nlohmann::json j = {{"model", job.target.path}, {"sampling", job.sampling}, {"prompt_tokens", job.prompt},
                        {"policy", a.policy.to_json()}, {"all_outputs_agree", all_agree}, {"runs", nlohmann::json::array()}};
    for (const MethodRun& r : runs) {
      nlohmann::json run = {{"method", method_json(r.args)},
                            {"output_tokens", r.result.tokens},
                            {"same_as_first", r.result.tokens == first},
                            {"acceptance_length", al(r.result)},
                            {"tokens_per_target_forward", per_forward(r.result)},
                            {"target_forwards", r.result.stats.target_forwards},
                            {"drafter_forwards", r.result.stats.drafter_forwards},
                            // measured, apart from the results (identical runs differ only here)
                            {"timing", {{"decode_tokens_per_second", r.result.decode_tokens_per_second()}}}};
      if (job.target.tokenizer) run["output_text"] = text(r.result.tokens);
      add_speculation_json(run, r.args.policy, r.result);
      j["runs"].push_back(run);
    }
    const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (!json_file.empty()) write_file_atomically(json_file, text);
    if (a.json) {
      io.out << text;
      return 0;
    }
  }

  const ModelConfig& c = job.target.config;
  io.out << "model    " << job.target.path << " (" << parameter_count(c) / 1e6 << "M parameters), "
         << job.sampling.to_string() << ", " << a.max_new_tokens << " new tokens at most\n";
  if (job.target.tokenizer) io.out << "prompt   " << printable(text(job.prompt)) << "\n";
  if (a.backend != "reference") io.out << "backend  " << backend_summary(a.backend) << "\n";
  if (a.policy.name != "fixed") io.out << "policy   " << a.policy.label() << " (speculative methods)\n";
  std::size_t width = 12;  // the method column fits the longest label
  for (const MethodRun& r : runs) width = std::max(width, r.label.size() + 2);
  const int w = static_cast<int>(width);
  for (const MethodRun& r : runs) {
    if (!r.args.drafter.empty()) io.out << "drafter  " << r.label << ": " << r.args.drafter << "\n";
  }
  io.out << "\n" << std::left << std::setw(w) << "method" << std::right << std::setw(7) << "AL" << std::setw(7) << "depth"
         << std::setw(12) << "tok/forward" << std::setw(10) << "target" << std::setw(10) << "drafter" << std::setw(10) << "tok/s"
         << "  output\n";
  io.out << std::setw(w) << "" << std::setw(7) << "" << std::setw(7) << "(mean)" << std::setw(12) << "" << std::setw(10) << "forwards"
         << std::setw(10) << "forwards" << std::setw(10) << "" << "\n";
  for (const MethodRun& r : runs) {
    const GenerationResult& g = r.result;
    io.out << std::left << std::setw(w) << r.label << std::right << std::fixed
           << std::setprecision(2) << std::setw(7) << al(g) << std::setw(7) << g.stats.mean_draft_depth() << std::setw(12) << per_forward(g) << std::setw(10)
           << g.stats.target_forwards << std::setw(10) << g.stats.drafter_forwards << std::setprecision(0)
           << std::setw(10) << g.decode_tokens_per_second() << "  "
           << (&r == &runs.front() ? "(shown below)" : g.tokens == first ? "same as " + runs.front().label
                                                                          : "DIFFERS (shown below)")
           << "\n";
    io.out.unsetf(std::ios::fixed);
  }
  for (const MethodRun& r : runs) {
    for (const DrafterFallback& f : r.result.fallbacks) io.out << "fallback [" << r.label << "] " << fallback_text(f) << "\n";
  }
  io.out << "\n[" << runs.front().label << "] " << printable(text(first)) << "\n";
  for (const MethodRun& r : runs) {
    if (r.result.tokens != first) io.out << "[" << r.label << "] " << printable(text(r.result.tokens)) << "\n";
  }
  if (!html.empty()) io.out << "page   " << html << "\n";
  io.out << "\n"
         << (all_agree ? "all outputs agree token for token"
                       : exact_mode ? "OUTPUTS DISAGREE: speculative decoding must reproduce sequential decoding here"
                                    : "outputs differ: plain sampling is lossless in distribution only "
                                      "(--sampling coupled makes every method reproduce the same tokens)")
         << "\n";
  return all_agree || !exact_mode ? 0 : 1;
}

}  // namespace specdec::cli
