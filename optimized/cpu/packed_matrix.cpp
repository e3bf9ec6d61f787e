#include "optimized/cpu/packed_matrix.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

#include "optimized/cpu/dot_kernels.hpp"
#include "reference/core/error.hpp"
#include "reference/core/half.hpp"

namespace specdec::cpu {

PackedMatrix::PackedMatrix(const Matrix& m, Dtype precision, const std::string& name)
    : rows_(static_cast<int>(m.rows())), cols_(static_cast<int>(m.cols())), dtype_(precision) {
  check_weight_precision(precision, "cpu backend, tensor '" + name + "'");
  const std::size_t n = static_cast<std::size_t>(m.size());
  data_ = allocate_stream_buffer(n * element_size());
  const float* src = m.data();
  switch (precision) {
    case Dtype::F32:
      std::memcpy(data_.get(), src, n * sizeof(float));
      break;
    case Dtype::BF16: {
      auto* dst = reinterpret_cast<uint16_t*>(data_.get());
      for (std::size_t i = 0; i < n; ++i) dst[i] = float_to_bfloat16(src[i]);
      break;
    }
    case Dtype::F16: {
      auto* dst = reinterpret_cast<uint16_t*>(data_.get());
      for (std::size_t i = 0; i < n; ++i) {
        dst[i] = float_to_half(src[i]);
        if (std::isfinite(src[i]) && std::isinf(half_to_float(dst[i]))) {
          std::ostringstream msg;
          msg << "cpu backend: tensor '" << name << "' element " << i << " (" << src[i]
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

void PackedMatrix::widen_row(int r, float* out) const { widen(dtype_, row(r), cols_, out); }

}  // namespace specdec::cpu
