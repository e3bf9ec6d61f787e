// specdec_batch_forward: what CpuTransformer::forward_batch saves. One forward_batch of B
// sequences × T new tokens (each weight read once for all B·T rows) against B separate forwards
// of T tokens (each weight read B times), on a preset's shape with random weights; every
// sequence holds a context of C tokens, so attention has keys to read. Both give the same bits
// (tests/optimized/test_cpu_forward_batch.cpp); this only times them.
//
//   specdec_batch_forward [--preset llama-0.5b] [--dtype F32|BF16|F16] [--batch 8] [--tokens 4]
//                         [--context 16] [--repeat 5] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_transformer.hpp"
#include "reference/core/error.hpp"
#include "reference/model/ops.hpp"
#include "reference/model/presets.hpp"
#include "reference/model/random_weights.hpp"

namespace {

using specdec::Dtype;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
  std::string preset = "llama-0.5b";
  Dtype dtype = Dtype::BF16;
  int batch = 8, tokens = 4, context = 16, repeat = 5, threads = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw specdec::Error(a + " needs a value");
      return argv[++i];
    };
    auto count = [&](int lo, int hi) {
      const int v = std::atoi(value().c_str());
      if (v < lo || v > hi) throw specdec::Error(a + ": expected " + std::to_string(lo) + " to " + std::to_string(hi));
      return v;
    };
    if (a == "--preset") {
      o.preset = value();
    } else if (a == "--dtype") {
      const std::string d = value();
      if (d == "F32") o.dtype = Dtype::F32;
      else if (d == "BF16") o.dtype = Dtype::BF16;
      else if (d == "F16") o.dtype = Dtype::F16;
      else throw specdec::Error("--dtype: '" + d + "' is not F32, BF16 or F16");
    } else if (a == "--batch") {
      o.batch = count(1, 256);
    } else if (a == "--tokens") {
      o.tokens = count(1, 256);
    } else if (a == "--context") {
      o.context = count(0, 4096);
    } else if (a == "--repeat") {
      o.repeat = count(1, 100);
    } else if (a == "--threads") {
      o.threads = count(1, 1024);
    } else if (a == "--help" || a == "-h") {
      std::puts(
          "specdec_batch_forward [--preset llama-0.5b] [--dtype F32|BF16|F16] [--batch 8] [--tokens 4] [--context 16] "
          "[--repeat 5] [--threads N]");
      std::exit(0);
    } else {
      throw specdec::Error("unknown option '" + a + "' (see --help)");
    }
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace specdec;
  const Options o = parse(argc, argv);
  if (o.threads > 0) ops::set_num_threads(o.threads);
  const ModelPreset& preset = find_model_preset(o.preset);
  const ModelConfig& c = preset.config;
  std::printf("preset %s (%s), %s weights, %d threads; %d sequences x %d tokens after a context of %d\n",
              preset.name.c_str(), preset.description.c_str(), dtype_name(o.dtype).c_str(), ops::num_threads(), o.batch,
              o.tokens, o.context);
  const auto t_build = Clock::now();
  const cpu::CpuTransformer model(c, random_llama_weights(c, 1), o.dtype);
  std::printf("random weights packed in %.1f s\n", seconds_since(t_build));

  const int B = o.batch, T = o.tokens, C = o.context;
  std::vector<std::unique_ptr<KVCache>> caches;
  std::vector<ForwardRequest> contexts, steps;
  for (int b = 0; b < B; ++b) {
    caches.push_back(model.new_cache(C + T));
    std::vector<int32_t> ctx, step;
    for (int t = 0; t < C; ++t) ctx.push_back((7 + 31 * b + 13 * t) % c.vocab_size);
    for (int t = 0; t < T; ++t) step.push_back((11 + 17 * b + 5 * t) % c.vocab_size);
    contexts.push_back(ForwardRequest::chain(ctx));
    steps.push_back(ForwardRequest::chain(step));  // a verify step: logits for every row
  }
  std::vector<BatchEntry> prefill, batch;
  for (int b = 0; b < B; ++b) {
    if (C > 0) prefill.push_back({caches[static_cast<std::size_t>(b)].get(), &contexts[static_cast<std::size_t>(b)]});
    batch.push_back({caches[static_cast<std::size_t>(b)].get(), &steps[static_cast<std::size_t>(b)]});
  }
  const auto t_prefill = Clock::now();
  model.forward_batch(prefill);
  std::printf("context prefill (one forward_batch of %d x %d): %.2f s\n", B, C, seconds_since(t_prefill));

  std::vector<double> batched, separate;
  for (int rep = 0; rep <= o.repeat; ++rep) {  // the first round warms up and is not counted
    // The two orders alternate, so that neither always runs on a cache the other warmed.
    for (int first = 0; first < 2; ++first) {
      const bool run_batch = (first == 0) == (rep % 2 == 0);
      for (auto& cache : caches) cache->truncate(C);
      const auto t0 = Clock::now();
      if (run_batch) {
        model.forward_batch(batch);
      } else {
        for (const BatchEntry& e : batch) model.forward(*e.cache, *e.request);
      }
      const double s = seconds_since(t0);
      if (rep > 0) (run_batch ? batched : separate).push_back(s);
    }
  }
  const double mb = median(batched), ms = median(separate);
  std::printf("%-34s %10s %10s\n", "", "min ms", "median ms");
  std::printf("%-34s %10.1f %10.1f\n", ("forward_batch of " + std::to_string(B) + " x " + std::to_string(T)).c_str(),
              1e3 * *std::min_element(batched.begin(), batched.end()), 1e3 * mb);
  std::printf("%-34s %10.1f %10.1f\n", (std::to_string(B) + " forwards of " + std::to_string(T)).c_str(),
              1e3 * *std::min_element(separate.begin(), separate.end()), 1e3 * ms);
  std::printf("batched / separate (medians): %.2f\n", mb / ms);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "specdec_batch_forward: %s\n", e.what());
  return 2;
}
