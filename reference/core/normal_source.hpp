#pragma once
// Standard normal samples that are the same on every platform: std::mt19937_64 (whose output the
// C++ standard fixes) through Box-Muller. std::normal_distribution is implementation-defined.
// (log/sin/cos come from the C library; glibc rounds them correctly in practice, and the
// random-weight tests pin a fingerprint that would catch a platform where they differ.)
#include <cmath>
#include <cstdint>
#include <random>

namespace specdec {

class NormalSource {
 public:
  explicit NormalSource(uint64_t seed) : engine_(seed) {}

  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = uniform_open();
    const double u2 = uniform_open();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 6.283185307179586 * u2;  // 2π
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

  // The raw 64-bit engine output (for choices other than normal samples).
  uint64_t bits() { return engine_(); }

 private:
  // Uniform in (0, 1): the top 53 bits, offset by half a step so 0 never occurs.
  double uniform_open() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }

  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace specdec
