#pragma once
// A speculation policy decides, per step and per sequence, how deep the drafter drafts: the
// method's whole shape, less, or nothing (plain decoding for that step). It sees what the sequence
// has observed — acceptance per position, the drafter's confidences, the batch size, step times —
// and nothing of the target's random draws, so decoding stays lossless under every policy: greedy
// and coupled decoding equal sequential decoding, sampled decoding keeps the target's distribution.
//
// Lifecycle, once per step of one sequence (reference/decoding/sequence_decoder.cpp):
//   plan(context)  → depth d (0: plain step) and whether the stop rule applies;
//   draft_at / draft_after → asked by a chain drafter around each draft (the DraftStopRule);
//   observe(outcome) after verification.
// One object per sequence; policies are made by name from the registry (registry.hpp).
#include <string>
#include <vector>

#include "reference/drafting/proposer.hpp"

namespace specdec {

struct StepContext {
  int step = 0;        // decoding steps of this sequence so far (plain steps included)
  int batch_size = 1;  // sequences in flight in this step (1 when decoding alone)
  int max_depth = 1;   // the method's whole draft depth (its K, or its tree's depth): the ceiling
};

struct StepPlan {
  int depth = 0;           // draft no deeper than this (clamped to max_depth); 0 = a plain decoding step
  bool stop_rule = false;  // chain drafters ask draft_at / draft_after around each draft
  int min_drafts = 0;      // a proposal with fewer drafts is discarded: the step decodes plainly
};

struct StepOutcome {
  int planned_depth = 0;   // the plan's depth (0: a plain step, nothing below is drafted)
  int drafted_depth = 0;   // the deepest draft proposed
  int drafted_nodes = 0;   // draft nodes proposed
  int accepted = 0;        // draft nodes accepted (the accepted path's length)
  // The drafter's confidence in each chained draft (draft_confidence), when the stop rule applied.
  const std::vector<double>* confidences = nullptr;
  int batch_size = 1;
  double draft_s = 0, verify_s = 0;  // measured times of the step's drafting and verification
};

class SpeculationPolicy : public DraftStopRule {
 public:
  // The registry name.
  virtual std::string name() const = 0;
  virtual StepPlan plan(const StepContext& context) = 0;
  virtual void observe(const StepOutcome& outcome) = 0;
  bool draft_at(int /*depth*/, double /*top_probability*/) const override { return true; }
  bool draft_after(int /*depth*/, double /*confidence*/, double /*top_probability*/) const override { return true; }
  // A few words on the policy's state for live monitoring ("ema 2.41", "K 6", "off").
  virtual std::string state() const { return ""; }
};

}  // namespace specdec
