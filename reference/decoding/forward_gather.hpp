#pragma once
// Drafter forwards batched across sequences without writing the drafters twice. Each sequence's
// Proposer::propose runs as a task on its own thread, one task at a time (a baton handed on in
// task order, so a run is deterministic). A forward a task makes through a model this gather
// wrapped parks that task; once every unfinished task is parked, the parked forwards go to one
// forward_batch per model, in task order, and the tasks resume with their results. Each task thus
// sees exactly the results it would see alone (forward_batch is bitwise forward per entry), while
// the drafter reads its weights once per round for every sequence.
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/model/language_model.hpp"

namespace specdec {

class ForwardGather {
 public:
  ForwardGather();
  ~ForwardGather();
  ForwardGather(const ForwardGather&) = delete;
  ForwardGather& operator=(const ForwardGather&) = delete;

  // `model` with its forwards gathered when made from inside run()'s tasks (elsewhere they pass
  // straight through). Owned by the gather, one per model; `model` must outlive the gather.
  const LanguageModel& wrap(const LanguageModel& model);
  const EagleHead& wrap(const EagleHead& head);

  // Runs every task to its end as described above. When tasks throw, the others are abandoned at
  // their next forward and the first failing task's exception (in task order) is rethrown.
  void run(const std::vector<std::function<void()>>& tasks);

  // forward_batch calls made so far, and the forwards they held.
  int batches() const { return batches_; }
  int forwards() const { return forwards_; }

 private:
  class GatheredModel;
  class GatheredHeadEngine;
  struct Task;
  struct Parked;

  // Called by the wrappers: parks the calling task until its forward has been computed.
  ForwardResult park(const LanguageModel& inner, KVCache& cache, const ForwardRequest& request);
  EagleHead::Output park(const EagleHead& inner, KVCache& cache, const EagleHead::Input& in);
  void park_current(Parked parked);
  void compute_parked();
  // Hands the baton to task i and waits until it parks or finishes.
  void resume(std::size_t i, std::unique_lock<std::mutex>& lock);

  std::map<const LanguageModel*, std::unique_ptr<GatheredModel>> models_;
  std::map<const EagleHead*, std::unique_ptr<EagleHead>> heads_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::mutex mutex_;
  std::condition_variable scheduler_;  // the scheduler waits here for the baton (each task on its own)
  long running_ = -1;  // the task holding the baton; −1: the scheduler
  int batches_ = 0;
  int forwards_ = 0;
};

}  // namespace specdec
