// kernels/linear_rows against the reference's ops::linear: bitwise equal on every shape tried,
// including lengths that are not multiples of 8 (the tail) and a bias.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/linear_rows.cuh"
#include "reference/model/ops.hpp"

namespace specdec {
namespace {

TEST(LinearRowsKernel, EqualsReferenceBitwise) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  struct Shape {
    int rows, in, out;
    bool bias;
  };
  for (const Shape s : {Shape{1, 64, 96, false}, Shape{9, 100, 37, true}, Shape{33, 7, 300, true}, Shape{4, 4096, 512, false}}) {
    Matrix x(s.rows, s.in), w(s.out, s.in);
    Vector b = s.bias ? Vector(s.out) : Vector();
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = n(rng);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = n(rng);
    for (Eigen::Index i = 0; i < b.size(); ++i) b[i] = n(rng);
    const Matrix want = ops::linear(x, w, b);
    Matrix got(s.rows, s.out);
    cuda::linear_rows(x.data(), w.data(), b.size() ? b.data() : nullptr, got.data(), s.rows, s.in, s.out);
    ASSERT_EQ(got.rows(), want.rows());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()), 0)
        << "shape rows " << s.rows << " in " << s.in << " out " << s.out << ", seed 5";
  }
}

}  // namespace
}  // namespace specdec
