#include "experiments/sweep/prompt_set.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/io/input_file.hpp"
#include "reference/io/json_input.hpp"

namespace specdec::sweep {

namespace {

// A regular file of bounded size (a FIFO or /dev/zero is refused before it is opened).
std::string read_text(const std::string& path, const std::string& what) { return read_input_file(path, what); }

// A prompt longer than any tokenizer should be given is refused where it is read.
void check_prompt_size(const std::string& text, const std::string& where) {
  check_input_limit(where, "the prompt's text (bytes)", static_cast<long long>(text.size()), kMaxPromptBytes);
}

// Keeps at most `per_category` prompts of each category (0 = all), in file order.
std::vector<Prompt> limit_per_category(std::vector<Prompt> all, int per_category) {
  std::map<std::string, int> seen;
  std::vector<Prompt> out;
  for (Prompt& p : all) {
    p.index = seen[p.category]++;
    if (per_category == 0 || p.index < per_category) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string heldout_prompts_path() { return SPECDEC_HELDOUT_PROMPTS; }
std::string context_prompts_path() { return SPECDEC_CONTEXT_PROMPTS; }

const std::vector<std::string>& bundled_prompt_sets() {
  static const std::vector<std::string> names = {"heldout", "context"};
  return names;
}

bool is_bundled_prompt_set(const std::string& name) {
  const auto& n = bundled_prompt_sets();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::vector<Prompt> load_bundled_prompts(const std::string& name, int per_category) {
  if (name == "heldout") return load_category_prompts(heldout_prompts_path(), name, per_category);
  if (name == "context") return load_category_prompts(context_prompts_path(), name, per_category);
  throw Error("unknown prompt set '" + name + "'; the bundled sets are heldout, context");
}

std::vector<Prompt> load_category_prompts(const std::string& path, const std::string& set, int per_category) {
  // Ordered: categories keep the file's order (prose before code in the bundled set).
  nlohmann::ordered_json j;
  try {
    j = parse_ordered_json(read_text(path, "prompt file"), path);  // nesting bounded: see json_input.hpp
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; expected a JSON object of category -> list of prompt texts");
  }
  if (!j.is_object() || j.empty()) {
    throw Error(path + ": expected a JSON object of category -> list of prompt texts");
  }
  std::vector<Prompt> all;
  for (const auto& [category, texts] : j.items()) {
    if (!texts.is_array()) throw Error(path + ": category '" + category + "' is not a list of prompt texts");
    int i = 0;
    for (const auto& t : texts) {
      if (!t.is_string() || t.get<std::string>().empty()) {
        throw Error(path + ": " + category + "[" + std::to_string(i) + "] is not a non-empty string");
      }
      check_prompt_size(t.get_ref<const std::string&>(), path + ": " + category + "[" + std::to_string(i) + "]");
      all.push_back({set, category + "-" + std::to_string(i), category, 0, t.get<std::string>()});
      ++i;
    }
  }
  return limit_per_category(std::move(all), per_category);
}

std::vector<Prompt> parse_question_jsonl(const std::string& text, const std::string& source, int per_category) {
  std::vector<Prompt> all;
  std::set<std::string> ids;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(number);
    nlohmann::json j;
    try {
      j = parse_json(line, where);  // nesting bounded: see json_input.hpp
    } catch (const Error& e) {
      throw Error(where + ": not a JSON object; expected {\"question_id\": ..., \"category\": ..., \"turns\": [\"...\"]} (" +
                  e.what() + ")");
    }
    if (!j.is_object()) {
      throw Error(where + ": not a JSON object; expected {\"question_id\": ..., \"category\": ..., \"turns\": [\"...\"]}");
    }
    const char* id_field = j.contains("question_id") ? "question_id" : j.contains("id") ? "id" : nullptr;
    if (!id_field) throw Error(where + ": no \"question_id\" (or \"id\")");
    const auto& idv = j[id_field];
    if (!idv.is_string() && !idv.is_number_integer()) throw Error(where + ": \"" + id_field + "\" must be a string or an integer");
    const std::string id = idv.is_string() ? idv.get<std::string>() : idv.dump();
    if (!ids.insert(id).second) throw Error(where + ": question id " + id + " appears twice");
    std::string category = "none";
    if (j.contains("category")) {
      if (!j["category"].is_string()) throw Error(where + ": \"category\" must be a string");
      category = j["category"].get<std::string>();
    }
    if (!j.contains("turns") || !j["turns"].is_array() || j["turns"].empty()) {
      throw Error(where + ": \"turns\" must be a non-empty list of strings");
    }
    for (const auto& t : j["turns"]) {
      if (!t.is_string() || t.get<std::string>().empty()) throw Error(where + ": every turn must be a non-empty string");
    }
    check_prompt_size(j["turns"][0].get_ref<const std::string&>(), where);
    all.push_back({source, id, category, 0, j["turns"][0].get<std::string>()});
  }
  if (all.empty()) throw Error(source + ": no questions (expected one JSON object per line)");
  return limit_per_category(std::move(all), per_category);
}

std::vector<Prompt> load_question_jsonl(const std::string& path, int per_category) {
  return parse_question_jsonl(read_text(path, "question file"), path, per_category);
}

std::vector<Prompt> load_prompt_file(const std::string& path, int per_category) {
  const auto ends_with = [&](const std::string& e) { return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0; };
  if (ends_with(".jsonl")) return load_question_jsonl(path, per_category);
  if (ends_with(".json")) return load_category_prompts(path, path, per_category);
  throw Error("prompt file '" + path + "': expected .jsonl (MT-Bench / Spec-Bench questions) or .json (category -> texts)");
}

}  // namespace specdec::sweep
