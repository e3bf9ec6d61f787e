#pragma once
// Weights in device memory as the kernels read them: matrices in their stored precision (F32,
// BF16 or F16), norm weights and biases fp32, one decoder layer's tensors together. Shared by the
// target (cuda_transformer) and the EAGLE-family heads (cuda_eagle_head).
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/exec/weights.cuh"
#include "optimized/cuda/device_runtime.hpp"
#include "reference/core/tensor.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/weights.hpp"

namespace specdec::cuda {

// A matrix in device memory, rows × cols row-major, in `type`.
struct DeviceMatrix {
  kernels::WeightType type = kernels::WeightType::kF32;
  DeviceBuffer<unsigned char> data;
  int rows = 0, cols = 0;
  std::size_t bytes() const { return data.size(); }
};

// `m` rounded to `precision` (F32, BF16 or F16; to nearest even when narrower) on the device.
// Throws specdec::Error naming `name` and the element when a value is beyond the F16 range.
DeviceMatrix upload_matrix(DeviceRuntime& rt, const Matrix& m, Dtype precision, const std::string& name);
// A rows × cols matrix of pseudo-random values uniform in [-scale, scale), generated on the host
// straight into `precision` in chunks and uploaded (no fp32 copy of the whole matrix: an 8B model
// in BF16 takes 16 GB on the device and a chunk on the host). Element i is a hash of (seed, i), so
// the values do not depend on the thread count. For benchmarks at real model sizes.
DeviceMatrix random_matrix(DeviceRuntime& rt, int rows, int cols, Dtype precision, uint64_t seed, float scale);
// `v` as fp32 on the device; an empty vector gives an empty buffer (an absent bias or norm).
DeviceBuffer<float> upload_vector(DeviceRuntime& rt, const Vector& v);
inline const float* or_null(const DeviceBuffer<float>& b) { return b ? b.get() : nullptr; }

// One decoder layer on the device. q/k/v read the attention input, whose width may differ from
// the hidden size (EAGLE-3's first layer reads 2H).
struct DeviceLayer {
  DeviceBuffer<float> input_norm, post_norm, q_norm, k_norm;
  DeviceMatrix q, k, v, o, gate, up, down;
  DeviceBuffer<float> q_bias, k_bias, v_bias, o_bias, gate_bias, up_bias, down_bias;
  // Bytes one single-token pass reads: every matrix and vector.
  std::size_t bytes() const;
};

// `w`'s matrices in `precision`; `prefix` names its tensors in errors (e.g. "model.layers.3.").
DeviceLayer upload_layer(DeviceRuntime& rt, const LayerWeights& w, Dtype precision, const std::string& prefix);

// Device scratch that grows to the largest request seen (doubling, so a growing chain reallocates
// rarely); returns its start.
template <class T>
T* grown(DeviceRuntime& rt, DeviceBuffer<T>& b, std::size_t n) {
  if (b.size() < n) b = DeviceBuffer<T>(rt, n > 2 * b.size() ? n : 2 * b.size());
  return b.get();
}

}  // namespace specdec::cuda
