// Times the exact kernels on a GPU at Llama-3.1-8B's shapes (BF16 weights): the device-to-device
// copy bandwidth as the yardstick, one decoder layer's linear kernels for T = 1..64 tokens (time,
// weight bandwidth and its fraction of the copy bandwidth, cost relative to T = 1), and attention
// over a long cache; and cuBLAS's BF16 GEMMs over the same matrices and tokens (fp32 accumulate
// and output, its own reduction order: not exact) as the yardstick for what exactness costs.
// Prints one table; numbers, never pass/fail (tests/gpu checks the bits).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/launch.hpp"
#include "reference/core/error.hpp"

namespace specdec::kernels {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS: ") + what + ": status " + std::to_string(static_cast<int>(s)));
}

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  // Every byte 0x3c: each fp32 and BF16 value 0.0115, finite and not zero (a matrix unit runs
  // measurably faster on zeros), so timings are of real arithmetic.
  check(cudaMemset(p, 0x3c, bytes), "cudaMemset");
  return p;
}

// Median milliseconds of `reps` runs of f (after one warm-up).
template <class F>
double time_ms(int reps, F f) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  f();
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(a), "record");
    f();
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int run() {
  std::string why;
  if (!cuda::device_available(&why)) {
    std::fprintf(stderr, "specdec_kernel_bench: no CUDA device: %s\n", why.c_str());
    return 1;
  }
  std::printf("device: %s\n", cuda::device_description().c_str());

  const std::size_t copy_bytes = std::size_t(1) << 30;
  void* src = device_alloc(copy_bytes);
  void* dst = device_alloc(copy_bytes);
  const double copy_ms = time_ms(10, [&] { check(cudaMemcpy(dst, src, copy_bytes, cudaMemcpyDeviceToDevice), "copy"); });
  const double copy_gbs = 2.0 * copy_bytes / (copy_ms * 1e-3) / 1e9;  // read + write
  cudaFree(src);
  cudaFree(dst);

  // One Llama-3.1-8B decoder layer's matrices, BF16; four layers' worth so no weight stays in L2.
  const int H = 4096, Q = 4096, KV = 1024, I = 14336, layers = 4;
  struct Layer {
    void *qkv, *o, *gate, *up, *down;
  };
  std::vector<Layer> L(layers);
  for (Layer& l : L) {
    l.qkv = device_alloc(std::size_t(Q + 2 * KV) * H * 2);
    l.o = device_alloc(std::size_t(H) * Q * 2);
    l.gate = device_alloc(std::size_t(I) * H * 2);
    l.up = device_alloc(std::size_t(I) * H * 2);
    l.down = device_alloc(std::size_t(H) * I * 2);
  }
  const double layer_bytes = 2.0 * H * (Q + 2.0 * KV + Q + 3.0 * I);
  const int Tmax = kLinearMaxTokens;
  auto* x = static_cast<float*>(device_alloc(std::size_t(Tmax) * I * 4));
  auto* y = static_cast<float*>(device_alloc(std::size_t(Tmax) * (Q + 2 * KV) * 4));
  auto* act = static_cast<float*>(device_alloc(std::size_t(Tmax) * I * 4));

  // One layer's exact linear kernels in the form of `tpg` tokens per lane group.
  auto exact_layer = [&](auto tpg, const Layer& l, int T) {
    constexpr int TPG = decltype(tpg)::value;
    Linear<WeightType::kBF16, TPG> qkv;
    qkv.out[0] = {l.qkv, nullptr, y, Q + 2 * KV, Q + 2 * KV};
    qkv.x = x, qkv.ldx = H, qkv.T = T, qkv.in = H;
    cuda::launch(qkv);
    Linear<WeightType::kBF16, TPG> o;
    o.out[0] = {l.o, nullptr, y, H, Q + 2 * KV};
    o.x = x, o.ldx = Q, o.T = T, o.in = Q;
    cuda::launch(o);
    GateUpSwiglu<WeightType::kBF16, TPG> gu;
    gu.gate = l.gate, gu.up = l.up, gu.x = x, gu.ldx = H, gu.act = act, gu.ldact = I, gu.T = T, gu.in = H, gu.features = I;
    cuda::launch(gu);
    Linear<WeightType::kBF16, TPG> down;
    down.out[0] = {l.down, nullptr, y, H, Q + 2 * KV};
    down.x = act, down.ldx = I, down.T = T, down.in = I;
    cuda::launch(down);
  };

  std::printf("\ncopy bandwidth (device to device, read + write): %.0f GB/s\n", copy_gbs);
  std::printf("\n%-34s %4s %10s %9s %9s %8s\n", "kernel (Llama-3.1-8B layer, BF16)", "T", "ms/layer", "GB/s", "of copy", "vs T=1");
  double t1 = 0;
  std::vector<double> exact_layer_ms;  // per T, for the cuBLAS comparison below
  for (const int T : {1, 2, 4, 8, 16, 32, 64}) {
    int next = 0;
    // The forms the backend launches (optimized/cuda/device_ops.cpp): the one-token form at T = 1.
    const double ms = T == 1 ? time_ms(20, [&] { exact_layer(std::integral_constant<int, 1>{}, L[next++ % layers], T); })
                             : time_ms(20, [&] { exact_layer(std::integral_constant<int, kTokensPerGroup>{}, L[next++ % layers], T); });
    if (T == 1) t1 = ms;
    exact_layer_ms.push_back(ms);
    const double gbs = layer_bytes / (ms * 1e-3) / 1e9;
    std::printf("%-34s %4d %10.3f %9.0f %8.1f%% %8.2f\n", "qkv + o + gate/up/SwiGLU + down", T, ms, gbs,
                100.0 * gbs / copy_gbs, ms / t1);
  }

  // The yardstick: cuBLAS over the same matrices (gate and up as two GEMMs, no SwiGLU), with the
  // input in BF16 as cuBLAS wants both operands of one type: y^T (N, T) = W (N, K) · x^T (K, T).
  cublasHandle_t blas = nullptr;
  check_blas(cublasCreate(&blas), "cublasCreate");
  auto* xb = device_alloc(std::size_t(Tmax) * I * 2);
  auto* yc = device_alloc(std::size_t(Tmax) * I * 4);  // (T, N) for N up to I
  auto gemm = [&](const void* w, int N, int K, int T) {
    const float one = 1.0f, zero = 0.0f;
    check_blas(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, w, CUDA_R_16BF, K, xb, CUDA_R_16BF, K, &zero, yc,
                            CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
  };
  std::printf("\n%-34s %4s %10s %9s %9s %8s\n", "cuBLAS BF16 GEMM (same matrices)", "T", "ms/layer", "GB/s", "of copy",
              "exact/it");
  int ti = 0;
  for (const int T : {1, 2, 4, 8, 16, 32, 64}) {
    int next = 0;
    const double ms = time_ms(20, [&] {
      const Layer& l = L[next++ % layers];
      gemm(l.qkv, Q + 2 * KV, H, T);
      gemm(l.o, H, Q, T);
      gemm(l.gate, I, H, T);
      gemm(l.up, I, H, T);
      gemm(l.down, H, I, T);
    });
    const double gbs = layer_bytes / (ms * 1e-3) / 1e9;
    std::printf("%-34s %4d %10.3f %9.0f %8.1f%% %8.2f\n", "qkv + o + gate + up + down", T, ms, gbs, 100.0 * gbs / copy_gbs,
                exact_layer_ms[ti++] / ms);
  }
  cublasDestroy(blas);

  // Attention over a 4096-slot cache, 32 heads sharing 8 KV heads of 128.
  const int cols = 4096, heads = 32, kv_heads = 8, hd = 128;
  auto* kc = static_cast<float*>(device_alloc(std::size_t(cols) * kv_heads * hd * 4));
  auto* vc = static_cast<float*>(device_alloc(std::size_t(cols) * kv_heads * hd * 4));
  auto* mask = static_cast<uint8_t*>(device_alloc(std::size_t(Tmax) * cols));
  check(cudaMemset(mask, 1, std::size_t(Tmax) * cols), "mask");
  auto* scratch = static_cast<float*>(device_alloc(std::size_t(Tmax) * heads * cols * 4));
  auto* pos = static_cast<int32_t*>(device_alloc(std::size_t(cols) * 4));
  std::printf("\n%-34s %4s %10s\n", "attention (4096 slots, 32/8 heads)", "T", "ms/layer");
  for (const int T : {1, 8, 64}) {
    Attention a;
    a.q = x, a.ldq = heads * hd, a.k = kc, a.v = vc, a.ldkv = kv_heads * hd, a.mask = mask, a.q_pos = pos,
    a.slot_pos = pos, a.window = 0, a.out = act, a.ldo = heads * hd, a.scratch = scratch, a.T = T, a.heads = heads,
    a.kv_heads = kv_heads, a.hd = hd, a.cols = cols, a.scale = 0.088388f;
    std::printf("%-34s %4d %10.3f\n", "tree-masked GQA attention", T, time_ms(10, [&] { cuda::launch(a); }));
  }
  check(cudaDeviceSynchronize(), "kernels");
  return 0;
}

}  // namespace
}  // namespace specdec::kernels

int main() {
  try {
    return specdec::kernels::run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specdec_kernel_bench: %s\n", e.what());
    return 1;
  }
}
