// Escaping of untrusted text (core/text.h): hand-derived cases for every rule, the
// UTF-8 edge cases of RFC 3629, the middle cut, and JSON that nlohmann can dump.
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"

namespace tqlab {
namespace {

using namespace std::literals;

TEST(TextTest, ValidUtf8IsKeptAsItIs) {
  for (std::string_view text : {"layers.0.k"sv, ""sv, "caf\xC3\xA9"sv, "\xE2\x9C\x93 \xF0\x9F\x98\x80"sv,
                                "a\\xFF"sv, "\xEF\xBF\xBF"sv, "\xF4\x8F\xBF\xBF"sv}) {
    EXPECT_TRUE(is_valid_utf8(text)) << text;
    EXPECT_EQ(printable(text), text);
    EXPECT_EQ(json_text(text), text);
  }
}

// Each byte outside a well-formed sequence is one \xNN; the valid bytes around it stay.
TEST(TextTest, InvalidBytesBecomeHexEscapes) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"caf\xE9", "caf\\xE9"},                       // latin-1
      {"\xFF\xFE", "\\xFF\\xFE"},                    // never in UTF-8
      {"\x80", "\\x80"},                             // a lone continuation byte
      {"\xC0\xAF", "\\xC0\\xAF"},                    // overlong '/'
      {"\xE0\x80\xAF", "\\xE0\\x80\\xAF"},           // overlong, 3 bytes
      {"\xED\xA0\x80", "\\xED\\xA0\\x80"},           // a UTF-16 surrogate, U+D800
      {"\xF4\x90\x80\x80", "\\xF4\\x90\\x80\\x80"},  // U+110000, beyond Unicode
      {"\xF5\x80\x80\x80", "\\xF5\\x80\\x80\\x80"},
      {"ab\xE2\x9C", "ab\\xE2\\x9C"},                // a sequence cut short at the end
      {"\xE2\x9Cx", "\\xE2\\x9Cx"},                  // ... or by an ASCII byte
      {"\xC3\xA9\xC3", "\xC3\xA9\\xC3"},
  };
  for (const auto& [raw, escaped] : cases) {
    EXPECT_FALSE(is_valid_utf8(raw)) << escaped;
    EXPECT_EQ(printable(raw), escaped);
    EXPECT_EQ(json_text(raw), escaped);
  }
  EXPECT_EQ(invalid_utf8_offset("ok\xC3\xA9\xFFz"), 4u);
  EXPECT_EQ(invalid_utf8_offset("ok"), std::string_view::npos);
}

// printable() keeps a message on one line and its reading order intact; json_text leaves
// those characters to JSON, which escapes them losslessly.
TEST(TextTest, LineBreakingAndReorderingCharactersAreEscapedForMessages) {
  const std::pair<std::string, std::string_view> cases[] = {
      {"a\nb", "a\\nb"},
      {"a\r\n\tb", "a\\r\\n\\tb"},
      {"nul\0x"s, "nul\\x00x"},
      {"\x1B[31mred", "\\x1B[31mred"},   // a terminal escape sequence
      {"del\x7F", "del\\x7F"},
      {"nel\xC2\x85", "nel\\u0085"},     // C1 control NEL
      {"ls\xE2\x80\xA8ps\xE2\x80\xA9", "ls\\u2028ps\\u2029"},
      {"\xE2\x80\xAEtxt.exe", "\\u202Etxt.exe"},  // right-to-left override
      {"\xE2\x81\xA6iso\xE2\x81\xA9", "\\u2066iso\\u2069"},
  };
  for (const auto& [raw, escaped] : cases) {
    EXPECT_EQ(printable(raw), escaped);
    EXPECT_EQ(json_text(raw), raw);
    EXPECT_TRUE(is_valid_utf8(raw));
  }
}

// A long name keeps its beginning and end, says how many of its bytes were cut, and the
// result never exceeds the limit nor splits a character or an escape.
TEST(TextTest, LongTextIsCutInTheMiddle) {
  const std::string name = "model.layers." + std::string(100000, 'x') + ".self_attn.k_proj";
  const std::string shown = printable(name);
  EXPECT_LE(shown.size(), kMaxShownNameBytes);
  EXPECT_TRUE(shown.starts_with("model.layers.x")) << shown;
  EXPECT_TRUE(shown.ends_with("xx.self_attn.k_proj")) << shown;
  // Kept: 80 bytes minus the marker's; the marker counts the bytes of the name left out.
  const std::size_t marker_at = shown.find("\xE2\x80\xA6[");
  ASSERT_NE(marker_at, std::string::npos) << shown;
  const std::size_t kept = shown.size() - (shown.find("]\xE2\x80\xA6") + 4 - marker_at);
  EXPECT_NE(shown.find(fmt::format("[{} bytes cut]", name.size() - kept)), std::string::npos) << shown;

  // Escapes and multi-byte characters are never split: every cut lands between units.
  const std::string awkward = std::string(60, '\xFF') + std::string(30, '\n') + "\xE2\x9C\x93";
  for (std::size_t limit : {40u, 41u, 57u, 80u, 99u}) {
    const std::string cut = printable(awkward, limit);
    EXPECT_LE(cut.size(), limit) << limit;
    EXPECT_TRUE(is_valid_utf8(cut)) << cut;
    EXPECT_EQ(cut.find('\n'), std::string::npos);
    const std::string head = cut.substr(0, cut.find("\xE2\x80\xA6["));
    EXPECT_EQ(head.size() % 4, 0u) << "cut inside a \\xNN escape: " << cut;
    EXPECT_TRUE(cut.ends_with("\\n\xE2\x9C\x93") || cut.ends_with("\xE2\x9C\x93")) << cut;
  }
  EXPECT_EQ(printable("short", 3), "short");  // limits below the marker's size are raised
  EXPECT_EQ(printable(std::string(40, 'a'), 40), std::string(40, 'a'));
}

// The message-level pass (core/log.cpp) runs printable over text that already went through
// it: nothing may change a second time.
TEST(TextTest, PrintableIsIdempotent) {
  for (const std::string& raw : {"caf\xE9\n"s, std::string(5000, '\x80'), "\xE2\x80\xAE x \\xFF"s,
                                 "model." + std::string(1000, 'y')}) {
    const std::string once = printable(raw, 200);
    EXPECT_EQ(printable(once, 200), once);
    EXPECT_EQ(printable(once, kMaxMessageBytes), once);
  }
}

// nlohmann::json throws on invalid UTF-8 when dumping: whatever json_text returns dumps.
TEST(TextTest, JsonTextAlwaysDumps) {
  std::string every_byte;
  for (int byte = 0; byte < 256; ++byte) every_byte.push_back(static_cast<char>(byte));
  for (const std::string& raw : {every_byte, "k\xFF\nv"s, std::string(100000, '\xC3')}) {
    const nlohmann::json document = {{"name", json_text(raw)}, {json_text(raw), 1}};
    EXPECT_NO_THROW((void)document.dump()) << printable(raw);
    EXPECT_TRUE(is_valid_utf8(json_text(raw)));
  }
  // A newline in a valid name survives JSON exactly (JSON escapes it as \n).
  const nlohmann::json parsed = nlohmann::json::parse(nlohmann::json({{"n", json_text("a\nb")}}).dump());
  EXPECT_EQ(parsed["n"], "a\nb");
}

}  // namespace
}  // namespace tqlab
