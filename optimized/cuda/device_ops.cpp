#include "optimized/cuda/device_ops.hpp"

#include <algorithm>
#include <type_traits>

namespace specdec::cuda {

namespace {

using kernels::WeightType;

// Calls f with the weight type as a compile-time constant (kernels are templates over it).
template <class F>
void with_weight_type(WeightType type, F&& f) {
  switch (type) {
    case WeightType::kF32:
      return f(std::integral_constant<WeightType, WeightType::kF32>{});
    case WeightType::kBF16:
      return f(std::integral_constant<WeightType, WeightType::kBF16>{});
    case WeightType::kF16:
      return f(std::integral_constant<WeightType, WeightType::kF16>{});
  }
}

template <WeightType W, int TPG>
void linear_chunk(DeviceRuntime& rt, const std::vector<LinearOut>& outs, const float* x, long long ldx, int T, int in) {
  kernels::Linear<W, TPG> k;
  k.outputs = static_cast<int>(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i)
    k.out[i] = {outs[i].w->data.get(), outs[i].bias, outs[i].y, outs[i].w->rows, outs[i].ldy};
  k.x = x, k.ldx = ldx, k.T = T, k.in = in;
  k.threads = rt.launch_config().linear_threads;
  rt.launch(k);
}

template <WeightType W>
void linear_typed(DeviceRuntime& rt, const std::vector<LinearOut>& outs, const float* x, long long ldx, int T, int in) {
  if (T == 1) return linear_chunk<W, 1>(rt, outs, x, ldx, 1, in);
  for (int t0 = 0; t0 < T; t0 += kernels::kLinearMaxTokens) {
    const int n = std::min(kernels::kLinearMaxTokens, T - t0);
    std::vector<LinearOut> chunk = outs;
    for (LinearOut& o : chunk) o.y += t0 * o.ldy;
    linear_chunk<W, kernels::kTokensPerGroup>(rt, chunk, x + t0 * ldx, ldx, n, in);
  }
}

template <WeightType W, int TPG>
void gate_up_chunk(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                   const float* x, long long ldx, float* act, long long ldact, int T) {
  kernels::GateUpSwiglu<W, TPG> k;
  k.gate = g.data.get(), k.up = u.data.get(), k.gate_bias = bg, k.up_bias = bu;
  k.x = x, k.ldx = ldx, k.act = act, k.ldact = ldact, k.T = T, k.in = g.cols, k.features = g.rows;
  k.threads = rt.launch_config().linear_threads;
  rt.launch(k);
}

template <WeightType W>
void gate_up_typed(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                   const float* x, long long ldx, float* act, long long ldact, int T) {
  if (T == 1) return gate_up_chunk<W, 1>(rt, g, u, bg, bu, x, ldx, act, ldact, 1);
  for (int t0 = 0; t0 < T; t0 += kernels::kLinearMaxTokens) {
    const int n = std::min(kernels::kLinearMaxTokens, T - t0);
    gate_up_chunk<W, kernels::kTokensPerGroup>(rt, g, u, bg, bu, x + t0 * ldx, ldx, act + t0 * ldact, ldact, n);
  }
}

}  // namespace

void linear(DeviceRuntime& rt, const std::vector<LinearOut>& outs, const float* x, long long ldx, int T, int in) {
  with_weight_type(outs.front().w->type, [&](auto W) { linear_typed<decltype(W)::value>(rt, outs, x, ldx, T, in); });
}

void gate_up_swiglu(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                    const float* x, long long ldx, float* act, long long ldact, int T) {
  with_weight_type(g.type, [&](auto W) { gate_up_typed<decltype(W)::value>(rt, g, u, bg, bu, x, ldx, act, ldact, T); });
}

void embedding(DeviceRuntime& rt, const DeviceMatrix& table, const int32_t* ids, int T, float* y) {
  with_weight_type(table.type, [&](auto W) {
    kernels::EmbeddingGather<decltype(W)::value> k;
    k.table = table.data.get(), k.ids = ids, k.y = y, k.ldy = table.cols, k.T = T, k.vocab = table.rows,
    k.width = table.cols;
    rt.launch(k);
  });
}

void rms_norm(DeviceRuntime& rt, const float* x, long long ldx, const float* w, float* y, long long ldy, int rows, int n,
              double eps) {
  rt.launch(kernels::RmsNorm{x, ldx, w, y, ldy, rows, n, static_cast<float>(eps)});
}

}  // namespace specdec::cuda
