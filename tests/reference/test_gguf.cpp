// GGUF files: each ggml block type dequantized from hand-built blocks whose values follow from the
// documented layout; metadata of every type read back; a model written as GGUF (llama's
// interleaved q/k rows, qwen2's biases, F32 / BF16 / Q8_0 storage) loading to the same weights and
// config as its safetensors checkpoint; the tokenizer rebuilt from metadata giving the ids of the
// tokenizer.json it came from; and a clear error for each malformed file. Bitwise agreement with
// the `gguf` Python package's dequantization is checked by tests/interop/test_gguf.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/core/half.hpp"
#include "reference/io/ggml_dequantize.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/gguf.hpp"
#include "reference/io/gguf_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/random_weights.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/gguf_writer.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "text/hf_tokenizer.hpp"
#include "text/load_tokenizer.hpp"

namespace specdec {
namespace {

using testing::error_of;
using testing::GgufStorage;
using testing::GgufWriter;
using testing::write_gguf_model;
using testing::ScratchDir;

std::string u16(uint16_t v) { return std::string(reinterpret_cast<const char*>(&v), 2); }
std::string f16(float v) { return u16(float_to_half(v)); }

std::vector<float> dequantize(GgmlType type, const std::string& block, std::size_t n) {
  std::vector<float> out(n);
  ggml_dequantize(type, std::span(reinterpret_cast<const std::byte*>(block.data()), block.size()), out);
  return out;
}

// ---- dequantization, one block per type --------------------------------------------------------

TEST(GgmlDequantize, Q4_0) {
  std::string b = f16(0.5f);
  for (int j = 0; j < 16; ++j) b += static_cast<char>(j | ((15 - j) << 4));
  const auto y = dequantize(GgmlType::Q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8)) << "element " << j;
    EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(7 - j)) << "element " << j + 16;
  }
}

TEST(GgmlDequantize, Q4_1) {
  std::string b = f16(0.25f) + f16(-1.0f);
  for (int j = 0; j < 16; ++j) b += static_cast<char>(j | ((15 - j) << 4));
  const auto y = dequantize(GgmlType::Q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * static_cast<float>(j) - 1.0f) << j;
    EXPECT_EQ(y[j + 16], 0.25f * static_cast<float>(15 - j) - 1.0f) << j + 16;
  }
}

TEST(GgmlDequantize, Q5_0AndQ5_1) {
  // Fifth bits: set for the upper 16 elements only (bit j of qh is element j's).
  const uint32_t qh = 0xFFFF0000u;
  std::string qhs(reinterpret_cast<const char*>(&qh), 4), qs;
  for (int j = 0; j < 16; ++j) qs += static_cast<char>(j | (j << 4));
  const auto y0 = dequantize(GgmlType::Q5_0, f16(1.0f) + qhs + qs, 32);
  const auto y1 = dequantize(GgmlType::Q5_1, f16(0.5f) + f16(2.0f) + qhs + qs, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y0[j], static_cast<float>(j - 16)) << j;
    EXPECT_EQ(y0[j + 16], static_cast<float>(j)) << j + 16;
    EXPECT_EQ(y1[j], 0.5f * static_cast<float>(j) + 2.0f) << j;
    EXPECT_EQ(y1[j + 16], 0.5f * static_cast<float>(j + 16) + 2.0f) << j + 16;
  }
}

TEST(GgmlDequantize, Q8_0) {
  std::string b = f16(2.0f);
  for (int j = 0; j < 32; ++j) b += static_cast<char>(static_cast<int8_t>(j * 8 - 128));
  const auto y = dequantize(GgmlType::Q8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], static_cast<float>(j * 8 - 128) * 2.0f) << j;
}

// The 12 scale bytes of a K-quant block holding sub-block scales sc[j] and minimums m[j] (< 16).
std::string k_scales(const int sc[8], const int m[8]) {
  unsigned char q[12] = {};
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<unsigned char>(sc[j]);
    q[j + 4] = static_cast<unsigned char>(m[j]);
    q[j + 8] = static_cast<unsigned char>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
  return std::string(reinterpret_cast<const char*>(q), 12);
}

TEST(GgmlDequantize, Q4_KAndQ5_K) {
  const int sc[8] = {1, 2, 3, 4, 5, 6, 7, 8}, m[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::string qs;  // 128 bytes: low nibble k % 16, high nibble 15 - k % 16
  for (int k = 0; k < 128; ++k) qs += static_cast<char>((k % 16) | ((15 - k % 16) << 4));
  std::string qh;  // element l of sub-block j has fifth bit (l + j) % 2
  for (int l = 0; l < 32; ++l) qh += static_cast<char>(l % 2 ? 0x55 : 0xAA);
  const auto y4 = dequantize(GgmlType::Q4_K, f16(1.0f) + f16(0.5f) + k_scales(sc, m) + qs, 256);
  const auto y5 = dequantize(GgmlType::Q5_K, f16(1.0f) + f16(0.5f) + k_scales(sc, m) + qh + qs, 256);
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) {
      const int byte = 32 * (j / 2) + l;
      const int nibble = j % 2 == 0 ? byte % 16 : 15 - byte % 16;
      const float dl = 1.0f * static_cast<float>(sc[j]), ml = 0.5f * static_cast<float>(m[j]);
      EXPECT_EQ(y4[32 * j + l], dl * static_cast<float>(nibble) - ml) << "Q4_K sub-block " << j << " element " << l;
      const int fifth = (l + j) % 2;
      EXPECT_EQ(y5[32 * j + l], dl * static_cast<float>(nibble | (fifth << 4)) - ml) << "Q5_K sub-block " << j << " element " << l;
    }
  }
}

TEST(GgmlDequantize, Q6_K) {
  std::string ql, qh, scales;
  for (int k = 0; k < 128; ++k) ql += static_cast<char>((k % 16) | ((k / 8 % 16) << 4));
  for (int k = 0; k < 64; ++k) qh += static_cast<char>(k * 37);
  for (int k = 0; k < 16; ++k) scales += static_cast<char>(static_cast<int8_t>(k - 8));
  const auto y = dequantize(GgmlType::Q6_K, ql + qh + scales + f16(0.5f), 256);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, c = e % 128 / 32, l = e % 32;
    const unsigned char lo = static_cast<unsigned char>(ql[64 * half + 32 * (c % 2) + l]);
    const unsigned char hi = static_cast<unsigned char>(qh[32 * half + l]);
    const int code = ((c < 2 ? lo : lo >> 4) & 0xF) | (((hi >> (2 * c)) & 3) << 4);
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(e / 16 - 8) * static_cast<float>(code - 32)) << "element " << e;
  }
}

TEST(GgmlDequantize, FloatTypes) {
  const auto y16 = dequantize(GgmlType::F16, f16(1.5f) + u16(0x7C00) + u16(0x0001), 3);
  EXPECT_EQ(y16[0], 1.5f);
  EXPECT_TRUE(std::isinf(y16[1]));
  EXPECT_EQ(y16[2], std::ldexp(1.0f, -24));
  const auto yb = dequantize(GgmlType::BF16, u16(0x3FC0) + u16(0xC000), 2);
  EXPECT_EQ(yb[0], 1.5f);
  EXPECT_EQ(yb[1], -2.0f);
}

TEST(GgmlDequantize, RefusesUnreadTypesAndWrongSizes) {
  std::string e = error_of([] { dequantize(GgmlType::Q2_K, std::string(84, '\0'), 256); });
  EXPECT_CONTAINS(e, "Q2_K");
  EXPECT_CONTAINS(e, "Q4_K");  // the list of what is read
  e = error_of([] { dequantize(GgmlType::Q8_0, std::string(33, '\0'), 32); });
  EXPECT_CONTAINS(e, "34 bytes");
  e = error_of([] { dequantize(GgmlType::Q8_0, std::string(34, '\0'), 31); });
  EXPECT_CONTAINS(e, "whole blocks of 32");
}

// ---- the file format --------------------------------------------------------------------------

TEST(GgufFile, ReadsEveryMetadataType) {
  ScratchDir dir("gguf");
  GgufWriter w;
  w.kv_u32("a.u32", 4000000000u);
  w.kv_i32("a.i32", -7);
  w.kv_u64("a.u64", 1ull << 40);
  w.kv_f32("a.f32", 1e-5f);
  w.kv_bool("a.bool", true);
  w.kv_string("a.string", "héllo");
  w.kv_strings("a.strings", {"x", "", "y z"});
  w.kv_i32s("a.i32s", {3, -1, 2});
  w.kv_f32s("a.f32s", {0.5f, -2.0f});
  const float v[4] = {1, 2, 3, 4};
  w.tensor_f32("t", 2, 2, v);
  w.write(dir / "m.gguf");
  ASSERT_TRUE(is_gguf_file(dir / "m.gguf"));
  const GgufFile f(dir / "m.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_int("a.u32"), 4000000000ll);
  EXPECT_EQ(f.get_int("a.i32"), -7);
  EXPECT_EQ(f.get_int("a.u64"), 1ll << 40);
  EXPECT_EQ(f.get_float("a.f32"), static_cast<double>(1e-5f));
  EXPECT_EQ(f.get_bool("a.bool"), true);
  EXPECT_EQ(f.get_string("a.string"), "héllo");
  EXPECT_EQ(f.get_strings("a.strings"), (std::vector<std::string>{"x", "", "y z"}));
  EXPECT_EQ(f.get_ints("a.i32s"), (std::vector<int64_t>{3, -1, 2}));
  EXPECT_EQ(f.get_floats("a.f32s"), (std::vector<double>{0.5, -2.0}));
  EXPECT_EQ(f.get_string("absent"), std::nullopt);
  EXPECT_EQ(f.find("a.strings")->summary(), "[3 x STRING] \"x\", \"\", \"y z\"");
  EXPECT_CONTAINS(error_of([&] { f.get_string("a.i32"); }), "metadata 'a.i32' must be a string, got I32 -7");
  EXPECT_CONTAINS(error_of([&] { f.get_ints("a.strings"); }), "must be an array of integers");
  EXPECT_EQ(f.tensor("t").shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.floats("t"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_CONTAINS(error_of([&] { f.tensor("u"); }), "no tensor named 'u'");
}

// One malformed file per case; loading must fail with `expected` in the message.
struct BadFile {
  const char* what;
  std::string bytes;
  const char* expected;
};

std::string header(uint32_t version, uint64_t tensors, uint64_t kvs) {
  std::string s = "GGUF";
  GgufWriter::append(s, version);
  GgufWriter::append(s, tensors);
  GgufWriter::append(s, kvs);
  return s;
}

TEST(GgufFile, RefusesMalformedFiles) {
  const float v[2] = {1, 2};
  GgufWriter good;
  good.tensor_f32("t", 2, 0, v);
  const std::string ok = good.bytes();
  auto with_kv = [](const std::string& key, const std::string& type_and_value) {
    GgufWriter w;
    w.kv_raw(key, type_and_value);
    return w.bytes();
  };
  std::string u32_9, arr;
  GgufWriter::append(u32_9, uint32_t{9});
  arr = u32_9;
  GgufWriter::append(arr, uint32_t{6});            // array of F32
  GgufWriter::append(arr, uint64_t{1} << 60);      // with an impossible count
  std::string nested = u32_9;                      // arrays of arrays, 9 deep
  for (int k = 0; k < 9; ++k) {
    GgufWriter::append(nested, uint32_t{9});
    GgufWriter::append(nested, uint64_t{1});
  }
  std::string bad_bool;
  GgufWriter::append(bad_bool, uint32_t{7});
  bad_bool += '\x02';
  GgufWriter dup;
  dup.kv_u32("k", 1);
  dup.kv_u32("k", 2);
  GgufWriter unknown_type;
  unknown_type.tensor("t", {4}, 77, std::string(16, '\0'));
  GgufWriter five_dims;
  five_dims.tensor("t", {1, 1, 1, 1, 1}, 0, std::string(4, '\0'));
  GgufWriter ragged;
  ragged.tensor("t", {33}, 8, std::string(34, '\0'));
  GgufWriter two;
  two.tensor_f32("a", 2, 0, v);
  two.tensor_f32("a", 2, 0, v);
  std::string past_end = ok.substr(0, ok.size() - 4);
  std::string unaligned = ok;
  // The offset field is the last 8 bytes of the tensor info, just before the padding.
  const std::size_t info_end = 24 + 8 + 1 + 4 + 8 + 4 + 8;
  unaligned[info_end - 8] = 4;

  const std::vector<BadFile> cases = {
      {"empty", "", "shorter than a GGUF header"},
      {"not GGUF", std::string(32, 'x'), "not a GGUF file"},
      {"version 1", header(1, 0, 0) + std::string(8, '\0'), "GGUF version 1 is not supported"},
      {"truncated metadata", header(3, 0, 1) + std::string(4, '\0'), "truncated or not a GGUF file"},
      {"huge counts", header(3, 1ull << 40, 0), "at most"},
      {"unknown value type", with_kv("k", std::string("\x0d\0\0\0", 4)), "unknown value type 13"},
      {"array past the end", with_kv("k", arr), "runs past the end of the file"},
      {"arrays nested too deep", with_kv("k", nested), "nested more than 8 deep"},
      {"bool not 0 or 1", with_kv("k", bad_bool), "must be 0 or 1"},
      {"duplicate key", dup.bytes(), "metadata key 'k' appears more than once"},
      {"unknown tensor type", unknown_type.bytes(), "unknown ggml tensor type 77"},
      {"five dimensions", five_dims.bytes(), "5 dimensions"},
      {"row not whole blocks", ragged.bytes(), "not whole Q8_0 blocks of 32"},
      {"duplicate tensor", two.bytes(), "tensor 'a' appears more than once"},
      {"tensor past the end", past_end, "runs past the end of the file"},
      {"unaligned offset", unaligned, "is not a multiple of the alignment 32"},
  };
  ScratchDir dir("gguf-bad");
  for (const BadFile& c : cases) {
    const auto path = dir / "bad.gguf";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << c.bytes;
    const std::string e = error_of([&] { GgufFile f(path); });
    EXPECT_CONTAINS(e, c.expected) << " (case: " << c.what << ")";
  }
  EXPECT_CONTAINS(error_of([&] { GgufFile f(dir.path()); }), "is not a regular file");
}

// ---- models -----------------------------------------------------------------------------------

LlamaModel bundled_target() { return load_llama_checkpoint(std::filesystem::path(SPECDEC_SOURCE_DIR) / "models/target"); }

TEST(GgufModel, LlamaF32LoadsTheSafetensorsWeightsBitwise) {
  ScratchDir dir("gguf-model");
  const LlamaModel hf = bundled_target();
  write_gguf_model(dir / "target.gguf", hf, "llama", GgufStorage::f32);
  const LlamaModel g = load_llama_checkpoint(dir / "target.gguf");
  EXPECT_EQ(g.config, hf.config);  // the same config.json, torch_dtype float32 included
  EXPECT_EQ(weights_fingerprint(g.weights), weights_fingerprint(hf.weights));
  // Streamed a chunk of rows at a time (q/k rows un-interleaved one by one), the same fingerprint.
  EXPECT_EQ(weights_fingerprint(CheckpointReader(dir / "target.gguf")), weights_fingerprint(hf.weights));
}

TEST(GgufModel, Bf16KeepsItsPrecisionAndQ8_0DequantizesPerBlock) {
  ScratchDir dir("gguf-model");
  const LlamaModel hf = bundled_target();
  write_gguf_model(dir / "bf16.gguf", hf, "llama", GgufStorage::bf16);
  const LlamaModel b = load_llama_checkpoint(dir / "bf16.gguf");
  EXPECT_EQ(b.config.torch_dtype, "bfloat16");
  for (std::size_t k = 0; k < 4; ++k) {
    const float x = hf.weights.layers[1].down_proj.data()[k];
    EXPECT_EQ(b.weights.layers[1].down_proj.data()[k], bfloat16_to_float(float_to_bfloat16(x))) << "element " << k;
  }
  write_gguf_model(dir / "q8.gguf", hf, "llama", GgufStorage::q8_0);
  const LlamaModel q = load_llama_checkpoint(dir / "q8.gguf");
  EXPECT_EQ(q.config.torch_dtype, "float32");
  EXPECT_EQ(weights_fingerprint(CheckpointReader(dir / "q8.gguf")), weights_fingerprint(q.weights));
  const Matrix& src = hf.weights.layers[2].up_proj;
  const std::string block = testing::gguf_stored(src.data(), 32, GgufStorage::q8_0);
  for (int k = 0; k < 32; ++k) {
    const float d = half_to_float(static_cast<uint16_t>(static_cast<unsigned char>(block[0]) | static_cast<unsigned char>(block[1]) << 8));
    EXPECT_EQ(q.weights.layers[2].up_proj.data()[k], static_cast<float>(static_cast<int8_t>(block[2 + k])) * d) << "element " << k;
  }
}

TEST(GgufModel, Qwen2KeepsRowOrderAndBiases) {
  ModelConfig c;
  c.architecture = "Qwen2ForCausalLM";
  c.model_type = "qwen2";
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 50;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.attention_bias = true;
  c.tie_word_embeddings = true;
  c.bos_token_id = 3;
  c.eos_token_ids = {4};
  LlamaModel m{c, random_llama_weights(c, 7)};
  ScratchDir dir("gguf-qwen2");
  write_gguf_model(dir / "q.gguf", m, "qwen2", GgufStorage::f32);
  const LlamaModel g = load_llama_checkpoint(dir / "q.gguf");
  EXPECT_EQ(g.config, c);
  EXPECT_EQ(weights_fingerprint(g.weights), weights_fingerprint(m.weights)) << "seed 7";
  EXPECT_EQ(weights_fingerprint(CheckpointReader(dir / "q.gguf")), weights_fingerprint(m.weights)) << "seed 7";
}

TEST(GgufModel, RefusesWhatItCannotRun) {
  ScratchDir dir("gguf-refuse");
  const LlamaModel hf = bundled_target();
  write_gguf_model(dir / "ok.gguf", hf, "llama", GgufStorage::f32);
  const GgufFile ok(dir / "ok.gguf");
  auto rewrite = [&](const std::function<void(GgufWriter&)>& edit, bool drop_layer1_q = false) {
    // A copy of ok.gguf's metadata and tensors, edited.
    GgufWriter w;
    for (const auto& [key, v] : ok.metadata()) {
      if (v.type == GgufType::STRING) w.kv_string(key, v.s);
      else if (v.type == GgufType::F32) w.kv_f32(key, static_cast<float>(v.f));
      else w.kv_u32(key, static_cast<uint32_t>(v.u));
    }
    edit(w);
    for (const GgufTensorInfo& t : ok.tensors()) {
      if (drop_layer1_q && t.name == "blk.1.attn_q.weight") continue;
      const auto raw = ok.raw(t.name);
      w.tensor(t.name, t.ne, t.type, std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
    }
    w.write(dir / "bad.gguf");
    return error_of([&] { load_llama_checkpoint(dir / "bad.gguf"); });
  };
  EXPECT_CONTAINS(rewrite([](GgufWriter&) {}, true), "missing tensor 'blk.1.attn_q.weight'");
  EXPECT_CONTAINS(rewrite([](GgufWriter& w) { w.tensor("rope_freqs.weight", {16}, 0, std::string(64, '\0')); }),
                  "rope_freqs.weight");
  EXPECT_CONTAINS(rewrite([](GgufWriter& w) { w.kv_string("llama.rope.scaling.type", "yarn"); }),
                  "rope.scaling.type 'yarn' is not supported");

  GgufWriter other;
  other.kv_string("general.architecture", "gemma3");
  other.write(dir / "gemma.gguf");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "gemma.gguf"); }), "architecture 'gemma3' is not supported");

  // ok.gguf with one integer of its metadata changed.
  auto with_value = [&](const std::string& changed, uint32_t value) {
    GgufWriter w;
    for (const auto& [key, v] : ok.metadata()) {
      if (v.type == GgufType::STRING) w.kv_string(key, v.s);
      else if (v.type == GgufType::F32) w.kv_f32(key, static_cast<float>(v.f));
      else w.kv_u32(key, key == changed ? value : static_cast<uint32_t>(v.u));
    }
    for (const GgufTensorInfo& t : ok.tensors()) {
      const auto raw = ok.raw(t.name);
      w.tensor(t.name, t.ne, t.type, std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
    }
    w.write(dir / "changed.gguf");
    return error_of([&] { load_llama_checkpoint(dir / "changed.gguf"); });
  };
  // A matrix of the wrong shape names the tensor and both shapes.
  EXPECT_CONTAINS(with_value("llama.feed_forward_length", 256),
                  "tensor 'blk.0.ffn_gate.weight' has shape [512, 192], the metadata calls for [256, 192]");
  // A block count beyond the tensors is refused before anything is sized by it.
  EXPECT_CONTAINS(with_value("llama.block_count", 2000000000), "block_count is 2000000000 but tensor 'blk.1999999999.attn_q.weight' is missing");
}

// ---- the tokenizer ----------------------------------------------------------------------------

// The byte-level BPE of tests/text/test_tokenizers.cpp (letters a, b, c, space; merges "b c",
// "a b", "a bc"), with a special <s> at id 7, as GGUF metadata and as tokenizer.json.
void write_gpt2_tokenizer(GgufWriter& w, const std::string& pre) {
  w.kv_string("tokenizer.ggml.model", "gpt2");
  if (!pre.empty()) w.kv_string("tokenizer.ggml.pre", pre);
  w.kv_strings("tokenizer.ggml.tokens", {"a", "b", "c", "\xC4\xA0", "bc", "ab", "abc", "<s>"});
  w.kv_i32s("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 1, 3});
  w.kv_strings("tokenizer.ggml.merges", {"b c", "a b", "a bc"});
  w.kv_u32("tokenizer.ggml.bos_token_id", 7);
  w.kv_u32("tokenizer.ggml.eos_token_id", 7);
}

nlohmann::json gpt2_tokenizer_json() {
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", 7}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"\xC4\xA0", 3}, {"bc", 4}, {"ab", 5}, {"abc", 6}}},
            {"merges", {"b c", "a b", "a bc"}}}}};
}

TEST(GgufTokenizer, Gpt2GivesTheIdsOfItsTokenizerJson) {
  ScratchDir dir("gguf-tok");
  GgufWriter w;
  write_gpt2_tokenizer(w, "gpt-2");
  w.write(dir / "t.gguf");
  const auto g = text::load_tokenizer(dir / "t.gguf", -1);
  ASSERT_NE(g, nullptr);
  const auto hf = text::HfTokenizer::parse(gpt2_tokenizer_json(), "tokenizer.json");
  for (const std::string s : {"abc", "ab", "abc cab", "cba  bca", "<s>abc<s>", "a b c"}) {
    EXPECT_EQ(g->encode(s, true), hf->encode(s, true)) << "text '" << s << "'";
    EXPECT_EQ(g->decode(g->encode(s, false)), s);
  }
  EXPECT_EQ(g->encode("abc cab", false), (std::vector<int32_t>{6, 3, 2, 5}));
  EXPECT_EQ(g->bos_id(), 7);
  EXPECT_EQ(g->eos_ids(), (std::vector<int32_t>{7}));
  EXPECT_EQ(g->decode({6, 7}, true), "abc");
  EXPECT_CONTAINS(g->description(), "GGUF tokenizer metadata");
}

TEST(GgufTokenizer, AddsBosWhenTheMetadataSaysSo) {
  ScratchDir dir("gguf-tok");
  GgufWriter w;
  write_gpt2_tokenizer(w, "");
  w.kv_bool("tokenizer.ggml.add_bos_token", true);
  w.write(dir / "t.gguf");
  const auto g = text::load_tokenizer(dir / "t.gguf", -1);
  EXPECT_EQ(g->encode("ab", true), (std::vector<int32_t>{7, 5}));
  EXPECT_EQ(g->encode("ab", false), (std::vector<int32_t>{5}));
}

// A SentencePiece BPE as llama.cpp's converter stores one: <unk> <s> </s>, 256 byte pieces, then
// "▁" "a" "b" "▁a" "ab" "▁ab" whose scores set the merge order ("ab" before "▁a").
TEST(GgufTokenizer, LlamaSentencePieceMergesByScore) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
    types.push_back(6);
    scores.push_back(0);
  }
  const std::string sp = "\xE2\x96\x81";
  for (const auto& [piece, score] : std::vector<std::pair<std::string, float>>{
           {sp, -1}, {"a", -2}, {"b", -3}, {sp + "a", -5}, {"ab", -4}, {sp + "ab", -6}}) {
    tokens.push_back(piece);
    types.push_back(1);
    scores.push_back(score);
  }
  const int32_t u = 259, a = 260, b = 261, uab = 264;
  ScratchDir dir("gguf-spm");
  GgufWriter w;
  w.kv_string("tokenizer.ggml.model", "llama");
  w.kv_strings("tokenizer.ggml.tokens", tokens);
  w.kv_f32s("tokenizer.ggml.scores", scores);
  w.kv_i32s("tokenizer.ggml.token_type", types);
  w.kv_u32("tokenizer.ggml.bos_token_id", 1);
  w.kv_u32("tokenizer.ggml.eos_token_id", 2);
  w.write(dir / "t.gguf");
  const auto t = text::load_tokenizer(dir / "t.gguf", -1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->encode("ab", true), (std::vector<int32_t>{1, uab}));  // BOS by default, as llama.cpp
  EXPECT_EQ(t->encode("ba", false), (std::vector<int32_t>{u, b, a}));
  EXPECT_EQ(t->encode("c", false), (std::vector<int32_t>{u, 3 + 'c'}));  // byte fallback
  EXPECT_EQ(t->decode({1, uab, u, b, a}, true), "ab ba");
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_ids(), (std::vector<int32_t>{2}));
  // Without the scores the merge order is unknown.
  GgufWriter no_scores;
  no_scores.kv_string("tokenizer.ggml.model", "llama");
  no_scores.kv_strings("tokenizer.ggml.tokens", tokens);
  no_scores.write(dir / "t.gguf");
  EXPECT_CONTAINS(error_of([&] { text::load_tokenizer(dir / "t.gguf", -1); }), "'tokenizer.ggml.scores' is missing");
}

TEST(GgufTokenizer, NoTokenizerMetadataMeansNone) {
  ScratchDir dir("gguf-tok");
  GgufWriter w;
  w.kv_string("general.architecture", "llama");
  w.write(dir / "t.gguf");
  EXPECT_EQ(text::load_tokenizer(dir / "t.gguf", -1), nullptr);
}

TEST(GgufTokenizer, RefusesWhatItDoesNotRebuild) {
  ScratchDir dir("gguf-tok");
  auto error_for = [&](const std::function<void(GgufWriter&)>& edit) {
    GgufWriter w;
    edit(w);
    w.write(dir / "t.gguf");
    return error_of([&] { text::load_tokenizer(dir / "t.gguf", -1); });
  };
  EXPECT_CONTAINS(error_for([](GgufWriter& w) { write_gpt2_tokenizer(w, "falcon"); }),
                  "tokenizer.ggml.pre' is 'falcon'");
  EXPECT_CONTAINS(error_for([](GgufWriter& w) { w.kv_string("tokenizer.ggml.model", "t5"); }),
                  "tokenizer.ggml.model 't5' is not rebuilt");
  EXPECT_CONTAINS(error_for([](GgufWriter& w) {
                    w.kv_string("tokenizer.ggml.model", "llama");
                    w.kv_strings("tokenizer.ggml.tokens", {"a", "b"});
                    w.kv_f32s("tokenizer.ggml.scores", {0, 0});
                  }),
                  "no token of type 2 (unknown)");
  EXPECT_CONTAINS(error_for([](GgufWriter& w) {
                    w.kv_string("tokenizer.ggml.model", "gpt2");
                    w.kv_strings("tokenizer.ggml.tokens", {"a"});
                    w.kv_strings("tokenizer.ggml.merges", {});
                    w.kv_u32("tokenizer.ggml.bos_token_id", 9);
                  }),
                  "'tokenizer.ggml.bos_token_id' is 9, not a token id");
  EXPECT_CONTAINS(error_for([](GgufWriter& w) {
                    w.kv_string("tokenizer.ggml.model", "gpt2");
                    w.kv_strings("tokenizer.ggml.tokens", {"a", "b"});
                    w.kv_i32s("tokenizer.ggml.token_type", {1});
                    w.kv_strings("tokenizer.ggml.merges", {});
                  }),
                  "token_type has 1 entries for 2 tokens");
}

}  // namespace
}  // namespace specdec
