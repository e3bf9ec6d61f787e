#include "optimized/cuda/device_weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/model/precision.hpp"

namespace specdec::cuda {

using kernels::WeightType;

DeviceMatrix upload_matrix(DeviceRuntime& rt, const Matrix& m, Dtype precision, const std::string& name) {
  DeviceMatrix d;
  d.rows = static_cast<int>(m.rows());
  d.cols = static_cast<int>(m.cols());
  const std::size_t n = static_cast<std::size_t>(m.size());
  if (precision == Dtype::F32) {
    d.type = WeightType::kF32;
    d.data = DeviceBuffer<unsigned char>(rt, reinterpret_cast<const unsigned char*>(m.data()), n * sizeof(float));
    return d;
  }
  std::vector<uint16_t> narrow(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = m.data()[i];
    if (precision == Dtype::F16 && std::isfinite(v) && std::fabs(v) > 65504.0f)
      throw Error(name + ": weight " + std::to_string(v) + " at element " + std::to_string(i) +
                  " is beyond the F16 range (±65504)");
    narrow[i] = precision == Dtype::BF16 ? float_to_bfloat16(v) : float_to_half(v);
  }
  d.type = precision == Dtype::BF16 ? WeightType::kBF16 : WeightType::kF16;
  d.data = DeviceBuffer<unsigned char>(rt, reinterpret_cast<const unsigned char*>(narrow.data()), n * sizeof(uint16_t));
  return d;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class T, class Convert>
void fill_random(T* out, std::size_t first, std::size_t n, uint64_t seed, float scale, Convert convert) {
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < static_cast<long long>(n); ++i) {
    const uint64_t h = splitmix64(seed ^ splitmix64(first + static_cast<std::size_t>(i)));
    const float u = static_cast<float>(h >> 40) * 0x1p-24f;  // [0, 1)
    out[i] = convert((2.0f * u - 1.0f) * scale);
  }
}

}  // namespace

DeviceMatrix random_matrix(DeviceRuntime& rt, int rows, int cols, Dtype precision, uint64_t seed, float scale) {
  check_weight_precision(precision, "random_matrix");
  DeviceMatrix d;
  d.rows = rows, d.cols = cols;
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  const std::size_t element = precision == Dtype::F32 ? sizeof(float) : sizeof(uint16_t);
  d.type = precision == Dtype::F32 ? WeightType::kF32 : precision == Dtype::BF16 ? WeightType::kBF16 : WeightType::kF16;
  d.data = DeviceBuffer<unsigned char>(rt, n * element);
  constexpr std::size_t kChunk = std::size_t{1} << 24;  // elements per upload
  std::vector<float> f32;
  std::vector<uint16_t> narrow;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t m = std::min(kChunk, n - first);
    const void* src = nullptr;
    if (precision == Dtype::F32) {
      f32.resize(m);
      fill_random(f32.data(), first, m, seed, scale, [](float v) { return v; });
      src = f32.data();
    } else if (precision == Dtype::BF16) {
      narrow.resize(m);
      fill_random(narrow.data(), first, m, seed, scale, [](float v) { return float_to_bfloat16(v); });
      src = narrow.data();
    } else {
      narrow.resize(m);
      fill_random(narrow.data(), first, m, seed, scale, [](float v) { return float_to_half(v); });
      src = narrow.data();
    }
    rt.copy_to_device(d.data.get() + first * element, src, m * element);
    rt.synchronize();  // the host chunk is reused next
  }
  return d;
}

DeviceBuffer<float> upload_vector(DeviceRuntime& rt, const Vector& v) {
  return DeviceBuffer<float>(rt, v.data(), static_cast<std::size_t>(v.size()));
}

std::size_t DeviceLayer::bytes() const {
  std::size_t n = 0;
  for (const DeviceMatrix* m : {&q, &k, &v, &o, &gate, &up, &down}) n += m->bytes();
  for (const DeviceBuffer<float>* b : {&input_norm, &post_norm, &q_norm, &k_norm, &q_bias, &k_bias, &v_bias, &o_bias,
                                       &gate_bias, &up_bias, &down_bias})
    n += sizeof(float) * b->size();
  return n;
}

DeviceLayer upload_layer(DeviceRuntime& rt, const LayerWeights& w, Dtype precision, const std::string& p) {
  DeviceLayer d;
  d.input_norm = upload_vector(rt, w.input_layernorm);
  d.post_norm = upload_vector(rt, w.post_attention_layernorm);
  d.q_norm = upload_vector(rt, w.q_norm);
  d.k_norm = upload_vector(rt, w.k_norm);
  d.q = upload_matrix(rt, w.q_proj, precision, p + "self_attn.q_proj.weight");
  d.k = upload_matrix(rt, w.k_proj, precision, p + "self_attn.k_proj.weight");
  d.v = upload_matrix(rt, w.v_proj, precision, p + "self_attn.v_proj.weight");
  d.o = upload_matrix(rt, w.o_proj, precision, p + "self_attn.o_proj.weight");
  d.gate = upload_matrix(rt, w.gate_proj, precision, p + "mlp.gate_proj.weight");
  d.up = upload_matrix(rt, w.up_proj, precision, p + "mlp.up_proj.weight");
  d.down = upload_matrix(rt, w.down_proj, precision, p + "mlp.down_proj.weight");
  d.q_bias = upload_vector(rt, w.q_bias);
  d.k_bias = upload_vector(rt, w.k_bias);
  d.v_bias = upload_vector(rt, w.v_bias);
  d.o_bias = upload_vector(rt, w.o_bias);
  d.gate_bias = upload_vector(rt, w.gate_bias);
  d.up_bias = upload_vector(rt, w.up_bias);
  d.down_bias = upload_vector(rt, w.down_bias);
  return d;
}

}  // namespace specdec::cuda
