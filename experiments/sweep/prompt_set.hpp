#pragma once
// The prompts a sweep decodes: the bundled held-out prompts (a JSON object of category -> list of
// texts) and question files in the MT-Bench / Spec-Bench JSONL format, one object per line with
// "question_id" (or "id"), "category" and "turns" (a list of strings; the first turn is decoded).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace specdec::sweep {

struct Prompt {
  std::string set;       // "heldout" or the file it came from
  std::string id;        // unique within the set: "prose-0", or the question id
  std::string category;  // domain: prose / code, or the question's category
  int index = 0;         // position within its category (the seed of seed "prompt")
  std::string text;
};

// The bundled held-out prompts (experiments/train/heldout_prompts.json).
std::string heldout_prompts_path();

// A JSON object {category: [text, ...]}; at most `per_category` of each (0 = all). `set` names
// the set in the rows. Throws specdec::Error naming the file and the field.
std::vector<Prompt> load_category_prompts(const std::string& path, const std::string& set, int per_category);

// JSONL questions. A bad line (not JSON, no id, no non-empty turns of strings, a repeated id) is
// an error naming the file and its line number. Empty lines are skipped.
std::vector<Prompt> parse_question_jsonl(const std::string& text, const std::string& source, int per_category);
std::vector<Prompt> load_question_jsonl(const std::string& path, int per_category);

// A prompt file by its extension: .jsonl questions, .json a category object.
std::vector<Prompt> load_prompt_file(const std::string& path, int per_category);

}  // namespace specdec::sweep
