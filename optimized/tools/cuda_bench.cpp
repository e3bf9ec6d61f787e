// Times the CUDA backend on a device at real model shapes, with pseudo-random weights generated
// on the device in the stored precision (CudaTransformer::random): the device-to-device copy
// bandwidth measured in the same run as the yardstick; sequential decode tokens/s and the
// fraction of that bandwidth the bytes of one step (weights + KV cache) reach; and the cost of
// verifying T = 1, 2, 4, ..., 64 tokens in one forward relative to one token. Prints a table;
// numbers, never pass/fail (the gpu tests check the bits). scripts/gpu_check.sh runs it.
//
// Usage: specdec_cuda_bench [--device gpu|emulator] [--shapes P1,P2,...] [--precision BF16|F16|F32]
//                           [--context N] [--tokens N] [--reps N] [--copy-mib N] [--max-verify T]
//   shapes are model presets (reference/model/presets.hpp); default llama-3.1-8b,llama-1b on a
//   GPU. The emulator (slow) is for checking the tool itself on small presets.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "optimized/cuda/cuda_transformer.hpp"
#include "reference/core/error.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/presets.hpp"

namespace specdec {
namespace {

struct Options {
  std::string device = "gpu";
  std::vector<std::string> shapes = {"llama-3.1-8b", "llama-1b"};
  Dtype precision = Dtype::BF16;
  int context = 512;  // tokens in the cache before timing
  int tokens = 32;    // decode steps timed
  int reps = 5;       // repetitions of each verify size (the median is kept)
  int copy_mib = 2048;
  int max_verify = 64;  // verify sizes 1, 2, 4, ... up to this
};

int parse_int(const std::string& flag, const std::string& v, int lo) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > 1000000)
    throw Error(flag + " '" + v + "': expected an integer from " + std::to_string(lo) + " to 1000000");
  return static_cast<int>(x);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw Error(a + ": expected a value after it (see the usage at the top of cuda_bench.cpp)");
    const std::string v = argv[++i];
    if (a == "--device") {
      if (v != "gpu" && v != "emulator") throw Error("--device '" + v + "': expected gpu or emulator");
      o.device = v;
    } else if (a == "--shapes") {
      o.shapes.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) o.shapes.push_back(find_model_preset(s).name);
    } else if (a == "--precision") {
      o.precision = parse_dtype(v, "--precision");
      check_weight_precision(o.precision, "--precision");
    } else if (a == "--context") {
      o.context = parse_int(a, v, 1);
    } else if (a == "--tokens") {
      o.tokens = parse_int(a, v, 1);
    } else if (a == "--reps") {
      o.reps = parse_int(a, v, 1);
    } else if (a == "--copy-mib") {
      o.copy_mib = parse_int(a, v, 1);
    } else if (a == "--max-verify") {
      o.max_verify = parse_int(a, v, 1);
    } else {
      throw Error("unknown option '" + a + "'; expected --device, --shapes, --precision, --context, --tokens, --reps, --copy-mib or --max-verify");
    }
  }
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Bytes per second of device-to-device copies (read + written), the best of `reps`.
double copy_bandwidth(cuda::DeviceRuntime& rt, std::size_t bytes, int reps) {
  cuda::DeviceBuffer<unsigned char> a(rt, bytes), b(rt, bytes);
  rt.copy_on_device(b.get(), a.get(), bytes);  // warm-up
  rt.synchronize();
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    rt.copy_on_device(b.get(), a.get(), bytes);
    rt.synchronize();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds_since(t0));
  }
  return best;
}

std::vector<int32_t> token_ids(int n, int vocab, int offset) {
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = static_cast<int32_t>((offset + 7919LL * i) % vocab);
  return t;
}

void bench_shape(const std::shared_ptr<cuda::DeviceRuntime>& rt, const std::string& preset, const Options& o,
                 double copy_bw) {
  const ModelConfig c = find_model_preset(preset).config;
  const auto t_build = std::chrono::steady_clock::now();
  const auto model = cuda::CudaTransformer::random(rt, c, o.precision, 1);
  std::printf("\n%s %s: %.4g GB of weights per step (built in %.1f s)\n", preset.c_str(), dtype_name(o.precision).c_str(),
              static_cast<double>(model->weight_bytes_per_step()) * 1e-9, seconds_since(t_build));
  constexpr int kMaxVerify = 64;
  auto cache = model->new_cache(o.context + o.tokens + kMaxVerify + 1);
  for (int t0 = 0; t0 < o.context; t0 += kMaxVerify) {  // prefill in chunks
    ForwardRequest r = ForwardRequest::chain(token_ids(std::min(kMaxVerify, o.context - t0), c.vocab_size, t0));
    r.logit_rows = {};
    model->forward(*cache, r);
  }
  // Decode: one token per forward with its logits row back on the host, as sequential decoding does.
  ForwardRequest step = ForwardRequest::chain({5});
  model->forward(*cache, step);  // warm-up
  const auto t_dec = std::chrono::steady_clock::now();
  for (int i = 0; i < o.tokens; ++i) model->forward(*cache, ForwardRequest::chain({static_cast<int32_t>((11 * i) % c.vocab_size)}));
  const double per_token = seconds_since(t_dec) / o.tokens;
  const double ctx = o.context + 1 + o.tokens / 2.0;  // mean slots attended
  const double kv_bytes = 2.0 * c.num_hidden_layers * c.kv_dim() * ctx * sizeof(float);
  const double bytes = static_cast<double>(model->weight_bytes_per_step()) + kv_bytes;
  std::printf("decode %-14s %9.1f tokens/s  %8.3f ms/token  %7.1f GB/s  %5.1f%% of copy bandwidth\n", preset.c_str(),
              1.0 / per_token, per_token * 1e3, bytes / per_token * 1e-9, 100.0 * bytes / per_token / copy_bw);
  // Verify: T chained tokens in one forward with every row's logits, the cache truncated back after each.
  const int base = cache->length();
  double one = 0.0;
  for (int T = 1; T <= std::min(kMaxVerify, o.max_verify); T *= 2) {
    ForwardRequest r = ForwardRequest::chain(token_ids(T, c.vocab_size, 3));
    std::vector<double> ts;
    for (int rep = 0; rep <= o.reps; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      model->forward(*cache, r);
      const double t = seconds_since(t0);
      cache->truncate(base);
      if (rep > 0) ts.push_back(t);  // the first is a warm-up
    }
    std::sort(ts.begin(), ts.end());
    const double med = ts[ts.size() / 2];
    if (T == 1) one = med;
    std::printf("verify %-14s T=%-3d %8.3f ms  %5.2fx one token\n", preset.c_str(), T, med * 1e3, med / one);
  }
}

int run(const Options& o) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = o.device == "emulator" ? std::shared_ptr<cuda::DeviceRuntime>(cuda::emulator_runtime())
                                                                          : std::shared_ptr<cuda::DeviceRuntime>(cuda::cuda_runtime());
  std::printf("device: %s\n", rt->name().c_str());
  const double bw = copy_bandwidth(*rt, static_cast<std::size_t>(o.copy_mib) << 20, std::max(3, o.reps));
  std::printf("copy bandwidth %.1f GB/s (device to device, %d MiB, bytes read + written)\n", bw * 1e-9, o.copy_mib);
  for (const std::string& s : o.shapes) bench_shape(rt, s, o, bw);
  return 0;
}

}  // namespace
}  // namespace specdec

// Exit 0 measured, 2 a bad option, 1 anything else (no device, out of memory, ...).
int main(int argc, char** argv) {
  specdec::Options o;
  try {
    o = specdec::parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specdec_cuda_bench: %s\n", e.what());
    return 2;
  }
  try {
    return specdec::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specdec_cuda_bench: %s\n", e.what());
    return 1;
  }
}
