#pragma once
// The exact fields of a trace step, as one table: each field's name, how to read it from a
// StepRecord and how to describe a difference in it. Every comparison of two steps reads it:
// semantically_equal (traces/trace_compare.cpp), specdec trace diff (validation/trace_diff.cpp)
// and specdec validate (validation/step_comparison.cpp). Each comparison keeps its own order of
// fields (which difference it names first) and its own wording, drawn from the table below.
// Logits rows are not exact fields: they compare under the tolerance policy (or, in
// semantically_equal, bit for bit row by row).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include "traces/trace.hpp"

namespace specdec {

enum class StepFieldId {
  position,
  emitted_tokens,
  draft_tokens,
  draft_parents,
  accepted_path,
  accept_decisions,
  accept_nodes,
  accept_uniforms,
  bonus_token,
  random_counters,
  draft_logit_nodes,
};

// How a field is read from a step: a pointer to its StepRecord member.
using StepFieldMember =
    std::variant<int64_t StepRecord::*, int32_t StepRecord::*, std::vector<int32_t> StepRecord::*,
                 std::vector<uint8_t> StepRecord::*, std::vector<double> StepRecord::*,
                 std::vector<std::array<uint32_t, 4>> StepRecord::*>;

struct StepField {
  StepFieldId id;
  const char* name;  // as in StepRecord and traces/SCHEMA.md: "emitted_tokens"
  // A difference in one sentence (specdec trace diff), "{a}" and "{b}" standing for the two
  // values (comma_values); a field whose values make no short line has a sentence without them.
  const char* sentence;
  StepFieldMember member;
};

// Every exact field, in the order semantically_equal compares them (draft_logit_nodes last; it
// compares the logits rows just before it).
const std::vector<StepField>& exact_step_fields();
const StepField& step_field(StepFieldId id);

// Whether two steps hold the same value of the field: floats bit for bit (NaN equals itself,
// 0.0 differs from -0.0), everything else by ==.
bool same_field(const StepField& field, const StepRecord& a, const StepRecord& b);
// The first field, in `order`, whose values differ; nullptr when they all agree.
const StepField* first_differing_field(std::initializer_list<StepFieldId> order, const StepRecord& a, const StepRecord& b);

// How a difference is described. Each of the three comparisons words it its own way:
// - brief_value (specdec validate): "[3 5 8]", "[0.25 0.5]" (3 significant digits),
//   "[{1,2,3,4}]", "7";
// - element_difference (semantically_equal): the first differing element, after the field's
//   path: "[2]: 5 vs 7", ": length 3 vs 4", ": 5 vs 7" (a single value), floats with their bits;
// - difference_sentence (specdec trace diff): the field's sentence with comma_values for {a} and
//   {b}: "emitted tokens differ: [1,2] vs [1,3]", "positions differ: 5 vs 6".
std::string brief_value(const StepField& field, const StepRecord& step);
std::string element_difference(const StepField& field, const StepRecord& a, const StepRecord& b);
std::string comma_values(const StepField& field, const StepRecord& step);  // "[1,2,3]", "7"
std::string difference_sentence(const StepField& field, const StepRecord& a, const StepRecord& b);

}  // namespace specdec
