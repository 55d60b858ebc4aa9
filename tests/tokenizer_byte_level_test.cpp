// GPT-2's byte-to-character table (tokenizer/byte_level_alphabet.h), against the rule in OpenAI's
// gpt-2 encoder.py written out independently here, and the characters the vocabularies use.
#include <set>

#include <gtest/gtest.h>

#include "tokenizer/byte_level_alphabet.h"

namespace tqlab::tokenizer {
namespace {

TEST(ByteLevelAlphabetTest, FollowsGpt2Rule) {
  // bytes_to_unicode(): bs = printable ranges; every other byte b gets 256 + n, n counting up.
  std::vector<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
  const std::set<int> own(printable.begin(), printable.end());
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const char32_t expected = own.count(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
    EXPECT_EQ(byte_level_code_point(static_cast<std::uint8_t>(b)), expected) << "byte " << b;
  }
  EXPECT_EQ(n, 68);
}

TEST(ByteLevelAlphabetTest, KnownCharacters) {
  EXPECT_EQ(byte_level_code_point(' '), U'\u0120');   // 'Ġ', the space of GPT-2 vocabularies
  EXPECT_EQ(byte_level_code_point('\n'), U'\u010A');  // 'Ċ'
  EXPECT_EQ(byte_level_code_point(0x00), U'\u0100');
  EXPECT_EQ(byte_level_code_point(0x7F), U'\u0121');
  EXPECT_EQ(byte_level_code_point(0xAD), U'\u0143');  // the soft hyphen is shifted too
  EXPECT_EQ(byte_level_code_point('A'), U'A');
  EXPECT_EQ(byte_level_code_point(0xE9), U'\u00E9');
}

TEST(ByteLevelAlphabetTest, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string written;
  append_byte_level(all, written);
  std::string back;
  ASSERT_TRUE(append_bytes_of_byte_level(written, back));
  EXPECT_EQ(back, all);
  std::set<char32_t> distinct;
  for (int b = 0; b < 256; ++b) {
    const char32_t code_point = byte_level_code_point(static_cast<std::uint8_t>(b));
    distinct.insert(code_point);
    EXPECT_EQ(byte_of_byte_level_code_point(code_point), std::optional<std::uint8_t>(b));
  }
  EXPECT_EQ(distinct.size(), 256u);
}

TEST(ByteLevelAlphabetTest, RefusesCharactersOutsideTheAlphabet) {
  std::string out = "kept";
  EXPECT_FALSE(append_bytes_of_byte_level("ab\u4e00", out));  // a CJK character stands for no byte
  EXPECT_EQ(out, "kept");
  EXPECT_FALSE(append_bytes_of_byte_level("a\xff", out));  // nor does a stray byte
  EXPECT_FALSE(byte_of_byte_level_code_point(U' ').has_value());  // the space itself is shifted
  EXPECT_TRUE(append_bytes_of_byte_level("\u0120hello", out));
  EXPECT_EQ(out, "kept hello");
}

}  // namespace
}  // namespace tqlab::tokenizer
