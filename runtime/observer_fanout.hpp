#pragma once
// A DecodeObserver that forwards every report to several others, in order (e.g. --stream and
// --events on one run). Null observers are skipped; the observers must outlive the fan-out.
#include <initializer_list>
#include <vector>

#include "reference/decoding/decode_observer.hpp"

namespace specdec {

class ObserverFanout final : public DecodeObserver {
 public:
  ObserverFanout() = default;
  ObserverFanout(std::initializer_list<DecodeObserver*> observers) {
    for (DecodeObserver* o : observers) add(o);
  }
  void add(DecodeObserver* o) {
    if (o) observers_.push_back(o);
  }
  bool empty() const { return observers_.empty(); }
  // The one observer to give a decoder: null for none, the observer itself for one, else this.
  DecodeObserver* get() { return observers_.empty() ? nullptr : observers_.size() == 1 ? observers_[0] : this; }

  void on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) override {
    for (DecodeObserver* o : observers_) o->on_prefill(prompt, prefill_ns);
  }
  void on_sequential_step(const SequentialStep& step) override {
    for (DecodeObserver* o : observers_) o->on_sequential_step(step);
  }
  void on_speculative_step(const SpeculativeStep& step) override {
    for (DecodeObserver* o : observers_) o->on_speculative_step(step);
  }
  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override {
    for (DecodeObserver* o : observers_) o->on_finish(output, stop_reason);
  }
  void on_fallback(const DrafterFallback& event) override {
    for (DecodeObserver* o : observers_) o->on_fallback(event);
  }

 private:
  std::vector<DecodeObserver*> observers_;
};

}  // namespace specdec
