#include "optimized/cpu/packed_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "optimized/cpu/dot_kernels.hpp"
#include "reference/core/error.hpp"
#include "reference/core/half.hpp"

namespace specdec::cpu {

namespace {

// Rounds n fp32 values to `precision` into dst (elements first.. of tensor `name` in messages).
void round_into(std::byte* dst, const float* src, std::size_t n, std::size_t first, Dtype precision, const std::string& name) {
  switch (precision) {
    case Dtype::F32:
      std::memcpy(dst, src, n * sizeof(float));
      break;
    case Dtype::BF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = float_to_bfloat16(src[i]);
      break;
    }
    case Dtype::F16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = float_to_half(src[i]);
        if (std::isfinite(src[i]) && std::isinf(half_to_float(d[i]))) {
          std::ostringstream msg;
          msg << "cpu backend: tensor '" << name << "' element " << first + i << " (" << src[i]
              << ") is outside the F16 range (|x| < 65520); store the model as F32 or BF16";
          throw Error(msg.str());
        }
      }
      break;
    }
    default:
      break;  // rejected by check_weight_precision
  }
}

}  // namespace

PackedMatrix::PackedMatrix(const Matrix& m, Dtype precision, const std::string& name)
    : rows_(static_cast<int>(m.rows())), cols_(static_cast<int>(m.cols())), dtype_(precision) {
  check_weight_precision(precision, "cpu backend, tensor '" + name + "'");
  const std::size_t n = static_cast<std::size_t>(m.size());
  data_ = allocate_stream_buffer(n * element_size());
  round_into(data_.get(), m.data(), n, 0, precision, name);
}

PackedMatrix::PackedMatrix(int rows, int cols, Dtype precision, const std::string& name, const RowReader& read)
    : rows_(rows), cols_(cols), dtype_(precision) {
  check_weight_precision(precision, "cpu backend, tensor '" + name + "'");
  const std::size_t row_elems = static_cast<std::size_t>(cols);
  data_ = allocate_stream_buffer(static_cast<std::size_t>(rows) * row_elems * element_size());
  // About 1 MiB of fp32 rows at a time: the only memory beside the packed matrix.
  const int chunk = static_cast<int>(std::max<std::size_t>(1, (std::size_t(1) << 18) / std::max<std::size_t>(row_elems, 1)));
  std::vector<float> rows_f32(static_cast<std::size_t>(std::min(chunk, std::max(rows, 1))) * row_elems);
  for (int r = 0; r < rows; r += chunk) {
    const int n = std::min(chunk, rows - r);
    read(r, n, rows_f32.data());
    const std::size_t first = static_cast<std::size_t>(r) * row_elems;
    round_into(data_.get() + first * element_size(), rows_f32.data(), static_cast<std::size_t>(n) * row_elems, first,
               precision, name);
  }
}

void PackedMatrix::widen_row(int r, float* out) const { widen(dtype_, row(r), cols_, out); }

}  // namespace specdec::cpu
