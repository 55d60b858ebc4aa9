// NFC (tokenizer/nfc.h): known compositions, NUL bytes inside the text (utf8proc's NUL-terminated
// entry point would stop at the first), stray bytes kept, and the ASCII shortcut against one call
// of utf8proc on the whole text.
#include <cstdlib>
#include <random>

#include <gtest/gtest.h>
#include <utf8proc.h>

#include "tokenizer/nfc.h"

namespace tqlab::tokenizer {
namespace {

using namespace std::string_literals;

TEST(NfcTest, ComposesCanonically) {
  EXPECT_EQ(to_nfc("cafe\u0301"), "caf\u00e9");
  EXPECT_EQ(to_nfc("\u212b"), "\u00c5");          // ANGSTROM SIGN -> A WITH RING
  EXPECT_EQ(to_nfc("A\u030a"), "\u00c5");
  EXPECT_EQ(to_nfc("\u1100\u1161\u11a8"), "\uac01");  // conjoining jamo -> one Hangul syllable
  EXPECT_EQ(to_nfc("a\u0307\u0323"), "\u1ea1\u0307");  // marks reordered by combining class, then composed
  EXPECT_EQ(to_nfc("\ufb01 \u2460"), "\ufb01 \u2460");  // compatibility characters stay (that is NFKC)
  EXPECT_EQ(to_nfc(""), "");
  EXPECT_EQ(to_nfc("plain ASCII text\n"), "plain ASCII text\n");
}

TEST(NfcTest, NulBytesAreCharacters) {
  EXPECT_EQ(to_nfc("a\0e\u0301\0b"s), "a\0\u00e9\0b"s);
  EXPECT_EQ(to_nfc("\0\0"s), "\0\0"s);
  EXPECT_EQ(to_nfc("\u4e00\0\u0301"s), "\u4e00\0\u0301"s);  // the mark does not jump the NUL
}

TEST(NfcTest, StrayBytesStayWhereTheyAre) {
  EXPECT_EQ(to_nfc("\xff" "e\u0301\xfe"), "\xff\u00e9\xfe");
  EXPECT_EQ(to_nfc("e\xcc\u0301"), "e\xcc\u0301");  // a stray byte between base and mark blocks composing
  EXPECT_EQ(to_nfc("\xe6\x97"), "\xe6\x97");        // a truncated character
}

// One utf8proc call on the whole text, the definition the shortcut must agree with.
std::string nfc_by_one_call(const std::string& text) {
  utf8proc_uint8_t* mapped = nullptr;
  const auto length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                   static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  EXPECT_GE(length, 0);
  std::string out(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
  std::free(mapped);
  return out;
}

TEST(NfcTest, AsciiShortcutMatchesOneCallOnRandomText) {
  // ASCII letters, spaces and NULs mixed with combining marks, precomposed letters, jamo and CJK.
  const std::vector<std::string> parts = {"a", "e", "A", " ", "\n", "\0"s, "\u0301", "\u0323", "\u0307", "\u030a",
                                          "\u00e9", "\u1100", "\u1161", "\u11a8", "\u4e00", "\u212b", "\U0001F600"};
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const int length = static_cast<int>(rng() % 30);
    for (int i = 0; i < length; ++i) text += parts[rng() % parts.size()];
    ASSERT_EQ(to_nfc(text), nfc_by_one_call(text)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tqlab::tokenizer
