// Prompt sets: the bundled held-out prompts and MT-Bench / Spec-Bench question files, with bad
// lines reported by line number.
#include <gtest/gtest.h>

#include "experiments/sweep/prompt_set.hpp"
#include "reference/core/error.hpp"

namespace specdec::sweep {
namespace {

TEST(PromptSet, HeldoutPromptsByCategory) {
  const auto all = load_category_prompts(heldout_prompts_path(), "heldout", 0);
  ASSERT_EQ(all.size(), 16u);
  const auto two = load_category_prompts(heldout_prompts_path(), "heldout", 2);
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(two[0].category, "prose");  // categories in the file's order
  EXPECT_EQ(two[1].id, "prose-1");
  EXPECT_EQ(two[1].index, 1);
  EXPECT_EQ(two[2].id, "code-0");
  EXPECT_EQ(two[2].index, 0);
}

// The context set: three categories of 8, in the file's order, each prompt leaving room in the
// bundled models' context (2048 positions: <bos> + the prompt's bytes + 256 new tokens).
TEST(PromptSet, ContextPromptsByCategoryFitTheContext) {
  const auto all = load_bundled_prompts("context", 0);
  ASSERT_EQ(all.size(), 24u);
  const std::vector<std::string> categories = {"prose-repeat", "code-repeat", "prose-recall"};
  for (size_t c = 0; c < categories.size(); ++c) {
    for (int i = 0; i < 8; ++i) {
      const Prompt& p = all[c * 8 + i];
      EXPECT_EQ(p.set, "context");
      EXPECT_EQ(p.category, categories[c]);
      EXPECT_EQ(p.index, i);
      EXPECT_EQ(p.id, categories[c] + "-" + std::to_string(i));
      EXPECT_LE(1 + p.text.size() + 256, 2048u) << p.id << ": " << p.text.size() << " bytes";
      EXPECT_GE(p.text.size(), 200u) << p.id << ": a prompt to copy from";
    }
  }
  // The continuation is cued by text the prompt already holds: the cue after the last blank line
  // (a code-repeat cue renames the function: "def NAME_v2(").
  for (const Prompt& p : all) {
    const auto cut = p.text.rfind("\n\n");
    ASSERT_NE(cut, std::string::npos) << p.id;
    std::string cue = p.text.substr(cut + 2);
    if (p.category == "code-repeat") {
      ASSERT_EQ(cue.substr(cue.size() - 4), "_v2(") << p.id;
      cue = cue.substr(0, cue.size() - 4) + "(";
    }
    EXPECT_NE(p.text.substr(0, cut).find(cue), std::string::npos) << p.id << ": cue '" << cue << "'";
  }
  EXPECT_EQ(load_bundled_prompts("context", 2).size(), 6u);
  EXPECT_EQ(load_bundled_prompts("heldout", 0).size(), 16u);
  EXPECT_EQ(context_prompts_path().substr(context_prompts_path().size() - 20), "context_prompts.json");
  EXPECT_THROW(load_bundled_prompts("mtbench", 0), Error);
}

TEST(PromptSet, QuestionJsonl) {
  const std::string text =
      R"({"question_id": 81, "category": "writing", "turns": ["Compose a blog post.", "Rewrite it."]})" "\n"
      "\n"
      R"({"id": "q2", "category": "coding", "turns": ["Write a sort."]})" "\r\n"
      R"({"question_id": 83, "category": "writing", "turns": ["A poem."]})" "\n";
  const auto q = parse_question_jsonl(text, "q.jsonl", 0);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].id, "81");
  EXPECT_EQ(q[0].text, "Compose a blog post.") << "the first turn is decoded";
  EXPECT_EQ(q[0].category, "writing");
  EXPECT_EQ(q[1].id, "q2");
  EXPECT_EQ(q[1].category, "coding");
  EXPECT_EQ(q[2].index, 1) << "second question of its category";
  EXPECT_EQ(parse_question_jsonl(text, "q.jsonl", 1).size(), 2u);
}

TEST(PromptSet, BadLinesNamedByNumber) {
  const std::string good = R"({"question_id": 1, "category": "x", "turns": ["a"]})" "\n";
  struct Case {
    const char* name;
    std::string line;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"not JSON", "{\"question_id\": 2, \"turns\": [\"b\"", "q.jsonl:3: not a JSON object"},
      {"no id", R"({"category": "x", "turns": ["b"]})", "q.jsonl:3: no \"question_id\""},
      {"no turns", R"({"question_id": 2})", "q.jsonl:3: \"turns\" must be a non-empty list"},
      {"empty turns", R"({"question_id": 2, "turns": []})", "q.jsonl:3: \"turns\" must be a non-empty list"},
      {"turn not a string", R"({"question_id": 2, "turns": [5]})", "q.jsonl:3: every turn must be a non-empty string"},
      {"repeated id", R"({"question_id": 1, "turns": ["b"]})", "q.jsonl:3: question id 1 appears twice"},
      {"category not a string", R"({"question_id": 2, "category": 7, "turns": ["b"]})", "q.jsonl:3: \"category\" must be a string"},
  };
  for (const Case& c : cases) {
    try {
      parse_question_jsonl(good + "\n" + c.line + "\n", "q.jsonl", 0);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << c.name << ": " << e.what();
    }
  }
  EXPECT_THROW(parse_question_jsonl("\n\n", "q.jsonl", 0), Error);
  EXPECT_THROW(load_prompt_file("prompts.txt", 0), Error);
  EXPECT_THROW(load_question_jsonl("/nonexistent/q.jsonl", 0), Error);
}

}  // namespace
}  // namespace specdec::sweep
