// Real tokenizer.json files: the bundled sample model's byte-per-token tokenizer (id = byte value
// for any bytes), and the Llama 3, Qwen3 and Llama 2 (Mistral) files of the npm reference packages.
// The ids pinned here were given by Hugging Face tokenizers (the Rust library, npm `tokenizers`)
// for the same strings; tests/cli/tokenizer_reference.sh compares whole texts with it.
#include <random>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level_alphabet.h"
#include "tokenizer/nfc.h"
#include "tokenizer_test_util.h"

namespace tqlab::testing {
namespace {

using namespace std::string_literals;

TEST(RealTokenizerTest, BytePerTokenGivesByteValuesForAnyBytes) {
  const Tokenizer tokenizer = Tokenizer::load(byte_per_token_tokenizer_path());
  EXPECT_TRUE(tokenizer.takes_any_bytes());
  EXPECT_FALSE(tokenizer.adds_special_tokens_by_default());
  EXPECT_EQ(tokenizer.vocab_size(), 256);
  std::mt19937_64 rng(3);
  std::vector<std::string> texts = {"\0"s, "\xff\xfe\x80"s, "caf\xc3\xa9 \xed\xa0\x80 \0\0 \r\n\t"s,
                                    "\xf0\x9f\x98\x80\xe2\x80\x8d"s};
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  texts.push_back(all);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text(1 + rng() % 300, '\0');
    for (char& c : text) c = static_cast<char>(rng());
    texts.push_back(text);
  }
  for (const std::string& text : texts) {
    Ids expected;
    for (const char c : text) expected.push_back(static_cast<unsigned char>(c));
    const Ids ids = tokenizer.encode(text, true);
    ASSERT_EQ(ids, expected);
    ASSERT_EQ(tokenizer.decode(ids, false), text);
  }
}

TEST(RealTokenizerTest, PinnedIdsFromHuggingFace) {
  const Tokenizer* llama3 = real_tokenizer("llama3");
  const Tokenizer* qwen3 = real_tokenizer("qwen3");
  const Tokenizer* llama2 = real_tokenizer("llama2");
  ASSERT_TRUE(llama3 && qwen3 && llama2);
  const std::string special = "<s>Hi</s> there <|im_start|>x";
  EXPECT_EQ(llama3->encode("Hello world", true), (Ids{9906, 1917}));
  EXPECT_EQ(llama3->encode(" Hello  world\n\n", true), (Ids{22691, 220, 1917, 271}));
  EXPECT_EQ(llama3->encode("<|begin_of_text|>abc", false), (Ids{128000, 13997}));
  EXPECT_EQ(qwen3->encode("Hello world", true), (Ids{9707, 1879}));
  EXPECT_EQ(qwen3->encode(special, false), (Ids{44047, 29, 13048, 522, 82, 29, 1052, 220, 151644, 87}));
  EXPECT_EQ(qwen3->encode("e\u0301 caf\u00e9", false), (Ids{963, 51950}));  // NFC first: "é café"
  EXPECT_EQ(llama2->encode("Hello world", true), (Ids{1, 22557, 1526}));
  EXPECT_EQ(llama2->encode(special, true),
            (Ids{1, 1, 15359, 2, 28705, 736, 523, 28766, 321, 28730, 2521, 28766, 28767, 28744}));
  EXPECT_EQ(llama2->encode("a\tb\r\nc", false), (Ids{264, 12, 28726, 28801, 13, 28717}));
  // What each family adds by default: Llama 2 its <s>; these Llama 3 and Qwen3 files nothing.
  EXPECT_TRUE(llama2->adds_special_tokens_by_default());
  EXPECT_FALSE(llama3->adds_special_tokens_by_default());
  EXPECT_FALSE(qwen3->adds_special_tokens_by_default());
  EXPECT_EQ(llama3->vocab_size(), 128256);
  EXPECT_EQ(qwen3->vocab_size(), 151669);
  EXPECT_EQ(llama2->vocab_size(), 32000);
}

// A stray byte is never part of a split match and is a piece of its own, so in a byte-level
// family the ids of A + stray + B are those of A, the byte's own token, then those of B.
TEST(RealTokenizerTest, StrayBytesInByteLevelFamilies) {
  const std::vector<std::string> stretches = {"Hello",        " world", "  ",           "\n",      "caf\u00e9", "123",
                                              "\u65e5\u672c", "it's",   "<|im_start|>", "e\u0301", "!!",        ""};
  std::mt19937_64 rng(11);
  for (const std::string family : {"llama3", "qwen3"}) {
    const Tokenizer* tokenizer = real_tokenizer(family);
    ASSERT_NE(tokenizer, nullptr);
    const auto vocab = nlohmann::json::parse(read_file(real_tokenizer_path(family)))["model"]["vocab"];
    for (int trial = 0; trial < 300; ++trial) {
      const std::string before = stretches[rng() % stretches.size()] + stretches[rng() % stretches.size()];
      const std::string after = stretches[rng() % stretches.size()] + stretches[rng() % stretches.size()];
      const auto stray = static_cast<unsigned char>(0x80 + rng() % 0x80);  // never a whole character alone
      std::string stray_char;
      tokenizer::append_byte_level(std::string(1, static_cast<char>(stray)), stray_char);
      Ids expected = tokenizer->encode(before, false);
      expected.push_back(vocab.at(stray_char).get<std::int32_t>());
      const Ids tail = tokenizer->encode(after, false);
      expected.insert(expected.end(), tail.begin(), tail.end());
      const std::string text = before + static_cast<char>(stray) + after;
      ASSERT_EQ(tokenizer->encode(text, false), expected) << family << " " << text;
      // Decoding gives the bytes back (Qwen3: after its NFC normalizer).
      ASSERT_EQ(tokenizer->decode(expected, false), family == "qwen3" ? tokenizer::to_nfc(text) : text) << family;
    }
  }
}

TEST(RealTokenizerTest, Llama2TakesAnyBytesThroughByteFallback) {
  const Tokenizer* llama2 = real_tokenizer("llama2");
  ASSERT_NE(llama2, nullptr);
  EXPECT_TRUE(llama2->takes_any_bytes());
  // "<0xNN>" is id 3 + NN in this vocabulary.
  EXPECT_EQ(llama2->encode("\xff", false), (Ids{28705, 3 + 0xFF}));  // "▁" then the byte
  const std::string text = "ab\xfe\xed\xa0\x80 cd\xc3";
  EXPECT_EQ(llama2->decode(llama2->encode(text, false), false), text);
}

// Llama 2 texts are cut into words before "▁" when no merge joins a character to a following "▁"
// (bpe_model.h). A copy of the file with one such merge added (for a character the text does not
// hold, so it cannot fire) must merge the whole text as one word and give the same ids.
TEST(RealTokenizerTest, Llama2WordCutsChangeNothing) {
  const Tokenizer* llama2 = real_tokenizer("llama2");
  ASSERT_NE(llama2, nullptr);
  auto document = nlohmann::json::parse(read_file(real_tokenizer_path("llama2")));
  document["model"]["vocab"]["\u4e00\u2581"] = 32000;
  document["model"]["merges"].push_back("\u4e00 \u2581");
  const Tokenizer uncut = Tokenizer::load(write_temp_file("llama2_uncut.json", document.dump()));
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "The  quick brown fox\tjumps   over the lazy dog. \u00c9t\u00e9 \u65e5\u672c\u8a9e\n\n  ";
    text += std::to_string(i * 7919) + " <s> ok</s>  \xff ";
  }
  EXPECT_EQ(uncut.encode(text, true), llama2->encode(text, true));
}

// encode's max_ids: exactly the first max_ids ids of the whole text's encoding, for every
// prefix length (inside a piece, at added tokens, around the special ids each family adds).
TEST(RealTokenizerTest, MaxIdsGivesThePrefixOfTheWholeEncoding) {
  std::string text;
  for (int i = 0; i < 12; ++i) {
    text += "The  quick brown fox\tjumps over the lazy dog. \u00c9t\u00e9 \u65e5\u672c\u8a9e\n\n ";
    text += std::to_string(i * 7919) + " <s> ok</s> <|im_start|>x ";
  }
  for (const char* name : {"llama3", "qwen3", "llama2"}) {
    const Tokenizer* tokenizer = real_tokenizer(name);
    ASSERT_NE(tokenizer, nullptr) << name;
    for (const bool special : {false, true}) {
      const Ids whole = tokenizer->encode(text, special);
      ASSERT_GT(whole.size(), 100u) << name;
      for (std::size_t limit = 0; limit <= whole.size() + 2; ++limit) {
        const Ids prefix = tokenizer->encode(text, special, {}, limit);
        const std::size_t expected = std::min(limit, whole.size());
        ASSERT_EQ(prefix, Ids(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(expected)))
            << name << " max_ids " << limit << (special ? " with special tokens" : "");
      }
    }
  }
}

}  // namespace
}  // namespace tqlab::testing
