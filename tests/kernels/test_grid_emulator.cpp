// The CPU grid emulator catches the bugs it exists to catch: each test plants one (a missing
// barrier, a divergent barrier, a shuffle naming an exited or absent lane, a dependence between
// blocks, an out-of-bounds write) and expects the emulator to fail loudly; positive controls show
// that correct kernels pass and that the schedules really differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/emulator/grid_emulator.hpp"

namespace specdec::kernels {
namespace {

using emu::Context;
using emu::DeviceMemory;
using emu::EmulationError;

std::string failure_of(DeviceMemory& mem, const LaunchShape& shape, const emu::Body& body) {
  try {
    emu::launch(mem, shape, 7, body);
  } catch (const EmulationError& e) {
    return e.what();
  }
  return "";
}

// A block-wide exchange through shared memory: out[t] = in[(t + 1) mod n].
void rotate(const Context& c, const float* in, float* out, bool with_barrier) {
  float* s = c.shared<float>();
  const int t = c.thread(), n = c.block_dim();
  s[t] = in[t];
  if (with_barrier) c.sync();
  out[t] = s[(t + 1) % n];
}

TEST(GridEmulator, ABarrieredExchangeIsScheduleIndependentAndCorrect) {
  DeviceMemory mem;
  const int n = 64;
  float* in = mem.allocate<float>(n);
  float* out = mem.allocate<float>(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  emu::launch(mem, {{1, 1, 1}, n, n * sizeof(float)}, 7, [&](Context& c) { rotate(c, in, out, true); });
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], static_cast<float>((i + 1) % n)) << "thread " << i;
}

TEST(GridEmulator, CatchesAMissingBarrier) {
  DeviceMemory mem;
  const int n = 64;
  float* in = mem.allocate<float>(n);
  float* out = mem.allocate<float>(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  const std::string e =
      failure_of(mem, {{1, 1, 1}, n, n * sizeof(float)}, [&](Context& c) { rotate(c, in, out, false); });
  EXPECT_NE(e.find("depends on the thread schedule"), std::string::npos) << e;
}

TEST(GridEmulator, SharedMemoryStartsAsNaN) {
  DeviceMemory mem;
  float* out = mem.allocate<float>(32);
  emu::run({{1, 1, 1}, 32, 32 * sizeof(float)}, emu::Schedule::kForward, 1,
           [&](Context& c) { out[c.thread()] = c.shared<float>()[c.thread()]; });
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;
  float* fresh = mem.allocate<float>(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(fresh[i])) << "device allocations start as NaN";
}

TEST(GridEmulator, CatchesABarrierNotReachedByEveryThread) {
  DeviceMemory mem;
  const std::string e = failure_of(mem, {{1, 1, 1}, 64, 0}, [&](Context& c) {
    if (c.thread() < 16) c.sync();
  });
  EXPECT_NE(e.find("not reached by every thread"), std::string::npos) << e;
}

TEST(GridEmulator, CatchesThreadsAtDifferentBarriers) {
  DeviceMemory mem;
  const std::string e = failure_of(mem, {{1, 1, 1}, 64, 0}, [&](Context& c) {
    if (c.thread() % 2) {
      c.sync();
    } else {
      c.sync();
    }
  });
  EXPECT_NE(e.find("different barriers"), std::string::npos) << e;
}

TEST(GridEmulator, WarpShufflesReduceLikeTheHardware) {
  DeviceMemory mem;
  float* out = mem.allocate<float>(64);
  emu::launch(mem, {{1, 1, 1}, 64, 0}, 7, [&](Context& c) {
    float v = static_cast<float>(c.thread());
    for (int off = 16; off > 0; off /= 2) v += c.shfl_xor(v, off);
    out[c.thread()] = v + c.shfl(v, 3) * 0.0f;
  });
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], t < 32 ? 496.0f : 1520.0f) << "thread " << t;
}

TEST(GridEmulator, CatchesAShuffleWithAnExitedLane) {
  DeviceMemory mem;
  float* out = mem.allocate<float>(32);
  const std::string e = failure_of(mem, {{1, 1, 1}, 32, 0}, [&](Context& c) {
    if (c.lane() == 5) return;
    out[c.thread()] = c.shfl_xor(1.0f, 1);
  });
  EXPECT_NE(e.find("which exited"), std::string::npos) << e;
}

TEST(GridEmulator, CatchesAShuffleOffsetNamingNoLane) {
  // A block of 24 threads is a partial warp: xor 16 names lanes 24..31 from lanes 8..15.
  DeviceMemory mem;
  float* out = mem.allocate<float>(24);
  const std::string e = failure_of(mem, {{1, 1, 1}, 24, 0}, [&](Context& c) {
    float v = 1.0f;
    for (int off = 16; off > 0; off /= 2) v += c.shfl_xor(v, off);
    out[c.thread()] = v;
  });
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
}

TEST(GridEmulator, CatchesDivergentShuffles) {
  DeviceMemory mem;
  float* out = mem.allocate<float>(32);
  const std::string e = failure_of(mem, {{1, 1, 1}, 32, 0}, [&](Context& c) {
    out[c.thread()] = c.lane() < 16 ? c.shfl_xor(1.0f, 1) : c.shfl_xor(2.0f, 1);
  });
  EXPECT_NE(e.find("divergent shuffles"), std::string::npos) << e;
}

TEST(GridEmulator, CatchesABlockReadingAnotherBlocksOutput) {
  DeviceMemory mem;
  float* buf = mem.allocate<float>(2);
  buf[0] = 1.0f;
  buf[1] = 2.0f;
  const std::string e = failure_of(mem, {{2, 1, 1}, 1, 0}, [&](Context& c) {
    if (c.block_x() == 0) buf[0] = 10.0f;
    else buf[1] = buf[0] + 1.0f;
  });
  EXPECT_NE(e.find("depends on the thread schedule"), std::string::npos) << e;
}

TEST(GridEmulator, SchedulesRunThreadsInDifferentOrders) {
  for (const emu::Schedule s : {emu::Schedule::kForward, emu::Schedule::kReverse, emu::Schedule::kRandom}) {
    std::vector<int> order;
    emu::run({{1, 1, 1}, 64, 0}, s, 3, [&](Context& c) {
      order.push_back(c.thread());
      c.sync();
    });
    ASSERT_EQ(order.size(), 64u) << emu::to_string(s);
    if (s == emu::Schedule::kForward) {
      EXPECT_EQ(order.front(), 0);
    }
    if (s == emu::Schedule::kReverse) {
      EXPECT_EQ(order.front(), 63);
    }
    if (s == emu::Schedule::kRandom) {
      bool sorted = true;
      for (int i = 1; i < 64; ++i) sorted = sorted && order[i] > order[i - 1];
      EXPECT_FALSE(sorted) << "the random schedule ran threads in index order (seed 3)";
    }
  }
}

TEST(GridEmulator, RejectsBadLaunchShapes) {
  EXPECT_THROW(emu::run({{0, 1, 1}, 32, 0}, emu::Schedule::kForward, 1, [](Context&) {}), EmulationError);
  EXPECT_THROW(emu::run({{1, 1, 1}, 2048, 0}, emu::Schedule::kForward, 1, [](Context&) {}), EmulationError);
}

TEST(GridEmulator, ReportsAnExceptionInTheBody) {
  DeviceMemory mem;
  const std::string e = failure_of(mem, {{1, 1, 1}, 32, 0}, [&](Context& c) {
    if (c.thread() == 7) throw std::runtime_error("planted");
  });
  EXPECT_NE(e.find("thread 7: the kernel body threw: planted"), std::string::npos) << e;
}

#if defined(__SANITIZE_ADDRESS__)
TEST(GridEmulatorDeathTest, AddressSanitizerCatchesAnOverrunOfDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceMemory mem;
        float* out = mem.allocate<float>(31);
        emu::run({{1, 1, 1}, 32, 0}, emu::Schedule::kForward, 1, [&](Context& c) { out[c.thread()] = 1.0f; });
      },
      "heap-buffer-overflow");
}

TEST(GridEmulatorDeathTest, AddressSanitizerCatchesAnOverrunOfSharedMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        emu::run({{1, 1, 1}, 32, 31 * sizeof(float)}, emu::Schedule::kForward, 1,
                 [&](Context& c) { c.shared<float>()[c.thread()] = 1.0f; });
      },
      "heap-buffer-overflow");
}
#endif

}  // namespace
}  // namespace specdec::kernels
