#include "runtime/step_events.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"

namespace specdec {

namespace {

using json = nlohmann::ordered_json;  // keys in the documented order, "event" first

// Milliseconds / seconds with a microsecond's precision: short lines, nothing a dashboard misses.
double rounded(double x, double scale) { return std::round(x * scale) / scale; }
double ms(int64_t ns) { return rounded(static_cast<double>(ns) * 1e-6, 1e3); }

}  // namespace

StepEventSink::StepEventSink(std::ostream& out) : out_(&out), start_(std::chrono::steady_clock::now()) {}

StepEventSink::~StepEventSink() = default;

std::unique_ptr<StepEventSink> StepEventSink::open(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  if (path.empty()) throw Error(what + ": give a file name");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(what + " " + path + " is a directory; give a file name (e.g. " + path + "/events.jsonl)");
  const fs::path parent = fs::absolute(path, ec).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw Error(what + " " + path + ": the directory " + parent.string() + " does not exist");
  }
  errno = 0;
  auto file = std::make_unique<std::ofstream>(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!*file) {
    const int err = errno;
    throw Error(what + " " + path + ": cannot open it for writing" + (err ? std::string(" (") + std::strerror(err) + ")" : std::string()));
  }
  auto sink = std::make_unique<StepEventSink>(*file);
  sink->path_ = path;
  sink->owned_ = std::move(file);
  return sink;
}

void StepEventSink::write_line(const std::string& line) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) return;
  *out_ << line << '\n';
  out_->flush();
  if (!*out_) failed_ = true;
}

void StepEventSink::close() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_) {
    out_->flush();
    if (!*out_) failed_ = true;
  }
  if (failed_) {
    throw Error("--events " + (path_.empty() ? std::string("stream") : path_) +
                ": writing the events failed (disk full or the stream closed); the file is incomplete");
  }
}

double StepEventSink::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void StepEventObserver::on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) {
  decode_start_s_ = sink_.elapsed_s();
  const json j = {{"event", "prefill"},
                  {"sequence", sequence_},
                  {"prompt_tokens", prompt.size()},
                  {"ms", ms(prefill_ns)},
                  {"t_s", rounded(decode_start_s_, 1e6)}};
  sink_.write_line(j.dump());
}

void StepEventObserver::on_sequential_step(const SequentialStep& step) {
  if (step.index == 0) {  // the first token, the prefill's: no verification step
    ++tokens_;
    return;
  }
  StepFields f;
  f.index = step.index;
  f.position = step.position;
  f.emitted = 1;
  f.verified = 1;
  f.verify_ns = step.step_ns;
  this->step(f);
}

void StepEventObserver::on_speculative_step(const SpeculativeStep& step) {
  StepFields f;
  f.index = step.index;
  f.position = step.root_position;
  f.planned_depth = step.planned_depth;
  if (step.tree) {
    f.drafted = step.tree->size();
    for (int n = 0; n < step.tree->size(); ++n) f.drafted_depth = std::max(f.drafted_depth, step.tree->depth(n));
  }
  if (step.verify) {
    f.accepted = static_cast<int>(step.verify->accepted_nodes.size());
    f.verified = static_cast<int>(step.verify->emitted.size());
  } else {
    f.verified = static_cast<int>(step.emitted.size());
  }
  f.emitted = static_cast<int>(step.emitted.size());
  f.policy_state = &step.policy_state;
  f.draft_ns = step.draft_ns;
  f.verify_ns = step.verify_ns;
  this->step(f);
}

void StepEventObserver::step(const StepFields& f) {
  ++steps_;
  drafted_ += f.drafted;
  accepted_ += f.accepted;
  verified_ += f.verified;
  tokens_ += f.emitted;
  json j = {{"event", "step"},
            {"sequence", sequence_},
            {"step", f.index},
            {"position", f.position},
            {"planned_depth", f.planned_depth},
            {"drafted_depth", f.drafted_depth},
            {"drafted", f.drafted},
            {"accepted", f.accepted},
            {"emitted", f.emitted}};
  if (f.policy_state && !f.policy_state->empty()) j["policy_state"] = *f.policy_state;
  j["draft_ms"] = ms(f.draft_ns);
  j["verify_ms"] = ms(f.verify_ns);
  // null until something was drafted (a run of plain steps has no acceptance rate).
  j["running_acceptance"] = drafted_ > 0 ? json(rounded(static_cast<double>(accepted_) / drafted_, 1e6)) : json(nullptr);
  j["running_al"] = rounded(static_cast<double>(verified_) / steps_, 1e6);
  j["tokens"] = tokens_;
  j["t_s"] = rounded(sink_.elapsed_s(), 1e6);
  // Policy states are ASCII; replace keeps a stray byte from failing the run.
  sink_.write_line(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

void StepEventObserver::on_fallback(const DrafterFallback& event) {
  ++fallbacks_;
  const json j = {{"event", "fallback"},      {"sequence", sequence_},   {"step", event.step},
                  {"drafter", event.drafter}, {"reason", event.reason}, {"next", event.next},
                  {"t_s", rounded(sink_.elapsed_s(), 1e6)}};
  sink_.write_line(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

void StepEventObserver::on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) {
  const double now = sink_.elapsed_s();
  const double decode_s = decode_start_s_ >= 0 ? now - decode_start_s_ : 0.0;
  const std::size_t tokens = output.size();
  const double tokens_per_s = tokens >= 2 && decode_s > 0 ? static_cast<double>(tokens - 1) / decode_s : 0.0;
  const json j = {{"event", "finish"},
                  {"sequence", sequence_},
                  {"tokens", tokens},
                  {"stop_reason", stop_reason},
                  {"steps", steps_},
                  {"drafted", drafted_},
                  {"accepted", accepted_},
                  {"al", steps_ > 0 ? rounded(static_cast<double>(verified_) / steps_, 1e6) : 0.0},
                  {"tokens_per_s", rounded(tokens_per_s, 1e3)},
                  {"fallbacks", fallbacks_},
                  {"t_s", rounded(now, 1e6)}};
  sink_.write_line(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace specdec
