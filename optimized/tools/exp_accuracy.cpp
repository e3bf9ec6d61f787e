// specdec_exp_accuracy: exact::exp (the exactness contract's e^x) over every float, against
// (float)std::exp((double)x): a histogram of the error in ulps, the share correctly rounded, the
// worst input, and the special inputs. The accuracy stated in reference/core/exact_math.hpp comes
// from here. Not a test: it sweeps all 2^32 patterns (about a minute on two cores).
//
//   specdec_exp_accuracy [--threads N]
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "reference/core/exact_math.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using specdec::exact::bits;
using specdec::exact::from_bits;

// Adjacent floats differ by 1; -0 and +0 are both 0; ±inf are one past ±FLT_MAX.
int64_t ordered(float f) {
  const uint32_t u = bits(f);
  return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : static_cast<int64_t>(u);
}

constexpr int kBuckets = 4;  // 0, 1, 2, >= 3 ulps

struct Tally {
  int64_t count[kBuckets] = {};
  int64_t nan_inputs = 0, nan_wrong = 0;
  int64_t worst = 0;
  uint32_t worst_bits = 0;

  void add(const Tally& o) {
    for (int b = 0; b < kBuckets; ++b) count[b] += o.count[b];
    nan_inputs += o.nan_inputs;
    nan_wrong += o.nan_wrong;
    if (o.worst > worst || (o.worst == worst && o.worst_bits < worst_bits)) {
      worst = o.worst;
      worst_bits = o.worst_bits;
    }
  }
  int64_t total() const {
    int64_t t = 0;
    for (int64_t c : count) t += c;
    return t;
  }
  void count_error(uint32_t u, int64_t d) {
    ++count[d < kBuckets - 1 ? d : kBuckets - 1];
    if (d > worst || (d == worst && d > 0 && u < worst_bits)) {
      worst = d;
      worst_bits = u;
    }
  }
};

// Every pattern, and apart the inputs where e^x is neither 0 nor inf (with a margin).
struct Result {
  Tally in_range, all;
  void add(const Result& o) {
    in_range.add(o.in_range);
    all.add(o.all);
  }
};

Result sweep(uint64_t lo, uint64_t hi) {
  Result t;
  for (uint64_t u = lo; u < hi; ++u) {
    const float x = from_bits(static_cast<uint32_t>(u));
    if (std::isnan(x)) {
      ++t.all.nan_inputs;
      t.all.nan_wrong += !std::isnan(specdec::exact::exp(x));
      continue;
    }
    const float e = specdec::exact::exp(x);
    const auto r = static_cast<float>(std::exp(static_cast<double>(x)));
    const int64_t d = std::llabs(ordered(e) - ordered(r));
    t.all.count_error(static_cast<uint32_t>(u), d);
    if (x >= -104.0f && x <= 89.0f) t.in_range.count_error(static_cast<uint32_t>(u), d);
  }
  return t;
}

Result sweep_all() {
  Result total;
  constexpr int64_t kChunks = 4096;  // 2^20 patterns each
#pragma omp parallel
  {
    Result mine;
#pragma omp for schedule(dynamic)
    for (int64_t c = 0; c < kChunks; ++c) {
      const uint64_t lo = static_cast<uint64_t>(c) << 20;
      mine.add(sweep(lo, lo + (uint64_t{1} << 20)));
    }
#pragma omp critical
    total.add(mine);
  }
  return total;
}

void print(const char* title, const Tally& t) {
  const auto n = static_cast<double>(t.total());
  std::printf("%s: %lld inputs\n", title, static_cast<long long>(t.total()));
  const char* labels[kBuckets] = {"0 ulp (correctly rounded)", "1 ulp", "2 ulp", ">= 3 ulp"};
  for (int b = 0; b < kBuckets; ++b) {
    std::printf("  %-26s %12lld  %8.4f%%\n", labels[b], static_cast<long long>(t.count[b]),
                n > 0 ? 100.0 * static_cast<double>(t.count[b]) / n : 0.0);
  }
  const float w = from_bits(t.worst_bits);
  std::printf("  max error %lld ulp, at x = %.9g (the lowest such bit pattern, 0x%08x): exp %.9g, reference %.9g\n",
              static_cast<long long>(t.worst), static_cast<double>(w), t.worst_bits,
              static_cast<double>(specdec::exact::exp(w)), std::exp(static_cast<double>(w)));
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::puts("specdec_exp_accuracy [--threads N]\n"
                "exact::exp over every float against (float)std::exp((double)x): ulp histogram, worst input.");
      return 0;
    }
    if (a == "--threads" && i + 1 < argc) {
#ifdef _OPENMP
      omp_set_num_threads(std::atoi(argv[++i]));
#else
      ++i;
#endif
      continue;
    }
    std::fprintf(stderr, "specdec_exp_accuracy: error: unknown argument '%s' (see --help)\n", a.c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const float inf = std::numeric_limits<float>::infinity();
  const Result r = sweep_all();
  const Tally& all = r.all;
  print("every float x in [-104, 89]", r.in_range);
  print("every float x (not NaN)", all);
  std::printf("NaN inputs: %lld, of which %lld did not give NaN\n", static_cast<long long>(all.nan_inputs),
              static_cast<long long>(all.nan_wrong));
  std::printf("exp(+inf) = %g, exp(-inf) = %g, exp(-0) = %g\n", static_cast<double>(specdec::exact::exp(inf)),
              static_cast<double>(specdec::exact::exp(-inf)), static_cast<double>(specdec::exact::exp(-0.0f)));
  std::printf("%.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return all.nan_wrong == 0 && all.worst <= 1 ? 0 : 1;
}
