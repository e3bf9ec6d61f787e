#pragma once
// Measures this machine's achievable memory bandwidth and fp32 matrix throughput, single thread
// and all threads, and turns them into a hardware spec for the "cpu" device.
#include <string>

#include "simulator/hardware_spec.hpp"

namespace specdec::sim {

struct CpuMeasurement {
  int threads = 1;
  double bandwidth_single_bytes_per_s = 0;  // streaming read, one thread
  double bandwidth_all_bytes_per_s = 0;     // all threads, each on its own array
  double flops_single_per_s = 0;            // fp32 GEMM, one thread
  double flops_all_per_s = 0;               // fp32 GEMM on every thread at once
  double memory_bytes = 0;                  // physical memory
  double kernel_floor_s = 0;                // a tiny GEMM's time (call overhead)
};

struct CpuMeasureOptions {
  int threads = 0;                  // 0 = std::thread::hardware_concurrency()
  double array_bytes = 256e6;       // per-thread streaming buffer (much larger than the caches)
  int gemm_size = 512;              // n of the n×n×n GEMM
  double min_seconds = 0.3;         // per measurement
};

CpuMeasurement measure_cpu(const CpuMeasureOptions& opt = {});
// A hardware spec from a measurement: peaks are the measured all-thread figures (so efficiencies
// start at 1), devices_per_instance 1, no interconnect.
HardwareSpec cpu_hardware_spec(const CpuMeasurement& m, const std::string& name = "cpu-local");
nlohmann::json cpu_measurement_to_json(const CpuMeasurement& m);

}  // namespace specdec::sim
