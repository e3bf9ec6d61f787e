// The tokenizers on small hand-written tokenizer.json files whose ids can be worked out by hand:
// BPE merge order, byte fallback, unknown-token fusing, Unigram's best path, added-token matching
// (lstrip, rstrip, single_word, normalized), post-processor templates, tokenizer_config.json and
// generation_config.json, streaming decoding, and a clear error for every malformed field.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/io/vocabulary.hpp"
#include "tests/reference/error_capture.hpp"
#include "text/byte_level.hpp"
#include "text/byte_tokenizer.hpp"
#include "text/hf_tokenizer.hpp"
#include "text/load_tokenizer.hpp"
#include "text/normalizer.hpp"
#include "text/regex.hpp"
#include "text/utf8.hpp"

namespace specdec::text {
namespace {

namespace fs = std::filesystem;
using specdec::testing::error_of;
using Ids = std::vector<int32_t>;

class TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("specdec-text-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& content) { std::ofstream(dir_ / name) << content; }
  void write(const std::string& name, const nlohmann::json& j) { write(name, j.dump()); }
  std::unique_ptr<HfTokenizer> load() { return HfTokenizer::load(dir_); }
  std::string error_of_load() {
    try {
      load();
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "loading " << dir_ << " succeeded, expected an error";
    return "";
  }
  // One edit of byte_level_bpe() that loading must refuse with `expected` in the error.
  struct BadField {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* expected;
  };
  void expect_each_refused(const std::vector<BadField>& cases);
  fs::path dir_;
};

// A byte-level BPE over the letters a, b, c and space: merges "b c" (rank 0), "a b" (1), "a bc" (2).
nlohmann::json byte_level_bpe() {
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", 7}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"\xC4\xA0", 3}, {"bc", 4}, {"ab", 5}, {"abc", 6}}},
            {"merges", {{"b", "c"}, "a b", {"a", "bc"}}}}}};
}

void TokenizerFiles::expect_each_refused(const std::vector<BadField>& cases) {
  for (const BadField& c : cases) {
    nlohmann::json j = byte_level_bpe();
    c.edit(j);
    write("tokenizer.json", j);
    const std::string e = error_of_load();
    EXPECT_NE(e.find("tokenizer.json: "), std::string::npos) << c.what << ": " << e;
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.what << ": expected '" << c.expected << "' in: " << e;
  }
}

TEST_F(TokenizerFiles, BpeMergesLowestRankFirst) {
  write("tokenizer.json", byte_level_bpe());
  const auto t = load();
  // "abc": b+c (rank 0) before a+b (rank 1), then a+bc. "ab": a+b. " cab": Ġ c ab (a separate word).
  EXPECT_EQ(t->encode("abc", false), (Ids{6}));
  EXPECT_EQ(t->encode("ab", false), (Ids{5}));
  EXPECT_EQ(t->encode("abc cab", false), (Ids{6, 3, 2, 5}));
  EXPECT_EQ(t->decode({6, 3, 2, 5}), "abc cab");
  EXPECT_EQ(t->token_text(3), " ");
  EXPECT_EQ(t->size(), 8);
}

TEST_F(TokenizerFiles, BpeLeftmostAmongEqualRanks) {
  nlohmann::json j = byte_level_bpe();
  j["model"]["vocab"]["aa"] = 8;
  j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "a"})});
  write("tokenizer.json", j);
  EXPECT_EQ(load()->encode("aaa", false), (Ids{8, 0}));  // (aa)a, not a(aa)
}

TEST_F(TokenizerFiles, AddedTokensAndTemplate) {
  nlohmann::json j = byte_level_bpe();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {7}}, {"tokens", {"<s>"}}}}}}};
  write("tokenizer.json", j);
  const auto t = load();
  EXPECT_EQ(t->encode("ab<s>c"), (Ids{7, 5, 7, 2}));
  EXPECT_EQ(t->encode("ab<s>c", false), (Ids{5, 7, 2}));
  EXPECT_EQ(t->decode({7, 5, 2}), "<s>abc");
  EXPECT_EQ(t->decode({7, 5, 2}, true), "abc");
  EXPECT_EQ(t->special_template().before, (Ids{7}));
}

TEST_F(TokenizerFiles, AddedTokenStripAndSingleWord) {
  nlohmann::json j = byte_level_bpe();
  j["added_tokens"] = {{{"id", 7}, {"content", "ab"}, {"single_word", true}, {"normalized", false}},
                       {{"id", 8}, {"content", "c"}, {"lstrip", true}, {"rstrip", true}, {"normalized", false}}};
  write("tokenizer.json", j);
  const auto t = load();
  EXPECT_EQ(t->encode("ab", false), (Ids{7}));
  EXPECT_EQ(t->encode("abab", false), (Ids{5, 5}));  // inside a word: not the added token
  EXPECT_EQ(t->encode("a  c  a", false), (Ids{0, 8, 0}));  // c swallows the spaces beside it
}

TEST_F(TokenizerFiles, ByteFallbackAndUnknownFusing) {
  nlohmann::json vocab = {{"<unk>", 0}, {"\xE2\x96\x81", 1}, {"a", 2}, {"<0xC3>", 3}, {"<0xA9>", 4}};
  nlohmann::json j = {{"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                                                                          {{"type", "Replace"}, {"pattern", {{"String", " "}}},
                                                                           {"content", "\xE2\x96\x81"}}}}}},
                      {"pre_tokenizer", nullptr},
                      {"decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                                                       {{"type", "ByteFallback"}}, {{"type", "Fuse"}},
                                                                       {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
                      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}, {"unk_token", "<unk>"},
                                 {"byte_fallback", true}, {"fuse_unk", true}}}};
  write("tokenizer.json", j);
  const auto t = load();
  // é is not in the vocabulary but its bytes are; x and y are neither, and fuse into one <unk>.
  EXPECT_EQ(t->encode("a \xC3\xA9xy", false), (Ids{1, 2, 1, 3, 4, 0}));
  EXPECT_EQ(t->decode({1, 2, 1, 3, 4}), "a \xC3\xA9");
  EXPECT_EQ(t->decode({1, 3}), kReplacementChar);  // a lone byte of a character
  EXPECT_EQ(t->token_text(3), "<0xC3>");
  EXPECT_EQ(t->token_text(1), " ");
  EXPECT_EQ(t->token_text(99), "<99>");
}

TEST_F(TokenizerFiles, UnigramBestPath) {
  // "ab" as one piece scores -1.5, a + b -2: the single piece wins; "abab" = ab ab.
  nlohmann::json j = {{"pre_tokenizer", nullptr},
                      {"model", {{"type", "Unigram"}, {"unk_id", 0},
                                 {"vocab", nlohmann::json::array({nlohmann::json::array({"<unk>", 0.0}), nlohmann::json::array({"a", -1.0}),
                                                                  nlohmann::json::array({"b", -1.0}), nlohmann::json::array({"ab", -1.5}),
                                                                  nlohmann::json::array({"c", -3.0})})}}}};
  write("tokenizer.json", j);
  const auto t = load();
  EXPECT_EQ(t->encode("abab", false), (Ids{3, 3}));
  EXPECT_EQ(t->encode("bab", false), (Ids{2, 3}));
  EXPECT_EQ(t->encode("axyc", false), (Ids{1, 0, 4}));  // the unknown run xy fuses
}

TEST_F(TokenizerFiles, TokenizerConfigAndGenerationConfig) {
  write("tokenizer.json", byte_level_bpe());
  write("tokenizer_config.json", nlohmann::json{{"bos_token", {{"content", "<s>"}}}, {"add_bos_token", true}});
  write("generation_config.json", nlohmann::json{{"eos_token_id", {2, 3}}});
  const auto t = load();
  EXPECT_EQ(t->bos_id(), 7);
  EXPECT_EQ(t->eos_ids(), (Ids{2, 3}));
  EXPECT_EQ(t->encode("c"), (Ids{7, 2}));  // add_bos_token puts BOS first

  write("tokenizer_config.json", nlohmann::json{{"bos_token", "<nope>"}});
  const std::string e = error_of_load();
  EXPECT_NE(e.find("tokenizer_config.json: field 'bos_token' is '<nope>', which is not a token"), std::string::npos) << e;
}

TEST_F(TokenizerFiles, StreamingNeverCutsACharacter) {
  // Byte-level tokens for each byte of "é" (C3 A9) and of "€" (E2 82 AC).
  nlohmann::json j = byte_level_bpe();
  for (int b : {0xC3, 0xA9, 0xE2, 0x82, 0xAC}) j["model"]["vocab"][byte_level_char(static_cast<uint8_t>(b))] = 100 + b;
  write("tokenizer.json", j);
  const auto t = load();
  TextStream s(*t);
  EXPECT_EQ(s.push(0), "a");
  EXPECT_EQ(s.push(100 + 0xC3), "");
  EXPECT_EQ(s.push(100 + 0xA9), "\xC3\xA9");
  EXPECT_EQ(s.push(100 + 0xE2), "");
  EXPECT_EQ(s.push(100 + 0x82), "");
  EXPECT_EQ(s.push(100 + 0xAC), "\xE2\x82\xAC");
  EXPECT_EQ(s.push(100 + 0xE2), "");
  EXPECT_EQ(s.finish(), kReplacementChar);  // a character that never completed
}

TEST_F(TokenizerFiles, EveryMalformedFieldIsNamed) {
  const std::vector<BadField> cases = {
      {"no model", [](nlohmann::json& j) { j.erase("model"); }, "field 'model' is missing"},
      {"WordPiece", [](nlohmann::json& j) { j["model"]["type"] = "WordPiece"; }, "field 'model.type' is 'WordPiece', a model specdec does not support"},
      {"BertPreTokenizer", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}}; },
       "field 'pre_tokenizer.type' is 'BertPreTokenizer', a pre-tokenizer specdec does not support"},
      {"Precompiled", [](nlohmann::json& j) { j["normalizer"] = {{"type", "Precompiled"}}; }, "field 'normalizer.type' is 'Precompiled'"},
      {"WordPiece decoder", [](nlohmann::json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, "field 'decoder.type' is 'WordPiece'"},
      {"merge of an unknown token", [](nlohmann::json& j) { j["model"]["merges"][1] = "a z"; }, "field 'model.merges[1]' merges 'a' and 'z', but 'z' is not in model.vocab"},
      {"merge into an unknown token", [](nlohmann::json& j) { j["model"]["vocab"].erase("abc"); }, "field 'model.merges[2]' makes 'abc'"},
      {"merge of three", [](nlohmann::json& j) { j["model"]["merges"][1] = "a b c"; }, "field 'model.merges[1]' is 'a b c'"},
      {"negative id", [](nlohmann::json& j) { j["model"]["vocab"]["a"] = -1; }, "field 'model.vocab' gives token 'a' the id -1"},
      {"duplicate id", [](nlohmann::json& j) { j["model"]["vocab"]["a"] = 1; }, "gives the id 1 to both"},
      {"dropout", [](nlohmann::json& j) { j["model"]["dropout"] = 0.1; }, "field 'model.dropout' is 0.1"},
      {"unknown unk", [](nlohmann::json& j) { j["model"]["unk_token"] = "<unk>"; }, "field 'model.unk_token' is '<unk>', which is not in model.vocab"},
      {"bad regex", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}}; },
       "field 'pre_tokenizer.pattern': the regular expression does not compile"},
      {"bad behavior", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "a"}}}, {"behavior", "Sideways"}}; },
       "field 'pre_tokenizer.behavior' is 'Sideways'"},
      {"bad sequence", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {1}}}; },
       "field 'pre_tokenizer.pretokenizers[0]' must be an object"},
      {"undefined special", [](nlohmann::json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<x>"}}}}}}, {"special_tokens", nlohmann::json::object()}};
       }, "names the special token '<x>', which post_processor.special_tokens does not define"},
      {"added token without id", [](nlohmann::json& j) { j["added_tokens"][0].erase("id"); }, "field 'added_tokens[0].id' is missing"},
      {"metaspace scheme", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "sometimes"}}; },
       "field 'pre_tokenizer.prepend_scheme' is 'sometimes'"},
  };
  expect_each_refused(cases);
  write("tokenizer.json", std::string("{\"model\": "));
  EXPECT_NE(error_of_load().find("tokenizer.json: not valid JSON"), std::string::npos);
}

TEST_F(TokenizerFiles, InvalidUtf8TextIsRefused) {
  write("tokenizer.json", byte_level_bpe());
  try {
    load()->encode("ab\xFF");
    FAIL() << "encoding invalid UTF-8 succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 (byte 2"), std::string::npos) << e.what();
  }
}

TEST_F(TokenizerFiles, LoadOrderAndSentencePieceErrors) {
  specdec::Vocabulary::bytes(3, {{"<bos>", 0}, {"<eos>", 1}}).save(dir_ / "vocab.json");
  auto bytes = load_tokenizer(dir_, 0);
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes->encode("A"), (Ids{0, 3 + 'A'}));  // BOS from the model config, then bytes
  EXPECT_EQ(bytes->eos_ids(), (Ids{1}));
  write("tokenizer.model", std::string("not a protobuf"));
  try {
    load_tokenizer(dir_, 0);
    FAIL() << "a garbage tokenizer.model loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.model: not a SentencePiece model"), std::string::npos) << e.what();
  }
  write("tokenizer.json", byte_level_bpe());  // tokenizer.json comes first
  EXPECT_NE(load_tokenizer(dir_, 0)->description().find("tokenizer.json (BPE, byte-level"), std::string::npos);
  fs::remove_all(dir_ / "tokenizer.json");
  fs::remove_all(dir_ / "tokenizer.model");
  fs::remove_all(dir_ / "vocab.json");
  EXPECT_EQ(load_tokenizer(dir_, 0), nullptr);
}

// ---- hostile tokenizer files: limits that keep a file from multiplying memory or time ------------

// `depth` Sequence normalizers around a Lowercase, as JSON text.
std::string nested_normalizers(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"type\": \"Sequence\", \"normalizers\": [";
  s += "{\"type\": \"Lowercase\"}";
  for (int i = 0; i < depth; ++i) s += "]}";
  return s;
}

TEST_F(TokenizerFiles, NestedComponentsNeedMemoryLinearInTheirDepth) {
  // Parsed directly (past the file's depth limit): each level used to spell out its whole field
  // path, 2,500 levels about 100 MB. In a child process, whose peak memory starts afresh.
  const nlohmann::json deep = nlohmann::json::parse(nested_normalizers(2500));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The parse recurses once per level: on a thread with a 256 MiB stack, since ASan's frames
    // overflow the main thread's 8 MiB at this depth (the file readers stop at 128 levels).
    struct Run {
      const nlohmann::json* deep;
      int code = 0;
    } run{&deep};
    auto body = [](void* arg) -> void* {
      Run& r = *static_cast<Run*>(arg);
      try {
        const Normalizer n = Normalizer::parse(*r.deep, JsonPlace{"t.json", "normalizer"});
        if (n.apply("ABC") != "abc") r.code = 3;
      } catch (...) {
        r.code = 2;
      }
      return nullptr;
    };
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t(256) << 20);
    pthread_t thread;
    if (pthread_create(&thread, &attr, body, &run) != 0) _exit(4);
    pthread_join(thread, nullptr);
    if (run.code != 0) _exit(run.code);
    getrusage(RUSAGE_SELF, &after);
    // ASan's shadow memory and redzones grow every allocation: the bound holds for plain builds.
    if (std::getenv("ASAN_OPTIONS")) _exit(0);
    _exit(after.ru_maxrss - before.ru_maxrss > 40 * 1024 ? 1 : 0);  // KiB
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: parsing 2,500 nested normalizers took more than 40 MB; 2: it threw; 3: wrong text; 4: no thread";

  // Nesting within the limit still loads, and means what the flat component means.
  nlohmann::json j = byte_level_bpe();
  j["normalizer"] = nullptr;
  std::string text = j.dump();
  text.replace(text.find("\"normalizer\":null"), 17, "\"normalizer\":" + nested_normalizers(60));
  write("tokenizer.json", text);
  EXPECT_EQ(load()->encode("ABC", false), (Ids{6}));
}

TEST_F(TokenizerFiles, ErrorMessagesShowOnlyTheStartOfAHugeValue) {
  const std::string huge(100000, 'x');
  const std::vector<std::pair<const char*, std::function<void(nlohmann::json&)>>> cases = {
      {"a vocab id that is a long list", [](nlohmann::json& j) { j["model"]["vocab"]["a"] = std::vector<int>(100000, 1); }},
      {"a long dropout string", [&](nlohmann::json& j) { j["model"]["dropout"] = huge; }},
      {"a long unk_token", [&](nlohmann::json& j) { j["model"]["unk_token"] = huge; }},
      {"a long type", [&](nlohmann::json& j) { j["normalizer"] = {{"type", huge}}; }},
      {"a long pattern", [&](nlohmann::json& j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(" + huge}}}, {"behavior", "Isolated"}};
       }},
      {"a long merge", [&](nlohmann::json& j) { j["model"]["merges"][0] = huge; }},
  };
  for (const auto& [what, edit] : cases) {
    nlohmann::json j = byte_level_bpe();
    edit(j);
    write("tokenizer.json", j);
    const std::string e = error_of_load();
    EXPECT_NE(e.find("tokenizer.json: field '"), std::string::npos) << what << ": " << e.substr(0, 300);
    EXPECT_LT(e.size(), 1000u) << what << ": a message of " << e.size() << " bytes";
  }
  EXPECT_EQ(json_excerpt(nlohmann::json::array({1, "two", nullptr})), "[1,\"two\",null]");
  EXPECT_EQ(json_excerpt(nlohmann::json(huge), 10), "\"xxxxxxxxx...");
}

TEST_F(TokenizerFiles, TokenIdsAreAtMostTwoToTheTwentyFourMinusOne) {
  const std::vector<BadField> cases = {
      {"vocab", [](nlohmann::json& j) { j["model"]["vocab"]["c"] = 2147483647; }, "field 'model.vocab' gives token 'c' the id 2147483647"},
      {"vocab 2^24", [](nlohmann::json& j) { j["model"]["vocab"]["c"] = 1 << 24; }, "field 'model.vocab' gives token 'c' the id 16777216"},
      {"added token", [](nlohmann::json& j) { j["added_tokens"][0]["id"] = 2147483647; }, "field 'added_tokens[0].id' must be a token id"},
      {"added token 2^64-1", [](nlohmann::json& j) { j["added_tokens"][0]["id"] = UINT64_MAX; }, "field 'added_tokens[0].id' must be a token id"},
      {"template", [](nlohmann::json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<s>"}}}}}},
                                {"special_tokens", {{"<s>", {{"ids", {2147483647}}}}}}};
       }, "field 'post_processor.special_tokens.<s>.ids[0]' must be a token id"},
      {"bert", [](nlohmann::json& j) {
         j["post_processor"] = {{"type", "BertProcessing"}, {"cls", {"<s>", int64_t(1) << 32}}, {"sep", {"<s>", 7}}};
       }, "field 'post_processor.cls[1]' must be a token id"},
  };
  expect_each_refused(cases);
  write("tokenizer.json", byte_level_bpe());
  write("generation_config.json", nlohmann::json{{"eos_token_id", {2, 2147483647}}});
  EXPECT_NE(error_of_load().find("generation_config.json: field 'eos_token_id[1]' must be a token id"), std::string::npos);
  fs::remove(dir_ / "generation_config.json");
  // The largest id allowed: the size is 2^24.
  nlohmann::json j = byte_level_bpe();
  j["added_tokens"][0]["id"] = (1 << 24) - 1;
  write("tokenizer.json", j);
  EXPECT_EQ(load()->size(), 1 << 24);
}

TEST_F(TokenizerFiles, ATemplateMayAddAtMost4096Ids) {
  nlohmann::json j = byte_level_bpe();
  nlohmann::json single = nlohmann::json::array();
  for (int i = 0; i < 5000; ++i) single.push_back({{"SpecialToken", {{"id", "<s>"}}}});
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", {{"<s>", {{"ids", {7}}}}}}};
  write("tokenizer.json", j);
  const std::string e = error_of_load();
  EXPECT_NE(e.find("field 'post_processor.special_tokens.<s>.ids' makes the post-processor add more than 4096 token ids"),
            std::string::npos) << e;
  single.erase(single.begin() + 4096, single.end());
  j["post_processor"]["single"] = single;
  write("tokenizer.json", j);
  EXPECT_EQ(load()->encode("a").size(), 4097u);
}

// Six Replace steps "a" -> 100 x "a" and an added token <s> matched before normalization.
nlohmann::json multiplying_tokenizer(int steps, int copies) {
  nlohmann::json j = byte_level_bpe();
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < steps; ++i) list.push_back({{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", std::string(size_t(copies), 'a')}});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", list}};
  return j;
}

TEST_F(TokenizerFiles, NormalizedTextMayGrowOnlySoFar) {
  write("tokenizer.json", multiplying_tokenizer(6, 100));
  const auto t = load();
  // 4 bytes: 400, 40,000, then 4,000,000 is refused before it is built.
  const std::string e = error_of([&] { t->encode("aaaa", false); });
  EXPECT_NE(e.find("tokenizer.json: field 'normalizer.normalizers[2]' (Replace) makes the text 4000000 bytes long from 4"),
            std::string::npos) << e;
  // The limit covers the whole text, not each stretch between added tokens: 2,000 stretches of
  // "a" (1,000 bytes each once normalized) exceed 16 times the text plus 1 MiB together.
  write("tokenizer.json", multiplying_tokenizer(1, 1000));
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "a<s>";
  EXPECT_NE(error_of([&] { load()->encode(text, false); }).find("(Replace) makes the text"), std::string::npos);
  EXPECT_EQ(load()->encode(text.substr(0, 400), false).size(), 100u * 1000 + 100);  // within the limit: 100 x (1,000 a's, <s>)
}

TEST_F(TokenizerFiles, AddedTokensShareOneNormalizationLimit) {
  // 3,000 normalized added tokens "a<i>" grown to 1,000 bytes each: 3 MB from 15 KB.
  nlohmann::json j = multiplying_tokenizer(1, 1000);
  for (int i = 0; i < 3000; ++i) j["added_tokens"].push_back({{"id", 100 + i}, {"content", "a" + std::to_string(i)}, {"normalized", true}});
  write("tokenizer.json", j);
  EXPECT_NE(error_of_load().find("field 'normalizer.normalizers[0]' (Replace) makes the text"), std::string::npos);
}

TEST_F(TokenizerFiles, TextLongerThanThePromptLimitIsRefusedBeforeTokenizing) {
  write("tokenizer.json", byte_level_bpe());
  const std::string text(kMaxPromptBytes + 1, 'a');
  EXPECT_NE(error_of([&] { load()->encode(text); }).find("the text to encode (bytes) is 67108865, more than specdec supports (67108864)"),
            std::string::npos);
  Vocabulary::bytes(3, {{"<bos>", 0}}).save(dir_ / "vocab.json");
  const ByteTokenizer bytes(Vocabulary::load(dir_ / "vocab.json"), dir_ / "vocab.json", 0);
  EXPECT_NE(error_of([&] { bytes.encode(text); }).find("more than specdec supports"), std::string::npos);
}

TEST(Regex, RealTokenizersPatternsPassTheSearchLimitsOnHostileText) {
  const char* patterns[] = {
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",  // GPT-2
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",  // Llama-3
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",  // Qwen2
  };
  std::mt19937 rng(7);
  const char* pieces[] = {" ", "\n", "\r\n", "\t", "a", "B", "1", "!", "'s", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82", "\xC2\xA0"};
  std::string mixed;
  while (mixed.size() < 100000) mixed += pieces[rng() % (sizeof(pieces) / sizeof(*pieces))];
  const std::pair<const char*, std::string> texts[] = {
      {"100,000 spaces then x", std::string(100000, ' ') + "x"},
      {"100,000 spaces then a newline", std::string(100000, ' ') + "\n"},
      {"digits", std::string(100000, '7')},
      {"apostrophes", std::string(100000, '\'')},
      {"random mix", mixed},
  };
  for (const char* p : patterns) {
    const Regex re(p, "test");
    for (const auto& [what, text] : texts) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::pair<std::size_t, std::size_t>> m;
      EXPECT_NO_THROW(m = re.find_all(text)) << what << " / " << p;
      std::size_t covered = 0;
      for (const auto& [b, e] : m) covered += e - b;
      EXPECT_EQ(covered, text.size()) << what << ": every byte is in some match";
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0) << what;
    }
  }
}

TEST(Regex, ExponentialBacktrackingIsAnErrorNamingThePattern) {
  // (a|aa)+c over runs of 26 a's: each run backtracks through Fibonacci(26) ways to split it, and
  // without a limit per search the runs add up (about 6 s for these 11 KB).
  std::string text;
  for (int i = 0; i < 400; ++i) text += std::string(26, 'a') + "x";
  const Regex re("(a|aa)+c", "t.json: field 'pre_tokenizer.pattern'");
  const auto start = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { re.find_all(text); });
  EXPECT_NE(e.find("t.json: field 'pre_tokenizer.pattern': the regex exceeded its search limit on this input (it backtracked more than"),
            std::string::npos) << e;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(utf8_lossy("a\xE2\x82" "b"), std::string("a") + std::string(kReplacementChar) + "b");
  EXPECT_EQ(utf8_lossy("\xC0\x80"), std::string(kReplacementChar) + std::string(kReplacementChar));  // overlong: two subparts
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), std::string(kReplacementChar) + std::string(kReplacementChar) + std::string(kReplacementChar));
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x99\x82"), "\xF0\x9F\x99\x82");
  EXPECT_TRUE(ends_with_incomplete_utf8("a\xF0\x9F\x99"));
  EXPECT_FALSE(ends_with_incomplete_utf8("a\xF0\x9F\x99\x82"));
  EXPECT_FALSE(ends_with_incomplete_utf8("a\xFF"));
}

TEST(ByteLevel, EveryByteHasItsOwnPrintableCharacter) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& c = byte_level_char(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second) << "byte " << b;
    EXPECT_EQ(from_byte_level(c), std::string(1, static_cast<char>(b))) << "byte " << b;
  }
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(from_byte_level("x\xE2\x82\xAC"), std::nullopt);  // € is not one of the 256
}

}  // namespace
}  // namespace specdec::text
