#include "experiments/bench/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>
#include <sstream>

#include "experiments/bench/replay_acceptor.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/registry.hpp"
#include "runtime/backend.hpp"
#include "runtime/thread_count.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/model/ops.hpp"

namespace specdec::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Draft and verify wall time of every speculative step.
class StepTimes final : public DecodeObserver {
 public:
  void on_speculative_step(const SpeculativeStep& s) override {
    draft_ns += s.draft_ns;
    verify_ns += s.verify_ns;
  }
  int64_t draft_ns = 0, verify_ns = 0;
};

void check(const BenchOptions& o) {
  if (o.backends.empty()) throw Error("--backends: no backend to measure");
  for (const std::string& b : o.backends) check_backend(b, "--backends");
  if (o.tokens < 2) throw Error("--tokens must be >= 2 (decode speed counts the tokens after the first)");
  if (o.prompt_length < 1) throw Error("--prompt-length must be >= 1");
  if (o.repeat < 1) throw Error("--repeat must be >= 1");
  if (o.max_verify < 1) throw Error("--max-verify must be >= 1");
  if (o.threads < 0) throw Error("--threads must be >= 0");
  check_input_limit("bench", "--threads", o.threads, kMaxThreads);
  for (const MethodSpec& m : o.methods) check_method_spec(m);
  if (o.forced && !o.accepted.empty()) throw Error("--forced-acceptance and --acceptance-trace both set the acceptance; give one");
  if (o.forced) o.forced->validate();
}

std::vector<int32_t> random_prompt(int length, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int low = std::min(3, vocab - 1);  // past the usual special tokens
  std::uniform_int_distribution<int> pick(low, vocab - 1);
  std::vector<int32_t> p(static_cast<size_t>(length));
  for (int32_t& t : p) t = pick(rng);
  return p;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string num(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string acceptance_label(const BenchOptions& o) {
  if (o.forced) return "forced " + o.forced->to_string();
  return o.accepted.empty() ? std::string("greedy") : o.acceptance;
}

bool output_meaningful(const BenchOptions& o) { return !o.forced && o.accepted.empty(); }

BenchReport run_bench(const BenchModels& models, const BenchOptions& options, std::ostream* progress) {
  check(options);
  if (options.threads > 0) ops::set_num_threads(options.threads);
  BenchReport report;
  report.model = models.description;
  report.precision = models.precision;
  if (std::find(options.backends.begin(), options.backends.end(), "cpu") != options.backends.end())
    report.cpu_isa = cpu_kernel_path();
  report.options = options;
  auto say = [&](const std::string& line) {
    if (progress) *progress << line << std::endl;
  };
  // Read before any worker thread exists (a spinning one would count itself as load).
  const MachineLoad load = machine_load();
  if (load.busy > 0) {
    report.warnings.push_back("other processes kept " + std::to_string(load.busy) + " of " + std::to_string(load.cores) +
                              " cores busy when the run began (load average " + fixed(load.load_1min, 2) +
                              "): timings are lower and noisier than on an idle machine, and ratios between rows may mislead");
  }
  // Repeats of one measurement (tokens per second) more than 20% apart: the machine was busy or
  // its clock changed while measuring.
  auto check_spread = [&](const std::string& what, double best, double worst) {
    if (options.repeat < 2 || !(worst > 0) || best / worst <= 1.2) return;
    report.warnings.push_back(what + ": the repeats ranged from " + fixed(worst, 1) + " to " + fixed(best, 1) + " tokens/s (" +
                              fixed(100 * (best / worst - 1), 0) + "% apart): the machine was busy or its clock changed; the best counts");
  };

  // On a shared machine the bandwidth a decode can get drifts by tens of percent within seconds,
  // so the limit is probed again before every decode run and the best probe is the limit; and
  // the verify forwards of every T are interleaved within each repeat, so that drift does not
  // land on one T.
  say("measuring read bandwidth");
  auto probe = [&] {
    const ReadBandwidth bw = measure_read_bandwidth(options.threads, options.bandwidth_bytes, options.bandwidth_passes);
    const int passes = report.bandwidth.passes + bw.passes;
    if (bw.bytes_per_s > report.bandwidth.bytes_per_s) report.bandwidth = bw;
    report.bandwidth.passes = passes;
  };
  probe();

  const ModelConfig& tc = models.target->config();
  const std::vector<int32_t> prompt = random_prompt(options.prompt_length, tc.vocab_size, options.seed);
  const int P = options.prompt_length;
  SamplingParams greedy;
  GenerationOptions go;
  go.max_new_tokens = options.tokens;
  go.stop_at_eos = false;

  std::vector<int> verify_sizes;
  for (int T = 1;; T *= 2) {
    verify_sizes.push_back(std::min(T, options.max_verify));
    if (verify_sizes.back() == options.max_verify) break;
  }

  for (const std::string& b : options.backends) {
    const LanguageModel& target = models.target_on(b);

    say(b + ": sequential decode");
    double best = 0, worst = 0;
    for (int r = 0; r < options.repeat; ++r) {
      if (r > 0) probe();
      const double tps = decode_sequential(target, prompt, greedy, go).decode_tokens_per_second();
      best = std::max(best, tps);
      worst = r == 0 ? tps : std::min(worst, tps);
    }
    check_spread(b + " sequential decode", best, worst);
    DecodeRow d;
    d.backend = b;
    d.precision = models.precision;
    d.weight_bytes_per_token = weight_bytes_per_step(target);
    d.tokens_per_s = best;
    d.achieved_bytes_per_s = d.weight_bytes_per_token * best;
    report.decode.push_back(d);

    say(b + ": verify cost");
    auto cache = target.new_cache(P + options.max_verify);
    ForwardRequest prefill = ForwardRequest::chain(prompt);
    prefill.logit_rows = {P - 1};
    target.forward(*cache, prefill);
    std::mt19937_64 rng(options.seed + 7);
    std::vector<ForwardRequest> verifies;
    for (int t : verify_sizes) verifies.push_back(ForwardRequest::chain(random_prompt(t, tc.vocab_size, rng())));
    std::vector<double> ms(verify_sizes.size(), 0.0);
    for (int r = 0; r < options.repeat; ++r) {
      for (std::size_t k = 0; k < verifies.size(); ++k) {
        const auto t0 = Clock::now();
        target.forward(*cache, verifies[k]);
        const double elapsed = ms_since(t0);
        cache->truncate(P);
        ms[k] = r == 0 ? elapsed : std::min(ms[k], elapsed);
      }
    }
    for (std::size_t k = 0; k < verify_sizes.size(); ++k) report.verify.push_back({b, verify_sizes[k], ms[k], ms[k] / ms[0]});

    const int capacity = checked_capacity(static_cast<std::size_t>(P), options.tokens, 1, 0);
    for (const MethodSpec& spec : options.methods) {
      MethodRow row;
      row.backend = b;
      row.method = spec.name;
      row.shape = spec.shape();
      if (!method_entry(spec.name).make_proposer) {
        row.acceptance = "-";
        row.drafter = "-";
        row.acceptance_length = 1;
        row.tokens_per_s = d.tokens_per_s;
        row.speedup = 1;
        report.methods.push_back(row);
        continue;
      }
      say(b + ": " + spec.label());
      const auto src = models.drafter_sources.find(spec.name);
      row.drafter = src == models.drafter_sources.end() ? "-" : src->second;
      row.acceptance = acceptance_label(options);
      double best_tps = -1, worst_tps = -1;
      for (int r = 0; r < options.repeat; ++r) {
        ProposerInputs in;
        in.target = &tc;
        in.draft_lm = models.draft_lm_on(b);
        in.head = models.head_for(spec.name, b);
        in.medusa = models.medusa_for(spec.name, b);
        in.capacity = capacity;
        const auto proposer = make_method_proposer(spec, in);
        std::unique_ptr<TokenAcceptor> acceptor;
        if (options.forced) acceptor = std::make_unique<ForcedAcceptor>(*options.forced);
        else if (options.accepted.empty()) acceptor = default_acceptor(greedy);
        else acceptor = std::make_unique<ReplayAcceptor>(options.accepted);
        StepTimes times;
        const std::unique_ptr<SpeculationPolicy> policy = make_policy(options.policy);
        SpeculationControl control;
        control.policy = policy.get();
        const GenerationResult res = decode_speculative(target, *proposer, *acceptor, prompt, greedy, go, control, &times);
        const double tps = res.decode_tokens_per_second();
        worst_tps = r == 0 ? tps : std::min(worst_tps, tps);
        if (tps <= best_tps) continue;
        best_tps = tps;
        const GenerationStats& st = res.stats;
        const double steps = std::max(1, st.steps);
        row.steps = st.steps;
        row.acceptance_length = st.acceptance_length();
        row.mean_draft_depth = st.mean_draft_depth();
        row.drafter_ms_per_step = static_cast<double>(times.draft_ns) / 1e6 / steps;
        row.drafter_forwards_per_step = st.drafter_forwards / steps;
        row.verify_ms_per_step = static_cast<double>(times.verify_ns) / 1e6 / steps;
        row.tokens_per_s = tps;
      }
      check_spread(b + " " + spec.label(), best_tps, worst_tps);
      row.drafter_per_target_forward = ms[0] > 0 ? row.drafter_ms_per_step / ms[0] : 0;
      row.speedup = d.tokens_per_s > 0 ? row.tokens_per_s / d.tokens_per_s : 0;
      report.methods.push_back(row);
    }
  }
  for (MethodRow& row : report.methods) {
    if (row.backend == "reference") continue;
    for (const MethodRow& ref : report.methods)
      if (ref.backend == "reference" && ref.method == row.method && ref.shape == row.shape && ref.tokens_per_s > 0)
        row.over_reference = row.tokens_per_s / ref.tokens_per_s;
  }
  for (DecodeRow& d : report.decode) d.bandwidth_fraction = d.achieved_bytes_per_s / report.bandwidth.bytes_per_s;
  return report;
}

void print_bench(const BenchReport& r, std::ostream& out) {
  out << "model      " << r.model << ", " << r.precision << "\n";
  out << "bandwidth  " << fixed(r.bandwidth.bytes_per_s / 1e9, 2) << " GB/s read (" << r.bandwidth.threads << " thread"
      << (r.bandwidth.threads == 1 ? "" : "s") << ", " << fixed(r.bandwidth.buffer_bytes / (1 << 20), 0) << " MiB buffer, best of "
      << r.bandwidth.passes << ")\n";
  if (!r.cpu_isa.empty())
    out << "cpu path   " << r.cpu_isa << " kernels (the widest this CPU runs unless SPECDEC_CPU_ISA=portable|avx2|avx512 forces one)\n";
  out << "runs       " << r.options.prompt_length << "-token prompt, " << r.options.tokens << " new tokens, best of "
      << r.options.repeat << "; acceptance: " << (r.options.accepted.empty() && !r.options.forced ? std::string("greedy rule") : acceptance_label(r.options))
      << "\n";
  if (r.options.policy.name != "fixed") out << "policy     " << r.options.policy.label() << " (speculative runs; see mean_draft_depth in --json)\n";
  if (r.options.forced) out << "note       outputs are not meaningful text: forced acceptance\n";
  for (const std::string& w : r.warnings) out << "warning    " << w << "\n";
  out << "\n";
  char line[512];
  out << "sequential decode\n";
  std::snprintf(line, sizeof line, "  %-10s %-9s %12s %10s %12s %10s\n", "backend", "weights", "MB/token", "tokens/s", "GB/s", "of limit");
  out << line;
  for (const DecodeRow& d : r.decode) {
    std::snprintf(line, sizeof line, "  %-10s %-9s %12s %10s %12s %9s%%\n", d.backend.c_str(), d.precision.c_str(),
                  fixed(d.weight_bytes_per_token / 1e6, 2).c_str(), fixed(d.tokens_per_s, 2).c_str(),
                  fixed(d.achieved_bytes_per_s / 1e9, 2).c_str(), fixed(100 * d.bandwidth_fraction, 1).c_str());
    out << line;
  }
  out << "\nverify forward cost (tokens verified after the prompt; ratio to 1 token)\n";
  std::snprintf(line, sizeof line, "  %-10s %8s %10s %8s\n", "backend", "tokens", "ms", "ratio");
  out << line;
  for (const VerifyRow& v : r.verify) {
    std::snprintf(line, sizeof line, "  %-10s %8d %10s %8s\n", v.backend.c_str(), v.tokens, fixed(v.ms, 3).c_str(), fixed(v.ratio, 2).c_str());
    out << line;
  }
  out << "\nmethods (speedup over sequential on the same backend; x ref: over the reference backend; depth: mean draft depth)\n";
  int shape_width = 5;
  for (const MethodRow& m : r.methods) shape_width = std::max(shape_width, static_cast<int>(m.shape.size()));
  std::snprintf(line, sizeof line, "  %-10s %-10s %-*s %6s %6s %11s %9s %10s %10s %8s %7s\n", "backend", "method", shape_width, "shape", "AL",
                "depth", "draft ms/st", "draft/fwd", "verify ms", "tokens/s", "speedup", "x ref");
  out << line;
  for (const MethodRow& m : r.methods) {
    std::snprintf(line, sizeof line, "  %-10s %-10s %-*s %6s %6s %11s %9s %10s %10s %8s %7s\n", m.backend.c_str(), m.method.c_str(),
                  shape_width, m.shape.c_str(), fixed(m.acceptance_length, 2).c_str(), fixed(m.mean_draft_depth, 2).c_str(),
                  fixed(m.drafter_ms_per_step, 3).c_str(),
                  fixed(m.drafter_per_target_forward, 2).c_str(), fixed(m.verify_ms_per_step, 3).c_str(), fixed(m.tokens_per_s, 2).c_str(),
                  fixed(m.speedup, 2).c_str(), fixed(m.over_reference, 2).c_str());
    out << line;
  }
}

nlohmann::json bench_json(const BenchReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["precision"] = r.precision;
  j["warnings"] = r.warnings;
  if (!r.cpu_isa.empty()) j["cpu_isa"] = r.cpu_isa;
  j["bandwidth"] = {{"bytes_per_s", r.bandwidth.bytes_per_s},
                    {"threads", r.bandwidth.threads},
                    {"buffer_bytes", r.bandwidth.buffer_bytes},
                    {"passes", r.bandwidth.passes}};
  j["options"] = {{"backends", r.options.backends},
                  {"tokens", r.options.tokens},
                  {"prompt_length", r.options.prompt_length},
                  {"repeat", r.options.repeat},
                  {"max_verify", r.options.max_verify},
                  {"threads", r.options.threads},
                  {"acceptance", acceptance_label(r.options)},
                  {"policy", r.options.policy.to_json()},
                  {"seed", r.options.seed}};
  if (r.options.forced) j["forced_acceptance"] = *r.options.forced;
  j["output_meaningful"] = output_meaningful(r.options);
  j["decode"] = nlohmann::json::array();
  for (const DecodeRow& d : r.decode) {
    j["decode"].push_back({{"backend", d.backend},
                           {"precision", d.precision},
                           {"weight_bytes_per_token", d.weight_bytes_per_token},
                           {"tokens_per_s", d.tokens_per_s},
                           {"achieved_bytes_per_s", d.achieved_bytes_per_s},
                           {"bandwidth_bytes_per_s", r.bandwidth.bytes_per_s},
                           {"bandwidth_fraction", d.bandwidth_fraction},
                           {"threads", r.bandwidth.threads}});
  }
  j["verify_cost"] = nlohmann::json::array();
  for (const VerifyRow& v : r.verify) j["verify_cost"].push_back({{"backend", v.backend}, {"tokens", v.tokens}, {"ms", v.ms}, {"ratio_to_1", v.ratio}});
  j["methods"] = nlohmann::json::array();
  for (const MethodRow& m : r.methods) {
    j["methods"].push_back({{"backend", m.backend},
                            {"method", m.method},
                            {"shape", m.shape},
                            {"drafter", m.drafter},
                            {"acceptance", m.acceptance},
                            {"steps", m.steps},
                            {"acceptance_length", m.acceptance_length},
                            {"mean_draft_depth", m.mean_draft_depth},
                            {"drafter_ms_per_step", m.drafter_ms_per_step},
                            {"drafter_forwards_per_step", m.drafter_forwards_per_step},
                            {"drafter_per_target_forward", m.drafter_per_target_forward},
                            {"verify_ms_per_step", m.verify_ms_per_step},
                            {"tokens_per_s", m.tokens_per_s},
                            {"speedup", m.speedup},
                            {"over_reference", json_number(m.over_reference)}});
  }
  return j;
}

std::string decode_csv(const BenchReport& r) {
  std::ostringstream s;
  s << "backend,precision,weight_bytes_per_token,tokens_per_s,achieved_bytes_per_s,bandwidth_bytes_per_s,bandwidth_fraction,threads\n";
  for (const DecodeRow& d : r.decode) {
    s << csv_field(d.backend) << ',' << csv_field(d.precision) << ',' << num(d.weight_bytes_per_token) << ',' << num(d.tokens_per_s) << ','
      << num(d.achieved_bytes_per_s) << ',' << num(r.bandwidth.bytes_per_s) << ',' << num(d.bandwidth_fraction) << ','
      << r.bandwidth.threads << '\n';
  }
  return s.str();
}

std::string verify_csv(const BenchReport& r) {
  std::ostringstream s;
  s << "backend,tokens,ms,ratio_to_1\n";
  for (const VerifyRow& v : r.verify) s << csv_field(v.backend) << ',' << v.tokens << ',' << num(v.ms) << ',' << num(v.ratio) << '\n';
  return s.str();
}

std::string methods_csv(const BenchReport& r) {
  std::ostringstream s;
  s << "backend,method,shape,drafter,acceptance,steps,acceptance_length,drafter_ms_per_step,drafter_forwards_per_step,"
       "drafter_per_target_forward,verify_ms_per_step,tokens_per_s,speedup,over_reference\n";
  for (const MethodRow& m : r.methods) {
    s << csv_field(m.backend) << ',' << csv_field(m.method) << ',' << csv_field(m.shape) << ',' << csv_field(m.drafter) << ','
      << csv_field(m.acceptance) << ',' << m.steps << ',' << num(m.acceptance_length) << ',' << num(m.drafter_ms_per_step) << ','
      << num(m.drafter_forwards_per_step) << ',' << num(m.drafter_per_target_forward) << ',' << num(m.verify_ms_per_step) << ','
      << num(m.tokens_per_s) << ',' << num(m.speedup) << ',' << num(m.over_reference) << '\n';
  }
  return s.str();
}

void write_bench(const BenchReport& r, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw Error(dir.string() + ": cannot create the output directory (" + ec.message() + ")");
  write_file_atomically(dir / "bench.json", bench_json(r).dump(2) + "\n");
  write_file_atomically(dir / "decode.csv", decode_csv(r));
  write_file_atomically(dir / "verify_cost.csv", verify_csv(r));
  write_file_atomically(dir / "methods.csv", methods_csv(r));
}

}  // namespace specdec::bench
