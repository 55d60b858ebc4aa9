// The tokenizer a GGUF embeds (tokenizer/gguf_vocabulary.h): small hand-made
// vocabularies encoded as llama.cpp would, and one malformed file per check,
// each refused with an InputError naming the GGUF key.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "gguf_test_util.h"
#include "io/gguf.h"
#include "test_support.h"
#include "tokenizer/gguf_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace tqlab {
namespace {

using testing::GgufBuilder;
using testing::input_error_message;
using testing::le_bytes;

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

GgufBuilder& i32s(GgufBuilder& builder, std::string_view key, const std::vector<std::int32_t>& values) {
  std::string payload = le_bytes<std::uint32_t>(5) + le_bytes<std::uint64_t>(values.size());
  for (std::int32_t value : values) payload += le_bytes(value);
  return builder.kv_raw(key, 9, payload);
}

std::unique_ptr<GgufFile> open_bytes(const std::string& bytes) {
  std::vector<std::byte> contents(bytes.size());
  std::memcpy(contents.data(), bytes.data(), bytes.size());
  return GgufFile::open(std::make_shared<const MappedFile>("vocab.gguf", std::move(contents)));
}

Tokenizer tokenizer_of(const GgufBuilder& builder) {
  const nlohmann::json document = tokenizer::gguf_tokenizer_document(*open_bytes(builder.bytes()));
  return Tokenizer::parse(document.dump(), "vocab.gguf");
}

std::string refusal(const GgufBuilder& builder) {
  const std::string message = input_error_message([&] { tokenizer_of(builder); });
  EXPECT_CONTAINS(message, "GGUF 'vocab.gguf'");
  return message;
}

// Byte-level: "a", "b", "ab", "Ġ" (space), "<|eot|>" control; merge "a b"; BOS = the control token.
GgufBuilder byte_level(std::string_view pre = "gpt-2") {
  GgufBuilder builder;
  builder.kv_string("tokenizer.ggml.model", "gpt2");
  builder.kv_string("tokenizer.ggml.pre", pre);
  builder.kv_strings("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0", "<|eot|>"});
  i32s(builder, "tokenizer.ggml.token_type", {1, 1, 1, 1, 3});
  builder.kv_strings("tokenizer.ggml.merges", {"a b"});
  builder.kv_u32("tokenizer.ggml.bos_token_id", 4);
  return builder;
}

// SentencePiece-style: the higher-scoring join merges first, whatever the tokens' order.
GgufBuilder sentencepiece() {
  GgufBuilder builder;
  builder.kv_string("tokenizer.ggml.model", "llama");
  builder.kv_strings("tokenizer.ggml.tokens",
                     {"<unk>", "<s>", "<0x21>", "\xE2\x96\x81", "a", "b", "c", "ab", "bc", "\xE2\x96\x81" "a"});
  builder.kv_f32s("tokenizer.ggml.scores", {0, 0, 0, -1, -1, -1, -1, -5, -2, -3});
  i32s(builder, "tokenizer.ggml.token_type", {2, 3, 6, 1, 1, 1, 1, 1, 1, 1});
  builder.kv_u32("tokenizer.ggml.bos_token_id", 1);
  builder.kv_u32("tokenizer.ggml.unknown_token_id", 0);
  return builder;
}

TEST(TokenizerGguf, ByteLevelMergesAndMatchesControlTokens) {
  const Tokenizer tokenizer = tokenizer_of(byte_level());
  EXPECT_EQ(tokenizer.encode("ab a<|eot|>b", false), (std::vector<std::int32_t>{2, 3, 0, 4, 1}));
  // gpt2 vocabularies other than llama-bpe add no BOS unless add_bos_token says so (llama-vocab.cpp).
  EXPECT_FALSE(tokenizer.adds_special_tokens_by_default());
  EXPECT_EQ(tokenizer.decode(std::vector<std::int32_t>{2, 3, 0, 4}, true), "ab a");
}

TEST(TokenizerGguf, AddBosFollowsThePreTokenizerAndTheKey) {
  EXPECT_EQ(tokenizer_of(byte_level("llama-bpe")).encode("ab", true), (std::vector<std::int32_t>{4, 2}));
  GgufBuilder builder = byte_level("llama-bpe");
  builder.kv_bool("tokenizer.ggml.add_bos_token", false);
  EXPECT_EQ(tokenizer_of(builder).encode("ab", true), (std::vector<std::int32_t>{2}));
}

TEST(TokenizerGguf, DefaultPreTokenizerCutsPunctuationFirst) {
  // llama.cpp's "default" regexes isolate runs of punctuation before the GPT-2 regex runs.
  GgufBuilder builder;
  builder.kv_string("tokenizer.ggml.model", "gpt2");
  builder.kv_strings("tokenizer.ggml.tokens", {"a", ".", "a."});
  builder.kv_strings("tokenizer.ggml.merges", {"a ."});
  EXPECT_EQ(tokenizer_of(builder).encode("a.", false), (std::vector<std::int32_t>{0, 1}));
}

TEST(TokenizerGguf, SentencePieceMergesTheHighestScoreFirst) {
  const Tokenizer tokenizer = tokenizer_of(sentencepiece());
  // " abc" -> "▁abc": ▁a (-3) and bc (-2) beat ab (-5): bc first, then ▁a; a space prefix is added.
  EXPECT_EQ(tokenizer.encode("abc", false), (std::vector<std::int32_t>{9, 8}));
  EXPECT_EQ(tokenizer.encode("abc", true), (std::vector<std::int32_t>{1, 9, 8}));
  // An unknown character falls back to its bytes' tokens ("!" is <0x21>).
  EXPECT_EQ(tokenizer.encode("!", false), (std::vector<std::int32_t>{3, 2}));
  EXPECT_EQ(tokenizer.decode(std::vector<std::int32_t>{1, 9, 8}, true), "abc");
}

TEST(TokenizerGguf, RefusesMissingTokens) {
  GgufBuilder builder;
  builder.kv_string("tokenizer.ggml.model", "gpt2");
  builder.kv_strings("tokenizer.ggml.merges", {});
  EXPECT_CONTAINS(refusal(builder), "tokenizer.ggml.tokens is absent");
}

TEST(TokenizerGguf, RefusesMissingOrUnknownModel) {
  EXPECT_CONTAINS(refusal(GgufBuilder()), "tokenizer.ggml.model is absent");
  GgufBuilder builder;
  builder.kv_string("tokenizer.ggml.model", "bert");
  const std::string message = refusal(builder);
  EXPECT_CONTAINS(message, "tokenizer.ggml.model is 'bert'");
  EXPECT_CONTAINS(message, "supported: gpt2, llama");
}

TEST(TokenizerGguf, RefusesAnUnknownPreTokenizer) {
  const std::string message = refusal(byte_level("tekken"));
  EXPECT_CONTAINS(message, "tokenizer.ggml.pre is 'tekken'");
  EXPECT_CONTAINS(message, "default, gpt-2, llama-bpe, qwen2");
}

TEST(TokenizerGguf, RefusesMergesOfUnknownTokens) {
  GgufBuilder builder = byte_level();
  builder.records.erase(builder.records.begin() + 4);  // the merges
  builder.kv_strings("tokenizer.ggml.merges", {"a b", "b c"});
  EXPECT_CONTAINS(refusal(builder), "tokenizer.ggml.merges[1] is 'b c'");
}

TEST(TokenizerGguf, RefusesArraysOfTheWrongType) {
  GgufBuilder builder;
  builder.kv_string("tokenizer.ggml.model", "gpt2");
  builder.kv_f32s("tokenizer.ggml.tokens", {1, 2});
  EXPECT_CONTAINS(refusal(builder), "tokenizer.ggml.tokens");
  GgufBuilder types = byte_level();
  types.records.erase(types.records.begin() + 3);  // the token types
  types.kv_strings("tokenizer.ggml.token_type", {"1", "1", "1", "1", "3"});
  EXPECT_CONTAINS(refusal(types), "tokenizer.ggml.token_type");
}

TEST(TokenizerGguf, RefusesMismatchedLengths) {
  GgufBuilder builder = byte_level();
  builder.records.erase(builder.records.begin() + 3);
  i32s(builder, "tokenizer.ggml.token_type", {1, 1});
  EXPECT_CONTAINS(refusal(builder), "tokenizer.ggml.token_type has 2 elements but tokenizer.ggml.tokens has 5");
  GgufBuilder scores = sentencepiece();
  scores.records.erase(scores.records.begin() + 2);
  scores.kv_f32s("tokenizer.ggml.scores", {0, 0});
  EXPECT_CONTAINS(refusal(scores), "tokenizer.ggml.scores has 2 elements");
}

TEST(TokenizerGguf, RefusesABosIdOutsideTheVocabulary) {
  GgufBuilder builder = byte_level("llama-bpe");
  builder.records.pop_back();
  builder.kv_u32("tokenizer.ggml.bos_token_id", 99);
  EXPECT_CONTAINS(refusal(builder), "tokenizer.ggml.bos_token_id is 99");
}

}  // namespace
}  // namespace tqlab
