#include "reference/decoding/forward_gather.hpp"

#include <exception>
#include <thread>

namespace specdec {

namespace {

// Thrown into a task that is abandoned while parked (another task failed); never escapes run().
struct Abandoned {};

thread_local ForwardGather* current_gather = nullptr;
thread_local std::size_t current_task = 0;

}  // namespace

// One parked forward: of a language model or of an EAGLE head.
struct ForwardGather::Parked {
  const LanguageModel* model = nullptr;
  const ForwardRequest* request = nullptr;
  ForwardResult* result = nullptr;
  const EagleHead* head = nullptr;
  const EagleHead::Input* input = nullptr;
  EagleHead::Output* output = nullptr;
  KVCache* cache = nullptr;
};

struct ForwardGather::Task {
  enum class State { runnable, parked, finished };
  State state = State::runnable;
  Parked parked;
  bool abandon = false;
  std::exception_ptr error;
  std::condition_variable wake;  // one per task: handing on the baton wakes only its holder
  std::thread thread;
};

class ForwardGather::GatheredModel final : public LanguageModel {
 public:
  GatheredModel(const LanguageModel& inner, ForwardGather& gather) : inner_(inner), gather_(gather) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override {
    return gather_.park(inner_, cache, request);
  }
  std::vector<ForwardResult> forward_batch(const std::vector<BatchEntry>& batch) const override {
    return inner_.forward_batch(batch);
  }

 private:
  const LanguageModel& inner_;
  ForwardGather& gather_;
};

class ForwardGather::GatheredHeadEngine final : public EagleHeadEngine {
 public:
  GatheredHeadEngine(const EagleHead& inner, ForwardGather& gather) : inner_(inner), gather_(gather) {}
  std::string name() const override { return inner_.engine() ? inner_.engine()->name() : "reference"; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const override {
    return gather_.park(inner_, cache, in);
  }
  std::vector<EagleHead::Output> forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const override {
    return inner_.forward_batch(batch);
  }

 private:
  EagleHead inner_;  // shares the weights; computes on the inner head's engine
  ForwardGather& gather_;
};

ForwardGather::ForwardGather() = default;

ForwardGather::~ForwardGather() {
  for (auto& t : tasks_)
    if (t->thread.joinable()) t->thread.join();
}

const LanguageModel& ForwardGather::wrap(const LanguageModel& model) {
  auto& slot = models_[&model];
  if (!slot) slot = std::make_unique<GatheredModel>(model, *this);
  return *slot;
}

const EagleHead& ForwardGather::wrap(const EagleHead& head) {
  auto& slot = heads_[&head];
  if (!slot) slot = std::make_unique<EagleHead>(head.with_engine(std::make_shared<GatheredHeadEngine>(head, *this)));
  return *slot;
}

ForwardResult ForwardGather::park(const LanguageModel& inner, KVCache& cache, const ForwardRequest& request) {
  if (current_gather != this) return inner.forward(cache, request);
  ForwardResult result;
  Parked p;
  p.model = &inner;
  p.cache = &cache;
  p.request = &request;
  p.result = &result;
  park_current(p);
  return result;
}

EagleHead::Output ForwardGather::park(const EagleHead& inner, KVCache& cache, const EagleHead::Input& in) {
  if (current_gather != this) return inner.forward(cache, in);
  EagleHead::Output output;
  Parked p;
  p.head = &inner;
  p.cache = &cache;
  p.input = &in;
  p.output = &output;
  park_current(p);
  return output;
}

void ForwardGather::park_current(Parked parked) {
  std::unique_lock<std::mutex> lock(mutex_);
  Task& task = *tasks_[current_task];
  task.parked = parked;
  task.state = Task::State::parked;
  running_ = -1;
  scheduler_.notify_one();
  const auto me = static_cast<long>(current_task);
  task.wake.wait(lock, [&] { return running_ == me; });
  if (task.abandon) throw Abandoned{};
}

void ForwardGather::resume(std::size_t i, std::unique_lock<std::mutex>& lock) {
  running_ = static_cast<long>(i);
  tasks_[i]->wake.notify_one();
  scheduler_.wait(lock, [&] { return running_ == -1; });
}

void ForwardGather::compute_parked() {
  // Group the parked forwards by model, keeping task order within a group and the order in which
  // the models first appear.
  std::vector<const void*> order;
  std::map<const void*, std::vector<Task*>> groups;
  for (auto& t : tasks_) {
    if (t->state != Task::State::parked) continue;
    const void* key = t->parked.model ? static_cast<const void*>(t->parked.model) : t->parked.head;
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(t.get());
  }
  for (const void* key : order) {
    const std::vector<Task*>& group = groups[key];
    if (group.front()->parked.model) {
      std::vector<BatchEntry> batch;
      for (Task* t : group) batch.push_back({t->parked.cache, t->parked.request});
      std::vector<ForwardResult> out = group.front()->parked.model->forward_batch(batch);
      for (std::size_t i = 0; i < group.size(); ++i) *group[i]->parked.result = std::move(out[i]);
    } else {
      std::vector<EagleHead::BatchEntry> batch;
      for (Task* t : group) batch.push_back({t->parked.cache, t->parked.input});
      std::vector<EagleHead::Output> out = group.front()->parked.head->forward_batch(batch);
      for (std::size_t i = 0; i < group.size(); ++i) *group[i]->parked.output = std::move(out[i]);
    }
    ++batches_;
    forwards_ += static_cast<int>(group.size());
  }
}

void ForwardGather::run(const std::vector<std::function<void()>>& tasks) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& t : tasks_)
    if (t->thread.joinable()) t->thread.join();
  tasks_.clear();
  running_ = -1;
  for (std::size_t i = 0; i < tasks.size(); ++i) tasks_.push_back(std::make_unique<Task>());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    tasks_[i]->thread = std::thread([this, i, &tasks] {
      Task& task = *tasks_[i];
      {
        std::unique_lock<std::mutex> l(mutex_);
        task.wake.wait(l, [&] { return running_ == static_cast<long>(i); });
      }
      current_gather = this;
      current_task = i;
      try {
        tasks[i]();
      } catch (const Abandoned&) {
      } catch (...) {
        task.error = std::current_exception();
      }
      current_gather = nullptr;
      std::unique_lock<std::mutex> l(mutex_);
      task.state = Task::State::finished;
      running_ = -1;
      scheduler_.notify_one();
    });
  }

  std::exception_ptr failure;
  for (;;) {
    for (std::size_t i = 0; i < tasks_.size(); ++i)
      if (tasks_[i]->state == Task::State::runnable) resume(i, lock);
    for (auto& t : tasks_)
      if (!failure && t->error) failure = t->error;
    bool any_parked = false;
    for (auto& t : tasks_) any_parked = any_parked || t->state == Task::State::parked;
    if (!any_parked) break;
    if (!failure) {
      lock.unlock();  // every task is parked: nothing else touches the tasks now
      try {
        compute_parked();
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
    }
    for (auto& t : tasks_) {
      if (t->state != Task::State::parked) continue;
      t->abandon = failure != nullptr;
      t->state = Task::State::runnable;
    }
  }
  lock.unlock();
  for (auto& t : tasks_) t->thread.join();
  tasks_.clear();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace specdec
