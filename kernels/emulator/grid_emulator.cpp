#include "kernels/emulator/grid_emulator.hpp"

#include "kernels/emulator/fiber_switch.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define SPECDEC_EMU_ASAN 1
#endif

namespace specdec::kernels::emu {

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::kForward:
      return "forward";
    case Schedule::kReverse:
      return "reverse";
    case Schedule::kRandom:
      return "random";
  }
  return "?";
}

namespace {

bool same_site(const std::source_location& a, const std::source_location& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

std::string site(const std::source_location& w) {
  const std::string file = w.file_name();
  const auto slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(w.line()) + ":" +
         std::to_string(w.column());
}

// Fiber stacks, kept for the life of the process (a launch of 1024 threads needs 1024 of them).
// Each has a guard page below it, so a body that overflows its stack faults instead of writing
// into its neighbour.
constexpr std::size_t kStackBytes = 256 * 1024;

struct Stack {
  void* base;     // the guard page
  void* bottom;   // usable region [bottom, bottom + kStackBytes)
};

std::vector<Stack>& stack_pool() {
  static std::vector<Stack> pool;
  return pool;
}

void ensure_stacks(int n) {
  auto& pool = stack_pool();
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  while (static_cast<int>(pool.size()) < n) {
    void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) throw EmulationError("grid emulator: cannot map a fiber stack");
    mprotect(p, page, PROT_NONE);
    pool.push_back({p, static_cast<char*>(p) + page});
  }
}

enum class State { kReady, kAtBarrier, kAtShuffle, kDone, kFailed };

struct Fiber {
  FiberContext context;
  State state = State::kReady;
  bool started = false;
  std::source_location where;  // the barrier or shuffle it waits at
  uint32_t value = 0;          // shuffle: what this lane offers
  int src = 0;                 // shuffle: the lane it reads
  uint32_t result = 0;         // shuffle: what it got
#if SPECDEC_EMU_ASAN
  void* fake_stack = nullptr;
#endif
};

thread_local BlockRunner* g_starting = nullptr;

}  // namespace

// One block: its fibers and their scheduler.
class BlockRunner {
 public:
  BlockRunner(const LaunchShape& shape, int bx, int by, int bz, const Body& body)
      : body_(body), fibers_(static_cast<std::size_t>(shape.block)), contexts_(static_cast<std::size_t>(shape.block)) {
    // Shared memory: its own heap block (never empty, so even a zero-byte request has bounds),
    // NaN bytes until written.
    shared_ = static_cast<unsigned char*>(std::malloc(std::max<std::size_t>(shape.shared_bytes, 1)));
    if (!shared_) throw EmulationError("grid emulator: out of memory for shared memory");
    std::memset(shared_, 0xff, shape.shared_bytes);
    for (int t = 0; t < shape.block; ++t) {
      Context& c = contexts_[static_cast<std::size_t>(t)];
      c.runner_ = this;
      c.shared_ = shared_;
      c.thread_ = t;
      c.block_dim_ = shape.block;
      c.block_x_ = bx;
      c.block_y_ = by;
      c.block_z_ = bz;
    }
  }
  ~BlockRunner() {
    for (std::size_t t = 0; t < fibers_.size(); ++t)
      if (fibers_[t].started && fibers_[t].state != State::kDone) fiber_abandon(stack_pool()[t].bottom, kStackBytes);
    std::free(shared_);
  }
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Forward: warp by warp (run_warp_major). Reverse and random: passes over the ready threads in
  // reverse index order or a fresh random permutation each pass, each run until it waits or
  // finishes; when none is ready, the waits that can complete are released.
  void run(Schedule schedule, std::mt19937_64& rng) {
    const int n = static_cast<int>(fibers_.size());
    ensure_stacks(n);
    if (schedule == Schedule::kForward) return run_warp_major();
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int t = 0; t < n; ++t) order[static_cast<std::size_t>(t)] = schedule == Schedule::kReverse ? n - 1 - t : t;
    for (;;) {
      if (schedule == Schedule::kRandom) std::shuffle(order.begin(), order.end(), rng);
      bool any = false;
      for (const int t : order) {
        if (fibers_[static_cast<std::size_t>(t)].state != State::kReady) continue;
        any = true;
        resume(t);
        if (!error_.empty()) throw EmulationError(error_);
      }
      if (!any && !release_waiting()) return;  // every thread has finished
    }
  }

  // The forward schedule: each warp in turn runs, shuffle after shuffle, until its threads finish
  // or wait at a barrier; then the next warp. Few fibers are live at a time (they stay in cache).
  void run_warp_major() {
    const int n = static_cast<int>(fibers_.size());
    for (;;) {
      bool any = false;
      for (int w0 = 0; w0 < n; w0 += kWarpSize) {
        const int w1 = std::min(n, w0 + kWarpSize);
        do {
          for (int t = w0; t < w1; ++t) {
            if (fibers_[static_cast<std::size_t>(t)].state != State::kReady) continue;
            any = true;
            resume(t);
            if (!error_.empty()) throw EmulationError(error_);
          }
        } while (release_whole_warp(w0, w1));
      }
      if (!any && !release_waiting()) return;  // every thread has finished
    }
  }

  // Completes the shuffle of warp [w0, w1) when every lane waits at the same one; otherwise
  // leaves the warp as it is (release_waiting reports a misuse).
  bool release_whole_warp(int w0, int w1) {
    const Fiber& first = fiber(w0);
    if (first.state != State::kAtShuffle) return false;
    for (int t = w0 + 1; t < w1; ++t)
      if (fiber(t).state != State::kAtShuffle || !same_site(fiber(t).where, first.where)) return false;
    for (int t = w0; t < w1; ++t) fiber(t).result = fiber(w0 + fiber(t).src).value;
    for (int t = w0; t < w1; ++t) fiber(t).state = State::kReady;
    return true;
  }

  // Called on a fiber: suspend at a barrier or shuffle until the scheduler releases it.
  void wait(int t, State state, const std::source_location& where) {
    Fiber& f = fibers_[static_cast<std::size_t>(t)];
    f.state = state;
    f.where = where;
    yield(t, false);
  }

  // Called on a fiber after setting error_ (no string may live on a stack that is abandoned).
  [[noreturn]] void fail(int t) {
    fibers_[static_cast<std::size_t>(t)].state = State::kFailed;
    yield(t, true);
    std::abort();  // a failed fiber is never resumed
  }

  void set_error(std::string message) { error_ = std::move(message); }
  Fiber& fiber(int t) { return fibers_[static_cast<std::size_t>(t)]; }
  int threads() const { return static_cast<int>(fibers_.size()); }
  std::string where_block() const {
    const Context& c = contexts_.front();
    return "block (" + std::to_string(c.block_x()) + "," + std::to_string(c.block_y()) + "," +
           std::to_string(c.block_z()) + ")";
  }

  static void entry() {
    BlockRunner* self = g_starting;
    const int t = self->starting_thread_;
    self->arrived_on_fiber(t);
    try {
      self->body_(self->contexts_[static_cast<std::size_t>(t)]);
    } catch (const std::exception& e) {
      self->error_ = self->where_block() + " thread " + std::to_string(t) + ": the kernel body threw: " + e.what();
    }
    if (self->error_.empty()) self->fibers_[static_cast<std::size_t>(t)].state = State::kDone;
    else self->fibers_[static_cast<std::size_t>(t)].state = State::kFailed;
    self->yield(t, true);
  }

 private:
  void resume(int t) {
    Fiber& f = fibers_[static_cast<std::size_t>(t)];
    if (!f.started) {
      const Stack& s = stack_pool()[static_cast<std::size_t>(t)];
      fiber_prepare(f.context, s.bottom, kStackBytes, &BlockRunner::entry);
      f.started = true;
      g_starting = this;
      starting_thread_ = t;
    }
#if SPECDEC_EMU_ASAN
    const Stack& s = stack_pool()[static_cast<std::size_t>(t)];
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, s.bottom, kStackBytes);
#endif
    fiber_switch(scheduler_, f.context);
#if SPECDEC_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  }

  // On fiber t: back to the scheduler. `final`: the fiber will not be resumed.
  void yield(int t, bool final) {
    Fiber& f = fibers_[static_cast<std::size_t>(t)];
#if SPECDEC_EMU_ASAN
    __sanitizer_start_switch_fiber(final ? nullptr : &f.fake_stack, scheduler_bottom_, scheduler_size_);
#else
    (void)final;
#endif
    fiber_switch(f.context, scheduler_);
    arrived_on_fiber(t);
  }

  void arrived_on_fiber(int t) {
#if SPECDEC_EMU_ASAN
    __sanitizer_finish_switch_fiber(fibers_[static_cast<std::size_t>(t)].fake_stack, &scheduler_bottom_,
                                    &scheduler_size_);
#else
    (void)t;
#endif
  }

  // Nobody is ready: complete whole-warp shuffles, else a barrier every thread reached. Returns
  // false when every thread has finished; throws on a misuse.
  bool release_waiting() {
    const int n = threads();
    bool released = false;
    for (int w0 = 0; w0 < n; w0 += kWarpSize) {
      const int w1 = std::min(n, w0 + kWarpSize);
      int at_shuffle = -1;
      for (int t = w0; t < w1; ++t)
        if (fiber(t).state == State::kAtShuffle) at_shuffle = t;
      if (at_shuffle < 0) continue;
      const Fiber& first = fiber(at_shuffle);
      for (int t = w0; t < w1; ++t) {
        const Fiber& f = fiber(t);
        if (f.state == State::kAtShuffle && same_site(f.where, first.where)) continue;
        const std::string who = where_block() + " warp " + std::to_string(w0 / kWarpSize) + ": ";
        if (f.state == State::kDone)
          throw EmulationError(who + "shuffle at " + site(first.where) + " waits for lane " + std::to_string(t - w0) +
                               ", which exited");
        if (f.state == State::kAtBarrier)
          throw EmulationError(who + "lane " + std::to_string(at_shuffle - w0) + " shuffles at " + site(first.where) +
                               " while lane " + std::to_string(t - w0) + " waits at the barrier at " + site(f.where));
        throw EmulationError(who + "divergent shuffles: lane " + std::to_string(at_shuffle - w0) + " at " +
                             site(first.where) + ", lane " + std::to_string(t - w0) + " at " + site(f.where));
      }
      for (int t = w0; t < w1; ++t) fiber(t).result = fiber(w0 + fiber(t).src).value;
      for (int t = w0; t < w1; ++t) fiber(t).state = State::kReady;
      released = true;
    }
    if (released) return true;
    int waiting = -1, exited = -1;
    for (int t = 0; t < n; ++t) {
      if (fiber(t).state == State::kAtBarrier) waiting = t;
      if (fiber(t).state == State::kDone) exited = t;
    }
    if (waiting < 0) return false;
    const Fiber& first = fiber(waiting);
    if (exited >= 0)
      throw EmulationError(where_block() + ": barrier at " + site(first.where) + " is not reached by every thread: thread " +
                           std::to_string(exited) + " exited (thread " + std::to_string(waiting) + " waits)");
    for (int t = 0; t < n; ++t) {
      const Fiber& f = fiber(t);
      if (!same_site(f.where, first.where))
        throw EmulationError(where_block() + ": threads wait at different barriers: thread " + std::to_string(waiting) +
                             " at " + site(first.where) + ", thread " + std::to_string(t) + " at " + site(f.where));
    }
    for (int t = 0; t < n; ++t) fiber(t).state = State::kReady;
    return true;
  }

  const Body& body_;
  std::vector<Fiber> fibers_;
  std::vector<Context> contexts_;
  unsigned char* shared_ = nullptr;
  FiberContext scheduler_;
  int starting_thread_ = 0;
  std::string error_;
#if SPECDEC_EMU_ASAN
  const void* scheduler_bottom_ = nullptr;
  std::size_t scheduler_size_ = 0;
#endif
};

void Context::sync(std::source_location where) const { runner_->wait(thread_, State::kAtBarrier, where); }

float Context::shfl(float v, int src_lane, std::source_location where) const {
  const int warp0 = thread_ - lane();
  const int lanes = std::min(kWarpSize, block_dim_ - warp0);
  if (src_lane < 0 || src_lane >= lanes) {
    runner_->set_error(runner_->where_block() + " thread " + std::to_string(thread_) + ": shuffle at " + site(where) +
                       " names lane " + std::to_string(src_lane) + ", which does not exist (warp of " +
                       std::to_string(lanes) + " lanes)");
    runner_->fail(thread_);
  }
  Fiber& f = runner_->fiber(thread_);
  std::memcpy(&f.value, &v, sizeof v);
  f.src = src_lane;
  runner_->wait(thread_, State::kAtShuffle, where);
  float r;
  std::memcpy(&r, &f.result, sizeof r);
  return r;
}

float Context::shfl_xor(float v, int mask, std::source_location where) const {
  return shfl(v, lane() ^ mask, where);
}

void run(const LaunchShape& shape, Schedule schedule, uint64_t seed, const Body& body) {
  if (shape.block < 1 || shape.block > 1024)
    throw EmulationError("grid emulator: block of " + std::to_string(shape.block) + " threads; expected 1 to 1024");
  if (shape.grid.x < 1 || shape.grid.y < 1 || shape.grid.z < 1)
    throw EmulationError("grid emulator: empty grid (" + std::to_string(shape.grid.x) + "," +
                         std::to_string(shape.grid.y) + "," + std::to_string(shape.grid.z) + ")");
  const long long blocks = static_cast<long long>(shape.grid.x) * shape.grid.y * shape.grid.z;
  std::vector<long long> order(static_cast<std::size_t>(blocks));
  std::iota(order.begin(), order.end(), 0LL);
  std::mt19937_64 rng(seed);
  if (schedule == Schedule::kReverse) std::reverse(order.begin(), order.end());
  if (schedule == Schedule::kRandom) std::shuffle(order.begin(), order.end(), rng);
  for (const long long b : order) {
    const int bx = static_cast<int>(b % shape.grid.x);
    const int by = static_cast<int>((b / shape.grid.x) % shape.grid.y);
    const int bz = static_cast<int>(b / (static_cast<long long>(shape.grid.x) * shape.grid.y));
    BlockRunner runner(shape, bx, by, bz, body);
    runner.run(schedule, rng);
  }
}

DeviceMemory::~DeviceMemory() {
  for (const Block& b : blocks_) std::free(b.data);
}

void* DeviceMemory::allocate(std::size_t bytes) {
  auto* p = static_cast<unsigned char*>(std::malloc(std::max<std::size_t>(bytes, 1)));
  if (!p) throw EmulationError("emulated device: out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0xff, bytes);
  blocks_.push_back({p, bytes});
  return p;
}

void DeviceMemory::release(void* p) {
  const auto it = std::find_if(blocks_.begin(), blocks_.end(), [p](const Block& b) { return b.data == p; });
  if (it == blocks_.end()) throw EmulationError("emulated device: release of a pointer that was not allocated");
  std::free(it->data);
  blocks_.erase(it);
}

std::vector<std::vector<unsigned char>> DeviceMemory::snapshot() const {
  std::vector<std::vector<unsigned char>> s;
  s.reserve(blocks_.size());
  for (const Block& b : blocks_) s.emplace_back(b.data, b.data + b.bytes);
  return s;
}

void DeviceMemory::restore(const std::vector<std::vector<unsigned char>>& s) {
  if (s.size() != blocks_.size()) throw EmulationError("emulated device: snapshot of other allocations");
  // A zero-byte block's snapshot is an empty vector whose data() may be null: nothing to copy
  // (and memcpy from null is undefined even for zero bytes).
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].size() != blocks_[i].bytes) throw EmulationError("emulated device: snapshot of other allocations");
    if (blocks_[i].bytes > 0) std::memcpy(blocks_[i].data, s[i].data(), blocks_[i].bytes);
  }
}

std::string DeviceMemory::first_difference(const std::vector<std::vector<unsigned char>>& a,
                                           const std::vector<std::vector<unsigned char>>& b) const {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const auto m = std::mismatch(a[i].begin(), a[i].end(), b[i].begin(), b[i].end());
    if (m.first != a[i].end())
      return "allocation " + std::to_string(i) + " (" + std::to_string(a[i].size()) + " bytes) byte " +
             std::to_string(m.first - a[i].begin());
  }
  return a.size() == b.size() ? "" : "the number of allocations";
}

void launch(DeviceMemory& memory, const LaunchShape& shape, uint64_t seed, const Body& body) {
  const auto before = memory.snapshot();
  const Schedule order[] = {Schedule::kReverse, Schedule::kRandom, Schedule::kForward};
  std::vector<std::vector<unsigned char>> first;
  for (const Schedule s : order) {
    memory.restore(before);
    run(shape, s, seed, body);
    if (s == order[0]) {
      first = memory.snapshot();
      continue;
    }
    const std::string diff = memory.first_difference(first, memory.snapshot());
    if (!diff.empty())
      throw EmulationError(std::string("the result depends on the thread schedule: ") + to_string(order[0]) + " and " +
                           to_string(s) + " (seed " + std::to_string(seed) + ") differ at " + diff);
  }
}

}  // namespace specdec::kernels::emu
