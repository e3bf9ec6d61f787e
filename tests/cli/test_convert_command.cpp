// specdec convert and inspect on GGUF files: the bundled target written as GGUF (with a byte-level
// BPE tokenizer in its metadata) converts back to a Hugging Face checkpoint with the same weights,
// config, tokenizer ids and generated tokens; a checkpoint directory converts to BF16 with its
// tokenizer files; inspect shows the metadata and tensor types; each misuse is refused clearly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/safetensors.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/gguf_writer.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "text/load_tokenizer.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::GgufStorage;
using testing::GgufWriter;
using testing::run;
using testing::ScratchDir;

const fs::path kTarget = fs::path(SPECDEC_SOURCE_DIR) / "models/target";

// The letters a, b, c and space with merges "b c", "a b", "a bc"; <s> special at id 7.
void tiny_bpe(GgufWriter& w) {
  w.kv_string("tokenizer.ggml.model", "gpt2");
  w.kv_string("tokenizer.ggml.pre", "gpt-2");
  w.kv_strings("tokenizer.ggml.tokens", {"a", "b", "c", "\xC4\xA0", "bc", "ab", "abc", "<s>"});
  w.kv_i32s("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 1, 3});
  w.kv_strings("tokenizer.ggml.merges", {"b c", "a b", "a bc"});
}

class Convert : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = load_llama_checkpoint(kTarget);
    gguf_ = dir_ / "target.gguf";
    testing::write_gguf_model(gguf_, model_, "llama", GgufStorage::f32, tiny_bpe);
  }
  ScratchDir dir_{"convert"};
  LlamaModel model_;
  fs::path gguf_;
};

TEST_F(Convert, GgufBackToTheCheckpointItCameFrom) {
  const fs::path out = dir_ / "hf";
  const CliRun r = run({"convert", "--model", gguf_.string(), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("weights as F32; tokenizer.json and generation_config.json"), std::string::npos) << r.out;
  const LlamaModel back = load_llama_checkpoint(out);
  EXPECT_EQ(back.config, model_.config);
  EXPECT_EQ(weights_fingerprint(back.weights), weights_fingerprint(model_.weights));
  const auto from_gguf = text::load_tokenizer(gguf_, -1);
  const auto from_dir = text::load_tokenizer(out, -1);
  ASSERT_NE(from_dir, nullptr);
  for (const std::string text : {"abc cab", "<s>ba c", "cc  ab"}) EXPECT_EQ(from_dir->encode(text), from_gguf->encode(text)) << text;
  // The same tokens from either file.
  const std::vector<std::string> gen = {"generate", "--prompt", "abc cab", "--max-new-tokens", "6", "--ignore-eos", "--json"};
  auto tokens = [&](const fs::path& m) {
    std::vector<std::string> args = gen;
    args.insert(args.begin() + 1, {"--model", m.string()});
    const CliRun g = run(args);
    EXPECT_EQ(g.code, 0) << g.err;
    return nlohmann::json::parse(g.out).at("output_tokens");
  };
  EXPECT_EQ(tokens(gguf_), tokens(out));
}

TEST_F(Convert, ADirectoryToBf16WithItsTokenizerFiles) {
  const fs::path out = dir_ / "bf16";
  const CliRun r = run({"convert", "--model", kTarget.string(), "--out", out.string(), "--dtype", "BF16"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "vocab.json"));
  const SafetensorsFile f(out / "model.safetensors");
  EXPECT_EQ(f.info("model.layers.0.mlp.up_proj.weight").dtype, Dtype::BF16);
  EXPECT_EQ(load_llama_checkpoint(out).config.torch_dtype, "bfloat16");
}

TEST_F(Convert, RefusesMisuse) {
  const fs::path out = dir_ / "hf";
  ASSERT_EQ(run({"convert", "--model", gguf_.string(), "--out", out.string()}).code, 0);
  const CliRun again = run({"convert", "--model", gguf_.string(), "--out", out.string()});
  EXPECT_NE(again.code, 0);
  EXPECT_NE(again.err.find("already holds a checkpoint; pass --force"), std::string::npos) << again.err;
  EXPECT_EQ(run({"convert", "--model", gguf_.string(), "--out", out.string(), "--force"}).code, 0);
  const CliRun file = run({"convert", "--model", gguf_.string(), "--out", gguf_.string()});
  EXPECT_NE(file.err.find("exists and is not a directory"), std::string::npos) << file.err;
  const CliRun dtype = run({"convert", "--model", gguf_.string(), "--out", (dir_ / "x").string(), "--dtype", "Q4_0"});
  EXPECT_NE(dtype.err.find("Q4_0"), std::string::npos) << dtype.err;
  EXPECT_FALSE(fs::exists(dir_ / "x"));
  const CliRun self = run({"convert", "--model", kTarget.string(), "--out", kTarget.string(), "--force"});
  EXPECT_NE(self.err.find("must not be the --model directory"), std::string::npos) << self.err;
}

TEST_F(Convert, InspectShowsMetadataAndTensorTypes) {
  const CliRun r = run({"inspect", gguf_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"(version 3,", "LlamaForCausalLM (llama)", "tensors     75: 75 F32", "llama.block_count = 8",
                           "tokenizer.ggml.tokens = [8 x STRING] \"a\", \"b\", \"c\", \"\xC4\xA0\", ...", "(GGUF tokenizer metadata)"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "expected '" << want << "' in:\n" << r.out;
  }
  const CliRun j = run({"inspect", gguf_.string(), "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed.at("kind"), "gguf");
  EXPECT_EQ(parsed.at("fingerprint"), weights_fingerprint(model_.weights));
  // A tokenizer alone: metadata and tokenizer shown, no model.
  GgufWriter w;
  tiny_bpe(w);
  w.write(dir_ / "tokenizer.gguf");
  const CliRun t = run({"inspect", (dir_ / "tokenizer.gguf").string()});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("model       none (no token_embd.weight: not a model file)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("tokenizer.ggml.pre = \"gpt-2\""), std::string::npos) << t.out;
}

}  // namespace
}  // namespace specdec
