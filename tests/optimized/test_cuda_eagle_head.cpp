// EAGLE-1, EAGLE-3 and P-EAGLE heads on the CUDA backend, on the device under test (the CPU grid
// emulator in the cpu tests, the GPU in tests/gpu): bitwise equal to the reference head (logits,
// hidden states, KV cache) for every head config of eagle_head_cases.hpp with weights rounded to
// F32, BF16 and F16 (uploaded in two bytes then), over chains, projected rows, tree masks at
// explicit positions, P-EAGLE mask slots and selected logit rows; every launch of one head per kind
// under three thread schedules; two launch configurations; and the errors of mixing caches between
// backends.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "optimized/cuda/cuda_eagle_head.hpp"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/cuda_transformer.hpp"
#include "reference/core/error.hpp"
#include "tests/optimized/head_fixtures.hpp"
#include "tests/optimized/device_under_test.hpp"
#include "tests/reference/error_capture.hpp"

namespace specdec {
namespace {

class CudaEagleHead : public testing::DeviceTest {};
class CudaEagleHeadErrors : public testing::DeviceTest {};

using testing::dense_cache;
using testing::drafting_inputs;
using testing::error_of;
using testing::expect_bitwise;
using testing::random_input;
using testing::rounded_head;

const cuda::CudaKVCache& cuda_cache(const KVCache& c) { return dynamic_cast<const cuda::CudaKVCache&>(c); }

// Runs `steps` on the reference and on `runtime` and checks every output and the cache bitwise.
void expect_head_equals_reference(const EagleHead& reference, std::shared_ptr<cuda::DeviceRuntime> runtime,
                                  const std::vector<EagleHead::Input>& steps, const std::string& where) {
  const EagleHead device = cuda::cuda_eagle_head(std::move(runtime), reference);
  const auto [ref_cache, cache] = testing::expect_steps_bitwise(reference, device, steps, where);
  EXPECT_TRUE(cuda_cache(*cache).equals(dense_cache(*ref_cache))) << where << ": KV cache";
}

TEST_F(CudaEagleHead, EqualsReferenceBitwiseForEveryHeadAndPrecision) {
  for (const testing::Case& k : testing::cases()) {
    for (Dtype p : testing::cpu_precisions()) {
      const EagleHead reference = rounded_head(k, p);
      expect_head_equals_reference(reference, testing::test_device(), drafting_inputs(reference, k.seed + 10),
                                   k.name + " / " + dtype_name(p) + ", seed " + std::to_string(k.seed));
    }
  }
}

TEST_F(CudaEagleHead, EveryLaunchIsScheduleAndLaunchConfigurationIndependent) {
  // One head of each kind; the emulator throws when a launch leaves memory depending on the
  // thread schedule.
  for (const char* name : {"eagle1_safeailab", "eagle3_safeailab", "peagle_aws"}) {
    const testing::Case& k = testing::find_case(name);
    const EagleHead reference = rounded_head(k, Dtype::BF16);
    const auto steps = drafting_inputs(reference, k.seed + 20);
    expect_head_equals_reference(reference, testing::schedule_checking_device(), steps, k.name + ", three schedules");
    // The most linear threads the device's kernels take (1024 on the emulator; registers cap it on a GPU).
    const int most = kernels::largest_launch_config(testing::test_device()->limits()).linear_threads;
    expect_head_equals_reference(reference, testing::test_device({most, 32}), steps,
                                 k.name + ", " + std::to_string(most) + "/32 threads");
  }
}

TEST_F(CudaEagleHead, SharesTheHeadAndGivesDeviceCaches) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const EagleHead device = cuda::cuda_eagle_head(testing::test_device(), reference);
  ASSERT_NE(device.engine(), nullptr);
  EXPECT_EQ(device.engine()->name(), "cuda");
  EXPECT_EQ(&device.weights(), &reference.weights()) << "the weights are shared, not copied";
  auto cache = device.new_cache(8);
  EXPECT_NE(dynamic_cast<cuda::CudaKVCache*>(cache.get()), nullptr);
  EXPECT_EQ(cache->capacity(), 8);
}

TEST_F(CudaEagleHeadErrors, CachesOfAnotherBackendOrShapeAndBadInputsLeaveTheCacheUntouched) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const auto runtime = std::shared_ptr<cuda::DeviceRuntime>(testing::test_device());
  const EagleHead device = cuda::cuda_eagle_head(runtime, reference);
  const EagleHead::Input in = random_input(reference, 3, 2);
  auto ref_cache = reference.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { device.forward(*ref_cache, in); }),
                  "eagle head forward: the KV cache was not created by the cuda backend");
  const cuda::CudaTransformer target(runtime, testing::tiny_llama(), testing::target().weights(), Dtype::F32);
  auto target_cache = target.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { device.forward(*target_cache, in); }),
                  "the KV cache has 3 layers of width 16, the head needs 1 of width 24");
  const EagleHead elsewhere = cuda::cuda_eagle_head(testing::test_device(), reference);
  auto foreign = elsewhere.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { device.forward(*foreign, in); }), "the KV cache lives on another device runtime");
  EXPECT_EQ(target_cache->length(), 0);
  EXPECT_EQ(foreign->length(), 0);

  auto cache = device.new_cache(8);
  device.forward(*cache, random_input(reference, 2, 1));
  EagleHead::Input bad = in;
  bad.features.resize(3, 48);
  EXPECT_CONTAINS(error_of([&] { device.forward(*cache, bad); }), "features are 48 wide, expected 144");
  bad = in;
  bad.tokens[1] = 97;
  EXPECT_CONTAINS(error_of([&] { device.forward(*cache, bad); }), "token id 97 outside the vocabulary [0, 97)");
  EXPECT_EQ(cache->length(), 2);
  auto small = device.new_cache(2);
  EXPECT_CONTAINS(error_of([&] { device.forward(*small, in); }), "KV cache: 3 new tokens do not fit");
  EXPECT_EQ(small->length(), 0);
  EXPECT_CONTAINS(error_of([&] { cuda::cuda_eagle_head(nullptr, reference); }), "no device runtime given");
}

}  // namespace
}  // namespace specdec
