#pragma once
// The prompts a sweep decodes: the bundled held-out prompts (a JSON object of category -> list of
// texts) and question files in the MT-Bench / Spec-Bench JSONL format, one object per line with
// "question_id" (or "id"), "category" and "turns" (a list of strings; the first turn is decoded).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace specdec::sweep {

struct Prompt {
  std::string set;       // a bundled set ("heldout", "context") or the file it came from
  std::string id;        // unique within the set: "prose-0", or the question id
  std::string category;  // domain: prose / code, or the question's category
  int index = 0;         // position within its category (the seed of seed "prompt")
  std::string text;
};

// The bundled held-out prompts (experiments/train/heldout_prompts.json).
std::string heldout_prompts_path();

// The bundled context prompts (experiments/train/context_prompts.json): held-out prompts whose
// natural continuation copies the prompt (categories prose-repeat, code-repeat, prose-recall),
// where n-gram / suffix drafting wins.
std::string context_prompts_path();

// The bundled sets by name: "heldout", "context".
const std::vector<std::string>& bundled_prompt_sets();
bool is_bundled_prompt_set(const std::string& name);
// A bundled set by name, at most `per_category` of each category (0 = all); the rows' set is the
// name. Throws specdec::Error naming the known sets for another name.
std::vector<Prompt> load_bundled_prompts(const std::string& name, int per_category);

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
