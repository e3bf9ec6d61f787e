#pragma once
// A weight matrix kept in its stored precision (F32, BF16 or F16): row-major, rows contiguous and
// unpadded ([out, in], one row per output feature, as in the checkpoint). Kernels widen the
// elements to fp32 in registers; widening is exact, so a packed matrix computes bitwise what the
// reference computes with the same values held as floats.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "reference/core/stream_buffer.hpp"
#include "reference/core/tensor.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/precision.hpp"

namespace specdec::cpu {

class PackedMatrix {
 public:
  PackedMatrix() = default;
  // Rounds every element of m ([rows, cols]) to `precision`. `name` is the tensor's name in error
  // messages: a finite value beyond the F16 range is refused rather than turned into infinity.
  PackedMatrix(const Matrix& m, Dtype precision, const std::string& name);
  // Rows [first, first + n) of a [rows, cols] tensor as fp32, row-major, into out.
  using RowReader = std::function<void(int64_t first, int64_t n, float* out)>;
  // The same from a tensor read a chunk of rows at a time (about 1 MiB of fp32 beside the packed
  // matrix, never the whole tensor).
  PackedMatrix(int rows, int cols, Dtype precision, const std::string& name, const RowReader& read);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  Dtype dtype() const { return dtype_; }
  std::size_t element_size() const { return dtype_ == Dtype::F32 ? 4 : 2; }
  std::size_t bytes() const { return static_cast<std::size_t>(rows_) * cols_ * element_size(); }
  // The stored row r: cols() elements of dtype().
  const void* row(int r) const {
    return data_.get() + static_cast<std::size_t>(r) * cols_ * element_size();
  }
  // Row r widened to fp32 into out[0, cols()).
  void widen_row(int r, float* out) const;

 private:
  int rows_ = 0;
  int cols_ = 0;
  Dtype dtype_ = Dtype::F32;
  StreamBuffer data_;  // 64-byte aligned, huge pages when large
};

}  // namespace specdec::cpu
