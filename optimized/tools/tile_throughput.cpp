// specdec_tile_throughput: how many multiply-adds per second one core gets out of cpu::dot_tile,
// by tokens per tile and by where the weights live (L1, L2, L3, DRAM), next to the core's peak
// for the same operation (a fused multiply-add on eight lanes, as the kernels and the reference's
// dot product use). It shows where a verify forward of T tokens stops being
// bandwidth-bound on this machine: docs/benchmarks.md.
//
//   specdec_tile_throughput [--dtype F32|BF16|F16] [--cols N] [--seconds S]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/dot_kernels.hpp"
#include "reference/core/error.hpp"
#include "reference/core/stream_buffer.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

using specdec::Dtype;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

#if defined(__x86_64__) || defined(__i386__)
// Multiply-adds per second of a loop with no memory traffic: 8 independent accumulators, each
// acc += x · w as a separate multiply and add (the kernels' operations).
__attribute__((target("avx2,fma"))) double peak_multiply_adds_per_s(double seconds) {
  __m256 acc[8], w[4];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int i = 0; i < 4; ++i) w[i] = _mm256_set1_ps(0.5f + static_cast<float>(i));
  __m256 x0 = _mm256_set1_ps(1.0f), x1 = _mm256_set1_ps(0.999f);
  long iterations = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    for (int k = 0; k < 100000; ++k) {
      __asm__ volatile("" : "+x"(x0), "+x"(x1));  // keep the products inside the loop
      for (int r = 0; r < 4; ++r) {
        acc[r] = _mm256_fmadd_ps(x0, w[r], acc[r]);
        acc[4 + r] = _mm256_fmadd_ps(x1, w[r], acc[4 + r]);
      }
    }
    iterations += 100000;
    elapsed = seconds_since(t0);
  } while (elapsed < seconds);
  float sink[8];
  __m256 s = acc[0];
  for (int i = 1; i < 8; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(sink, s);
  if (sink[0] == 42.0f) std::puts("");  // uses the sums
  return static_cast<double>(iterations) * 64 / elapsed;
}
#endif

struct Options {
  Dtype dtype = Dtype::F32;
  int cols = 1536;
  double seconds = 0.2;  // per measurement
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw specdec::Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--dtype") {
      const std::string d = value();
      if (d == "F32") o.dtype = Dtype::F32;
      else if (d == "BF16") o.dtype = Dtype::BF16;
      else if (d == "F16") o.dtype = Dtype::F16;
      else throw specdec::Error("--dtype: '" + d + "' is not F32, BF16 or F16");
    } else if (a == "--cols") {
      o.cols = std::atoi(value().c_str());
      if (o.cols < 8 || o.cols > 65536) throw specdec::Error("--cols: expected 8 to 65536");
    } else if (a == "--seconds") {
      o.seconds = std::atof(value().c_str());
      if (!(o.seconds > 0 && o.seconds <= 60)) throw specdec::Error("--seconds: expected a value in (0, 60]");
    } else if (a == "--help" || a == "-h") {
      std::puts("specdec_tile_throughput [--dtype F32|BF16|F16] [--cols N] [--seconds S]");
      std::exit(0);
    } else {
      throw specdec::Error("unknown option '" + a + "' (see --help)");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  const std::size_t element = o.dtype == Dtype::F32 ? 4 : 2;
  const std::size_t row_bytes = static_cast<std::size_t>(o.cols) * element;
  const std::size_t block_bytes = specdec::cpu::kMaxBlockRows * row_bytes;
  struct Place {
    const char* name;
    std::size_t bytes;
  };
  // One block stays in L1; the others are sized well inside L2 and L3 and well beyond both.
  const std::vector<Place> places = {{"L1", block_bytes}, {"L2", 256 << 10}, {"L3", 8 << 20}, {"DRAM", 512u << 20}};
  const std::size_t max_blocks = places.back().bytes / block_bytes;
  specdec::StreamBuffer weights = specdec::allocate_stream_buffer(max_blocks * block_bytes);
  for (std::size_t i = 0; i < max_blocks * block_bytes / 2; ++i)  // small finite values in every dtype
    reinterpret_cast<uint16_t*>(weights.get())[i] = static_cast<uint16_t>(o.dtype == Dtype::F32 ? 0 : 0x3c00);
  const int T_max = specdec::cpu::kMaxTileTokens;
  std::vector<float> x(static_cast<std::size_t>(T_max) * static_cast<std::size_t>(o.cols), 0.5f);
  std::vector<float> out(static_cast<std::size_t>(specdec::cpu::kMaxBlockRows * T_max));

#if defined(__x86_64__) || defined(__i386__)
  const double peak = specdec::cpu::isa_supported(specdec::cpu::Isa::avx2) ? peak_multiply_adds_per_s(o.seconds) : 0;
  std::printf("one core, fused multiply-add, no memory traffic: %.1f G multiply-adds/s\n", peak / 1e9);
#endif
  std::printf("dot_tile, %s path, one thread, %s weights, %d columns, best of 3 (G multiply-adds/s; weight GB/s)\n",
              specdec::cpu::isa_name(specdec::cpu::active_isa()), specdec::dtype_name(o.dtype).c_str(), o.cols);
  std::printf("%8s", "tokens");
  for (const Place& p : places) std::printf("  %16s", p.name);
  std::printf("\n");
  for (int T : {1, 2, 4, 8, 16, 32}) {
    std::printf("%8d", T);
    for (const Place& p : places) {
      const std::size_t blocks = std::max<std::size_t>(1, std::min(max_blocks, p.bytes / block_bytes));
      double best = 0;
      for (int rep = 0; rep < 3; ++rep) {
        long passes = 0;
        const auto t0 = Clock::now();
        double elapsed = 0;
        do {
          for (std::size_t b = 0; b < blocks; ++b) {
            const std::byte* w = weights.get() + b * block_bytes;
            specdec::cpu::dot_tile(o.dtype, w, row_bytes, specdec::cpu::kMaxBlockRows, x.data(),
                                   static_cast<std::size_t>(o.cols), T, o.cols, out.data(),
                                   b + 1 < blocks ? w + block_bytes : nullptr);
          }
          ++passes;
          elapsed = seconds_since(t0);
        } while (elapsed < o.seconds);
        best = std::max(best, static_cast<double>(passes) * static_cast<double>(blocks) / elapsed);
      }
      const double macs = best * specdec::cpu::kMaxBlockRows * o.cols * T;
      std::printf("  %7.1f %6.1f GB", macs / 1e9, best * static_cast<double>(block_bytes) / 1e9);
    }
    std::printf("\n");
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "specdec_tile_throughput: %s\n", e.what());
  return 2;
}
