// The GGUF reader (io/gguf.h): a well-formed file read back field by field,
// then one hand-made file per check, each refused with an InputError that
// names the file and the field, key or tensor with what was found.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "blocks/ggml_type.h"
#include "core/mapped_file.h"
#include "gguf_test_util.h"
#include "io/gguf.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::GgufBuilder;
using testing::input_error_message;
using testing::le_bytes;

constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8;

std::unique_ptr<GgufFile> open_bytes(const std::string& bytes, const std::string& name = "test.gguf") {
  std::vector<std::byte> contents(bytes.size());
  std::memcpy(contents.data(), bytes.data(), bytes.size());
  return GgufFile::open(std::make_shared<const MappedFile>(name, std::move(contents)));
}

// The refusal of `bytes`: an InputError naming the file; returns its message.
std::string refusal(const std::string& bytes) {
  const std::string message = input_error_message([&] { open_bytes(bytes); });
  EXPECT_NE(message.find("GGUF 'test.gguf'"), std::string::npos) << message;
  return message;
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

// A small valid file: two metadata values of each kind the model reads, two tensors.
GgufBuilder valid_file() {
  GgufBuilder file;
  file.kv_string("general.architecture", "llama")
      .kv_u32("llama.block_count", 2)
      .kv_f32("llama.rope.freq_base", 10000.0f)
      .kv_bool("tokenizer.ggml.add_bos_token", true)
      .kv_strings("tokenizer.ggml.tokens", {"a", "b", "c"})
      .kv_f32s("tokenizer.ggml.scores", {0.5f, -1.0f, 2.0f});
  file.f32_tensor("output_norm.weight", {3}, {1, 2, 3});
  file.tensor("token_embd.weight", {32, 2}, kQ8_0, std::string(2 * 34, '\x01'));
  return file;
}

TEST(GgufTest, ReadsMetadataAndTensors) {
  for (const std::uint32_t version : {2u, 3u}) {
    GgufBuilder builder = valid_file();
    builder.version = version;
    const auto file = open_bytes(builder.bytes());
    EXPECT_EQ(file->version(), version);
    EXPECT_EQ(file->alignment(), 32u);
    ASSERT_EQ(file->metadata().size(), 6u);
    EXPECT_EQ(file->metadata()[0].key, "general.architecture");
    EXPECT_EQ(*file->get_string("general.architecture"), "llama");
    EXPECT_EQ(*file->get_integer("llama.block_count"), 2);
    EXPECT_EQ(*file->get_number("llama.rope.freq_base"), 10000.0);
    EXPECT_EQ(*file->get_bool("tokenizer.ggml.add_bos_token"), true);
    EXPECT_FALSE(file->get_integer("llama.absent").has_value());
    const GgufValue* tokens = file->get_array("tokenizer.ggml.tokens", GgufType::string);
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->strings, (std::vector<std::string_view>{"a", "b", "c"}));
    const GgufValue* scores = file->get_array("tokenizer.ggml.scores", GgufType::f32);
    ASSERT_NE(scores, nullptr);
    EXPECT_EQ(scores->as_double(2), 2.0);
    EXPECT_EQ(describe_gguf_value(*scores, 2), "[0.5, -1, ... (1 more)] (f32 x 3)");

    ASSERT_EQ(file->tensors().size(), 2u);
    const GgufTensor& norm = file->tensors()[0];
    EXPECT_EQ(norm.name, "output_norm.weight");
    EXPECT_EQ(norm.byte_size, 12u);
    EXPECT_EQ(norm.file_offset % 32, 0u);
    EXPECT_EQ(norm.file_offset, file->data_offset());
    float third;
    std::memcpy(&third, norm.data + 8, 4);
    EXPECT_EQ(third, 3.0f);
    const GgufTensor* embedding = file->find_tensor("token_embd.weight");
    ASSERT_NE(embedding, nullptr);
    EXPECT_EQ(embedding->shape(), (std::vector<std::int64_t>{2, 32}));
    EXPECT_EQ(embedding->byte_size, 68u);
    EXPECT_EQ(embedding->row_bytes(), 34u);
    EXPECT_EQ(embedding->offset, 32u);  // 12 bytes padded to 32
    EXPECT_STREQ(embedding->traits->name, ggml_type_traits(kQ8_0)->name);
  }
}

TEST(GgufTest, HonoursGeneralAlignment) {
  GgufBuilder builder = valid_file();
  builder.kv_u32("general.alignment", 64);
  builder.alignment = 64;
  const auto file = open_bytes(builder.bytes());
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->data_offset() % 64, 0u);
  EXPECT_EQ(file->tensors()[1].offset, 64u);
}

TEST(GgufTest, RefusesBadMagicAndVersions) {
  std::string bytes = valid_file().bytes();
  bytes[0] = 'X';
  EXPECT_CONTAINS(refusal(bytes), "not a GGUF file");
  EXPECT_CONTAINS(refusal("GG"), "not a GGUF file");
  GgufBuilder builder = valid_file();
  builder.version = 1;
  EXPECT_CONTAINS(refusal(builder.bytes()), "version 1 is not supported");
  builder.version = 4;
  EXPECT_CONTAINS(refusal(builder.bytes()), "version 4 is not supported");
  builder.version = 0x03000000;
  EXPECT_CONTAINS(refusal(builder.bytes()), "big-endian");
}

TEST(GgufTest, RefusesCountsTheFileCannotHold) {
  GgufBuilder builder = valid_file();
  builder.kv_count = 1ull << 40;
  EXPECT_CONTAINS(refusal(builder.bytes()), "metadata_kv_count says 1099511627776");
  builder = valid_file();
  builder.tensor_count = 1ull << 40;
  EXPECT_CONTAINS(refusal(builder.bytes()), "tensor_count says 1099511627776");
}

TEST(GgufTest, RefusesTruncatedHeaders) {
  const std::string bytes = valid_file().bytes();
  // Cut inside the key/value pairs, then inside the tensor infos.
  EXPECT_CONTAINS(refusal(bytes.substr(0, 40)), "metadata_kv_count says 6 key/value pairs");
  const std::string cut = bytes.substr(0, bytes.find("token_embd.weight") + 5);
  EXPECT_CONTAINS(refusal(cut), "tensor info 1's name (17 bytes long)");
}

TEST(GgufTest, RefusesStringLengthsPastTheEnd) {
  GgufBuilder builder;
  builder.kv_raw("general.name", 8, le_bytes<std::uint64_t>(1ull << 62) + "abc");
  EXPECT_CONTAINS(refusal(builder.bytes()), "metadata 'general.name' (4611686018427387904 bytes long)");
}

TEST(GgufTest, RefusesUnknownValueTypes) {
  GgufBuilder builder;
  builder.kv_raw("general.name", 13, le_bytes<std::uint32_t>(0));
  EXPECT_CONTAINS(refusal(builder.bytes()), "metadata 'general.name''s type is 13, not a GGUF value type");
  builder = GgufBuilder();
  builder.kv_raw("general.list", 9, le_bytes<std::uint32_t>(77) + le_bytes<std::uint64_t>(0));
  EXPECT_CONTAINS(refusal(builder.bytes()), "element type is 77");
}

TEST(GgufTest, RefusesArraysOfArrays) {
  GgufBuilder builder;
  builder.kv_raw("general.nested", 9, le_bytes<std::uint32_t>(9) + le_bytes<std::uint64_t>(0));
  EXPECT_CONTAINS(refusal(builder.bytes()), "metadata 'general.nested' is an array of arrays");
}

TEST(GgufTest, RefusesArrayCountsTheFileCannotHold) {
  GgufBuilder builder;
  builder.kv_raw("tokenizer.ggml.tokens", 9, le_bytes<std::uint32_t>(8) + le_bytes<std::uint64_t>(1ull << 50));
  EXPECT_CONTAINS(refusal(builder.bytes()), "declares 1125899906842624 string elements");
  builder = GgufBuilder();
  const std::string huge_f32_array = le_bytes<std::uint32_t>(6) + le_bytes<std::uint64_t>(1ull << 40) + "12345678";
  builder.kv_raw("tokenizer.ggml.scores", 9, huge_f32_array);
  EXPECT_CONTAINS(refusal(builder.bytes()), "declares 1099511627776 f32 elements");
}

TEST(GgufTest, RefusesBoolsOtherThanZeroOrOne) {
  GgufBuilder builder;
  builder.kv_raw("tokenizer.ggml.add_bos_token", 7, std::string(1, '\x02'));
  EXPECT_CONTAINS(refusal(builder.bytes()), "'tokenizer.ggml.add_bos_token' is a bool holding 2");
}

TEST(GgufTest, RefusesDuplicateKeys) {
  GgufBuilder builder = valid_file();
  builder.kv_u32("llama.block_count", 3);
  EXPECT_CONTAINS(refusal(builder.bytes()), "metadata key 'llama.block_count' appears twice");
}

TEST(GgufTest, RefusesBadAlignment) {
  GgufBuilder builder = valid_file();
  builder.kv_u32("general.alignment", 24);
  EXPECT_CONTAINS(refusal(builder.bytes()), "'general.alignment' is 24; expected a power of two");
  builder = valid_file();
  builder.kv_i32("general.alignment", 32);
  EXPECT_CONTAINS(refusal(builder.bytes()), "'general.alignment' is i32; expected u32");
}

TEST(GgufTest, RefusesBadTensorNames) {
  GgufBuilder builder = valid_file();
  builder.tensors[0].name = "";
  EXPECT_CONTAINS(refusal(builder.bytes()), "tensor info 0 has an empty name");
  builder.tensors[0].name = std::string(64, 'n');
  EXPECT_CONTAINS(refusal(builder.bytes()), "is 64 bytes long; ggml allows at most 63");
  builder.tensors[0].name = "token_embd.weight";
  EXPECT_CONTAINS(refusal(builder.bytes()), "tensor 'token_embd.weight' appears twice");
}

TEST(GgufTest, RefusesBadDims) {
  GgufBuilder builder = valid_file();
  builder.tensors[0].ne = {3, 1, 1, 1, 1};
  EXPECT_CONTAINS(refusal(builder.bytes()), "tensor 'output_norm.weight' has 5 dims; expected 1 to 4");
  builder.tensors[0].ne = {};
  EXPECT_CONTAINS(refusal(builder.bytes()), "has 0 dims");
  builder.tensors[0].ne = {3, static_cast<std::uint64_t>(-2)};
  EXPECT_CONTAINS(refusal(builder.bytes()), "'output_norm.weight''s ne[1] is -2");
  builder.tensors[0].ne = {1ull << 32, 1ull << 31};
  EXPECT_CONTAINS(refusal(builder.bytes()), "dims multiply past 2^63 elements (ne[1] = 2147483648)");
}

TEST(GgufTest, RefusesUnknownTypesAndPartialBlocks) {
  GgufBuilder builder = valid_file();
  builder.tensors[0].type = 1000;
  EXPECT_CONTAINS(refusal(builder.bytes()), "tensor 'output_norm.weight' has type id 1000, which is no ggml type");
  builder = valid_file();
  builder.tensors[1].ne = {16, 4};
  EXPECT_CONTAINS(refusal(builder.bytes()), "rows of 16 values, not a multiple of its block of 32");
}

TEST(GgufTest, RefusesMisplacedTensors) {
  GgufBuilder builder = valid_file();
  builder.tensors[1].offset = 48;
  EXPECT_CONTAINS(refusal(builder.bytes()), "'token_embd.weight''s offset 48 is not a multiple of the alignment 32");
  builder.tensors[1].offset = 64;
  EXPECT_CONTAINS(refusal(builder.bytes()), "'token_embd.weight''s offset is 64; expected 32");
  builder = valid_file();
  builder.tensors[1].ne = {32, 4};  // 136 bytes declared, 68 stored
  EXPECT_CONTAINS(refusal(builder.bytes()), "tensor 'token_embd.weight' (q8_0, shape [4, 32]) needs bytes [32, 168)");
  // A valid file cut short: the last tensor's bytes pass the end.
  const std::string bytes = valid_file().bytes();
  EXPECT_CONTAINS(refusal(bytes.substr(0, bytes.size() - 40)), "needs bytes [32, 100)");
}

TEST(GgufTest, TypedGettersNameTheKeyAndType) {
  const auto file = open_bytes(valid_file().bytes());
  EXPECT_CONTAINS(input_error_message([&] { file->get_integer("general.architecture"); }),
                  "metadata 'general.architecture' is string; expected an integer");
  EXPECT_CONTAINS(input_error_message([&] { file->get_string("tokenizer.ggml.tokens"); }),
                  "is an array of string; expected a string");
  EXPECT_CONTAINS(input_error_message([&] { file->get_array("tokenizer.ggml.scores", GgufType::i32); }),
                  "is an array of f32; expected an array of i32");
}

}  // namespace
}  // namespace tqlab
