#include "reference/model/rope.hpp"

#include <cmath>
#include <numbers>

namespace specdec {

namespace {

std::vector<double> plain_inv_freq(double theta, int head_dim) {
  std::vector<double> f(head_dim / 2);
  for (int j = 0; j < head_dim / 2; ++j) f[j] = std::pow(theta, -2.0 * j / head_dim);
  return f;
}

}  // namespace

Rope::Rope(const ModelConfig& config)
    : head_dim_(config.head_dim),
      theta_(config.rope_theta),
      scaling_(config.rope_scaling),
      original_context_(config.rope_scaling.original_max_position_embeddings > 0
                            ? config.rope_scaling.original_max_position_embeddings
                            : config.max_position_embeddings) {
  base_inv_freq_ = plain_inv_freq(theta_, head_dim_);
  switch (scaling_.type) {
    case RopeScaling::Type::none:
    case RopeScaling::Type::dynamic:
      break;
    case RopeScaling::Type::linear:
      for (double& f : base_inv_freq_) f /= scaling_.factor;
      break;
    case RopeScaling::Type::llama3: {
      const double orig = original_context_;
      const double low_wavelen = orig / scaling_.low_freq_factor;
      const double high_wavelen = orig / scaling_.high_freq_factor;
      for (double& f : base_inv_freq_) {
        const double wavelen = 2.0 * std::numbers::pi / f;
        if (wavelen > low_wavelen) {
          f = f / scaling_.factor;
        } else if (wavelen >= high_wavelen) {
          const double s = (orig / wavelen - scaling_.low_freq_factor) /
                           (scaling_.high_freq_factor - scaling_.low_freq_factor);
          f = (1.0 - s) * f / scaling_.factor + s * f;
        }
      }
      break;
    }
  }
}

std::vector<double> Rope::inv_freq(int position) const {
  if (scaling_.type != RopeScaling::Type::dynamic) return base_inv_freq_;
  const double seq_len = position + 1.0;
  if (seq_len <= original_context_) return base_inv_freq_;
  const double f = scaling_.factor;
  const double base = theta_ * std::pow(f * seq_len / original_context_ - (f - 1.0),
                                        static_cast<double>(head_dim_) / (head_dim_ - 2));
  return plain_inv_freq(base, head_dim_);
}

Rope::Angles Rope::angles(int position) const {
  const std::vector<double> f = inv_freq(position);
  Angles a;
  a.cos.resize(f.size());
  a.sin.resize(f.size());
  for (size_t j = 0; j < f.size(); ++j) {
    const double angle = position * f[j];
    a.cos[j] = static_cast<float>(std::cos(angle));
    a.sin[j] = static_cast<float>(std::sin(angle));
  }
  return a;
}

void Rope::apply(float* x, int n_heads, const Angles& a) const {
  const int half = head_dim_ / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<std::ptrdiff_t>(h) * head_dim_;
    for (int j = 0; j < half; ++j) {
      const float x1 = v[j], x2 = v[j + half];
      // (x1, x2) -> (x1·cos − x2·sin, x2·cos + x1·sin): rotate_half pairs j with j + hd/2.
      v[j] = x1 * a.cos[j] - x2 * a.sin[j];
      v[j + half] = x2 * a.cos[j] + x1 * a.sin[j];
    }
  }
}

void Rope::apply(float* x, int n_heads, int position) const { apply(x, n_heads, angles(position)); }

}  // namespace specdec
