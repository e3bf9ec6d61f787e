#include "simulator/cpu_measure.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <unistd.h>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::sim {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Runs `work(thread_index)` on n threads started together; returns the wall time of the slowest.
template <class F>
double run_parallel(int n, F work) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::vector<double> elapsed(n);
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (!go) std::this_thread::yield();
      const auto t = Clock::now();
      work(i);
      elapsed[i] = seconds_since(t);
    });
  while (ready < n) std::this_thread::yield();
  go = true;
  for (auto& t : threads) t.join();
  return *std::max_element(elapsed.begin(), elapsed.end());
}

// Streaming read bandwidth: sum of a large float array (bytes read / time), best of several passes.
double bandwidth(int threads, double array_bytes, double min_seconds) {
  const size_t n = std::max<size_t>(size_t(array_bytes / sizeof(float)), 1 << 16);
  std::vector<std::vector<float>> arrays(threads, std::vector<float>(n, 1.0f));
  std::vector<float> sink(threads);
  double best = 0;
  const auto start = Clock::now();
  do {
    const double t = run_parallel(threads, [&](int i) {
      const float* a = arrays[i].data();
      Eigen::Map<const Eigen::VectorXf> v(a, Eigen::Index(n));
      sink[i] += v.sum();
    });
    best = std::max(best, double(threads) * n * sizeof(float) / t);
  } while (seconds_since(start) < min_seconds);
  volatile float keep = sink[0];
  (void)keep;
  return best;
}

// fp32 GEMM throughput (2n³ FLOP per product), every thread multiplying its own matrices.
double gemm_flops(int threads, int size, double min_seconds) {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<M> a(threads), b(threads), c(threads);
  for (int i = 0; i < threads; ++i) {
    a[i] = M::Constant(size, size, 0.5f);
    b[i] = M::Constant(size, size, 0.25f);
    c[i] = M::Zero(size, size);
  }
  double best = 0;
  const auto start = Clock::now();
  do {
    const double t = run_parallel(threads, [&](int i) { c[i].noalias() = a[i] * b[i]; });
    best = std::max(best, threads * 2.0 * double(size) * size * size / t);
  } while (seconds_since(start) < min_seconds);
  return best;
}

double tiny_gemm_seconds() {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  M a = M::Constant(8, 8, 0.5f), b = M::Constant(8, 8, 0.5f), c(8, 8);
  const int reps = 20000;
  const auto t = Clock::now();
  for (int r = 0; r < reps; ++r) {
    c.noalias() = a * b;
    a(0, 0) = c(0, 0) * 1e-3f;
  }
  return seconds_since(t) / reps;
}

}  // namespace

CpuMeasurement measure_cpu(const CpuMeasureOptions& opt) {
  if (opt.threads < 0) throw Error("--threads must be >= 0 (0 = all hardware threads)");
  check_input_limit("simulate --measure-cpu", "--threads", opt.threads, kMaxThreads);
  if (opt.gemm_size < 16) throw Error("GEMM size must be >= 16");
  if (!(opt.array_bytes >= 1e6)) throw Error("bandwidth array size must be >= 1 MB");
  CpuMeasurement m;
  m.threads = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  m.bandwidth_single_bytes_per_s = bandwidth(1, opt.array_bytes, opt.min_seconds);
  m.bandwidth_all_bytes_per_s = m.threads == 1 ? m.bandwidth_single_bytes_per_s
                                               : bandwidth(m.threads, opt.array_bytes, opt.min_seconds);
  m.flops_single_per_s = gemm_flops(1, opt.gemm_size, opt.min_seconds);
  m.flops_all_per_s = m.threads == 1 ? m.flops_single_per_s : gemm_flops(m.threads, opt.gemm_size, opt.min_seconds);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  m.memory_bytes = pages > 0 && page > 0 ? double(pages) * double(page) : 0;
  m.kernel_floor_s = tiny_gemm_seconds();
  return m;
}

HardwareSpec cpu_hardware_spec(const CpuMeasurement& m, const std::string& name) {
  HardwareSpec h;
  h.name = name;
  h.description = "this machine's CPU, " + std::to_string(m.threads) + " threads, measured";
  h.kind = "cpu";
  h.memory_bytes = m.memory_bytes > 0 ? m.memory_bytes : 1e9;
  h.memory_bandwidth_bytes_per_s = m.bandwidth_all_bytes_per_s;
  h.peak_flops_per_s["fp32"] = m.flops_all_per_s;
  h.devices_per_instance = 1;
  h.compute_efficiency = 1.0;  // the peaks are already what a GEMM achieves
  h.memory_efficiency = 1.0;
  h.interconnect_efficiency = 1.0;
  h.kernel_floor_s = m.kernel_floor_s;
  return h;
}

nlohmann::json cpu_measurement_to_json(const CpuMeasurement& m) {
  return {{"threads", m.threads},
          {"bandwidth_single_thread_bytes_per_s", m.bandwidth_single_bytes_per_s},
          {"bandwidth_all_threads_bytes_per_s", m.bandwidth_all_bytes_per_s},
          {"fp32_gemm_single_thread_flops_per_s", m.flops_single_per_s},
          {"fp32_gemm_all_threads_flops_per_s", m.flops_all_per_s},
          {"tiny_gemm_s", m.kernel_floor_s}};
}

}  // namespace specdec::sim
