// Added tokens (tokenizer/added_tokens.h) through the whole tokenizer: leftmost-longest matching,
// lstrip, rstrip, single_word, normalized (matched after the normalizer, in normalized form), ids
// as Hugging Face assigns them; and the SentencePiece-style pipeline around them.
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tokenizer_test_util.h"

namespace tqlab::testing {
namespace {

using nlohmann::json;

// A tokenizer whose model knows the characters of `characters` one by one (ids 0..n-1, no merges),
// with `added` as its added_tokens and optionally a normalizer.
std::string letters_tokenizer(const std::string& name, const std::string& characters, const json& added,
                              const json& normalizer = nullptr) {
  json vocab = json::object();
  for (std::size_t i = 0; i < characters.size(); ++i) vocab[std::string(1, characters[i])] = i;
  const json document = {{"version", "1.0"},         {"added_tokens", added},   {"normalizer", normalizer},
                         {"pre_tokenizer", nullptr}, {"post_processor", nullptr}, {"decoder", nullptr},
                         {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  return write_temp_file(name, document.dump());
}

json added_token(int id, const std::string& content, json flags = json::object()) {
  json token = {{"id", id},        {"content", content}, {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  for (const auto& [key, value] : flags.items()) token[key] = value;
  return token;
}

// ids 0..30: a..z 0..25, ' ' 26, '<' 27, '>' 28, '/' 29, '|' 30; added tokens count on from 31.
const std::string kLetters = "abcdefghijklmnopqrstuvwxyz <>/|";

Ids ids_of(const std::string& path, const std::string& text) { return Tokenizer::load(path).encode(text, false); }

TEST(AddedTokensTest, LeftmostLongestMatch) {
  const std::string path = letters_tokenizer(
      "longest.json", kLetters, json::array({added_token(31, "<s>"), added_token(32, "<s>x"), added_token(33, "s>")}));
  // At '<' both "<s>" and "<s>x" start: the longer wins; "s>" starts later and loses to "<s>".
  EXPECT_EQ(ids_of(path, "a<s>xb"), (Ids{0, 32, 1}));
  EXPECT_EQ(ids_of(path, "a<s>b"), (Ids{0, 31, 1}));
  EXPECT_EQ(ids_of(path, "s>"), (Ids{33}));
  EXPECT_EQ(ids_of(path, "<<s>>"), (Ids{27, 31, 28}));
}

TEST(AddedTokensTest, LstripAndRstripTakeTheWhiteSpace) {
  const std::string lstrip =
      letters_tokenizer("lstrip.json", kLetters, json::array({added_token(31, "<m>", {{"lstrip", true}})}));
  EXPECT_EQ(ids_of(lstrip, "a  <m> b"), (Ids{0, 31, 26, 1}));  // both spaces before join the token
  EXPECT_EQ(ids_of(lstrip, "<m><m>"), (Ids{31, 31}));
  const std::string rstrip =
      letters_tokenizer("rstrip.json", kLetters, json::array({added_token(31, "<m>", {{"rstrip", true}})}));
  EXPECT_EQ(ids_of(rstrip, "a  <m>  b"), (Ids{0, 26, 26, 31, 1}));
  // lstrip does not take white space that an earlier token's rstrip took.
  const std::string both = letters_tokenizer(
      "both.json", kLetters,
      json::array({added_token(31, "<m>", {{"rstrip", true}}), added_token(32, "<n>", {{"lstrip", true}})}));
  EXPECT_EQ(ids_of(both, "<m>  <n>"), (Ids{31, 32}));
}

TEST(AddedTokensTest, SingleWordNeedsNoWordCharacterAround) {
  const std::string path =
      letters_tokenizer("single.json", kLetters, json::array({added_token(31, "<w>", {{"single_word", true}})}));
  EXPECT_EQ(ids_of(path, "a <w> b"), (Ids{0, 26, 31, 26, 1}));
  EXPECT_EQ(ids_of(path, "<w>"), (Ids{31}));
  EXPECT_EQ(ids_of(path, "a<w>"), (Ids{0, 27, 22, 28}));  // a letter before: not a match
  EXPECT_EQ(ids_of(path, "<w>b"), (Ids{27, 22, 28, 1}));  // a letter after
  EXPECT_EQ(ids_of(path, "/<w>/"), (Ids{29, 31, 29}));   // punctuation is no word character
}

TEST(AddedTokensTest, NormalizedTokensMatchAfterTheNormalizer) {
  const json replace_x = {{"type", "Replace"}, {"pattern", {{"String", "x"}}}, {"content", "y"}};
  // "xx" with normalized true is looked for as "yy" in the normalized text; with normalized
  // false it is looked for in the raw text, before the normalizer turns it into "yy".
  const std::string normalized = letters_tokenizer(
      "normalized.json", kLetters, json::array({added_token(31, "xx", {{"normalized", true}})}), replace_x);
  EXPECT_EQ(ids_of(normalized, "axxb"), (Ids{0, 31, 1}));
  EXPECT_EQ(ids_of(normalized, "ayyb"), (Ids{0, 31, 1}));
  const std::string raw = letters_tokenizer("raw.json", kLetters, json::array({added_token(31, "xx")}), replace_x);
  EXPECT_EQ(ids_of(raw, "axxb"), (Ids{0, 31, 1}));
  EXPECT_EQ(ids_of(raw, "ayyb"), (Ids{0, 24, 24, 1}));
  // Decoding gives what the token was matched as: its normalized form.
  EXPECT_EQ(Tokenizer::load(normalized).decode(Ids{31}, false), "yy");
}

TEST(AddedTokensTest, IdsFollowTheVocabularyThenCountOn) {
  // "a" is in the model vocabulary (id 0): that id is kept whatever the file says; a new string
  // gets the next id after the vocabulary (31 entries, ids 0..30), in file order.
  const std::string path = letters_tokenizer("ids.json", kLetters,
                                             json::array({added_token(7, "a"), added_token(40, "<new>")}));
  const Tokenizer tokenizer = Tokenizer::load(path);
  EXPECT_EQ(tokenizer.encode("<new>a", false), (Ids{31, 0}));
  EXPECT_EQ(tokenizer.vocab_size(), 32);
}

TEST(AddedTokensTest, SkipSpecialTokensWhenDecoding) {
  const std::string path = letters_tokenizer(
      "skip.json", kLetters, json::array({added_token(31, "<s>"), added_token(32, "<t>", {{"special", false}})}));
  const Tokenizer tokenizer = Tokenizer::load(path);
  const Ids ids = tokenizer.encode("<s>ab<t>", false);
  EXPECT_EQ(ids, (Ids{31, 0, 1, 32}));
  EXPECT_EQ(tokenizer.decode(ids, false), "<s> a b <t>");  // no decoder: joined with spaces
  EXPECT_EQ(tokenizer.decode(ids, true), "a b <t>");
}

}  // namespace
}  // namespace tqlab::testing
