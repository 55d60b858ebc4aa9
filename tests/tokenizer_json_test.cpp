// Loading tokenizer.json (tokenizer/tokenizer.h): both merge formats, SentencePiece-style
// pieces (Prepend/Replace, byte fallback, unk, BOS template, decoder), and every refusal naming
// the file, the JSON path and what is supported.
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tokenizer_test_util.h"

namespace tqlab::testing {
namespace {

using nlohmann::json;

// A SentencePiece-style tokenizer (Llama 2's shape) over a handful of tokens.
json sentencepiece_document() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"\u2581", 3}, {"a", 4}, {"b", 5}, {"c", 6},
                {"\u2581a", 7}, {"ab", 8}, {"\u2581ab", 9}, {"\u2581\u2581", 10}};
  for (int byte = 0; byte < 256; ++byte) vocab[fmt::format("<0x{:02X}>", byte)] = 11 + byte;
  auto special = [](int id, const char* content) {
    return json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")})},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", json::array({
          {{"type", "Prepend"}, {"prepend", "\u2581"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}})}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", {{"type", "TemplateProcessing"},
                          {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                          {"pair", json::array()},
                          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", {{"type", "Sequence"}, {"decoders", json::array({
          {{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
          {{"type", "ByteFallback"}}, {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}}},
      {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true},
                 {"vocab", vocab},
                 {"merges", json::array({"\u2581 a", "a b", "\u2581a b", "\u2581 \u2581"})}}}};
}

Tokenizer load_document(const std::string& name, const json& document) {
  return Tokenizer::load(write_temp_file(name, document.dump()));
}

std::string load_error(const std::string& name, const json& document) {
  const std::string path = write_temp_file(name, document.dump());
  return input_error_message([&] { Tokenizer::load(path); });
}

TEST(TokenizerJsonTest, SentencePieceStylePipeline) {
  const Tokenizer tokenizer = load_document("sp.json", sentencepiece_document());
  // "ab c": normalized "▁ab▁c"; merges: (▁,a) rank 0 and (a,b) rank 1 -> ▁a b -> (▁a,b) -> ▁ab.
  EXPECT_EQ(tokenizer.encode("ab c", true), (Ids{1, 9, 3, 6}));
  EXPECT_EQ(tokenizer.encode("ab c", false), (Ids{9, 3, 6}));
  EXPECT_TRUE(tokenizer.adds_special_tokens_by_default());
  // A character the vocabulary lacks falls back to its UTF-8 bytes; so does a stray byte.
  EXPECT_EQ(tokenizer.encode("a\u00e9", false), (Ids{7, 11 + 0xC3, 11 + 0xA9}));
  EXPECT_EQ(tokenizer.encode("a\xff", false), (Ids{7, 11 + 0xFF}));
  EXPECT_TRUE(tokenizer.takes_any_bytes());
  // Special tokens inside the text are matched, and each stretch after one gets its own "▁".
  EXPECT_EQ(tokenizer.encode("a</s>a", false), (Ids{7, 2, 7}));
  // Decoding: "▁" back to spaces, bytes fused back, the first space stripped.
  EXPECT_EQ(tokenizer.decode(Ids{9, 3, 6}, false), "ab c");
  EXPECT_EQ(tokenizer.decode(Ids{7, 11 + 0xC3, 11 + 0xA9}, false), "a\u00e9");
  EXPECT_EQ(tokenizer.decode(Ids{7, 11 + 0xFF}, false), "a\xff");  // the byte itself, not U+FFFD
  EXPECT_EQ(tokenizer.decode(Ids{1, 7}, true), "a");
  EXPECT_EQ(tokenizer.vocab_size(), 11 + 256);
}

TEST(TokenizerJsonTest, UnknownCharactersWithoutByteFallback) {
  json document = sentencepiece_document();
  document["model"]["byte_fallback"] = false;
  // fuse_unk: consecutive unknown characters become one <unk>.
  const Tokenizer fused = load_document("unk.json", document);
  EXPECT_EQ(fused.encode("a\u00e9\u00e8b", false), (Ids{7, 0, 5}));
  EXPECT_FALSE(fused.takes_any_bytes());
  EXPECT_NE(input_error_message([&] { fused.encode("a\xff", false); }).find("not UTF-8"), std::string::npos);
  document["model"]["fuse_unk"] = false;
  EXPECT_EQ(load_document("unfused.json", document).encode("a\u00e9\u00e8b", false), (Ids{7, 0, 0, 5}));
  // Without an unk token the character is dropped, as Hugging Face drops it.
  document["model"]["unk_token"] = nullptr;
  // (and its neighbours merge as if it had never been there: "▁a" "b" -> "▁ab").
  EXPECT_EQ(load_document("no_unk.json", document).encode("a\u00e9b", false), (Ids{9}));
}

TEST(TokenizerJsonTest, BothMergeFormatsGiveTheSameIds) {
  json pairs = sentencepiece_document();
  json list = json::array();
  for (const auto& merge : pairs["model"]["merges"]) {
    const std::string line = merge.get<std::string>();
    const std::size_t space = line.find(' ');
    list.push_back({line.substr(0, space), line.substr(space + 1)});
  }
  pairs["model"]["merges"] = list;
  const std::string text = "ab ab  abc \u00e9 a";
  EXPECT_EQ(load_document("pairs.json", pairs).encode(text, true),
            load_document("strings.json", sentencepiece_document()).encode(text, true));
}

TEST(TokenizerJsonTest, ByteLevelPostProcessorAndSequenceTemplates) {
  json document = sentencepiece_document();
  document["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false},
                                {"use_regex", true}};
  const Tokenizer byte_level = load_document("bl_post.json", document);
  EXPECT_FALSE(byte_level.adds_special_tokens_by_default());
  EXPECT_EQ(byte_level.encode("a", true), (Ids{7}));
  // Llama 3's published files: Sequence [ByteLevel, TemplateProcessing("<s>" $A "</s>")].
  json template_json = sentencepiece_document()["post_processor"];
  template_json["single"].push_back({{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}});
  template_json["special_tokens"]["</s>"] = {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}};
  document["post_processor"] = {{"type", "Sequence"},
                                {"processors", json::array({document["post_processor"], template_json})}};
  EXPECT_EQ(load_document("seq_post.json", document).encode("a", true), (Ids{1, 7, 2}));
}

TEST(TokenizerJsonTest, RefusalsNameFilePathAndWhatIsSupported) {
  json unigram = sentencepiece_document();
  unigram["model"]["type"] = "Unigram";
  std::string message = load_error("unigram.json", unigram);
  EXPECT_NE(message.find("unigram.json"), std::string::npos) << message;
  EXPECT_NE(message.find("model.type"), std::string::npos) << message;
  EXPECT_NE(message.find("'Unigram' is not supported (supported: BPE)"), std::string::npos) << message;

  json wordpiece = sentencepiece_document();
  wordpiece["model"]["type"] = "WordPiece";
  EXPECT_NE(load_error("wordpiece.json", wordpiece).find("'WordPiece' is not supported"), std::string::npos);

  json normalizer = sentencepiece_document();
  normalizer["normalizer"]["normalizers"][1] = {{"type", "NFKC"}};
  message = load_error("nfkc.json", normalizer);
  EXPECT_NE(message.find("normalizer.normalizers[1].type"), std::string::npos) << message;
  EXPECT_NE(message.find("'NFKC' is not supported (supported: NFC, Prepend, Replace, Sequence)"), std::string::npos)
      << message;

  json pre_tokenizer = sentencepiece_document();
  pre_tokenizer["pre_tokenizer"] = {{"type", "Whitespace"}};
  message = load_error("whitespace.json", pre_tokenizer);
  EXPECT_NE(message.find("pre_tokenizer.type"), std::string::npos) << message;
  EXPECT_NE(message.find("supported: ByteLevel, Split, Metaspace, Sequence"), std::string::npos) << message;

  json decoder = sentencepiece_document();
  decoder["decoder"]["decoders"][0] = {{"type", "WordPiece"}};
  EXPECT_NE(load_error("decoder.json", decoder).find("decoder.decoders[0].type"), std::string::npos);

  json unknown_merge = sentencepiece_document();
  unknown_merge["model"]["merges"].push_back("a zz");
  message = load_error("merge.json", unknown_merge);
  EXPECT_NE(message.find("model.merges"), std::string::npos) << message;
  EXPECT_NE(message.find("'zz', which is not in model.vocab"), std::string::npos) << message;

  json unmerged = sentencepiece_document();
  unmerged["model"]["merges"].push_back("b c");  // "bc" is no token
  EXPECT_NE(load_error("bc.json", unmerged).find("'bc', which is not in model.vocab"), std::string::npos);

  json malformed = sentencepiece_document();
  malformed["model"]["merges"].push_back("a b c");
  EXPECT_NE(load_error("three.json", malformed).find("not two tokens separated by one space"), std::string::npos);

  json dropout = sentencepiece_document();
  dropout["model"]["dropout"] = 0.1;
  EXPECT_NE(load_error("dropout.json", dropout).find("dropout"), std::string::npos);

  json nested = sentencepiece_document();
  json normalizer_chain = {{"type", "NFC"}};
  for (int i = 0; i < 40; ++i)
    normalizer_chain = {{"type", "Sequence"}, {"normalizers", json::array({normalizer_chain})}};
  nested["normalizer"] = normalizer_chain;
  EXPECT_NE(load_error("nested.json", nested).find("nested more than 32 deep"), std::string::npos);

  const std::string truncated = write_temp_file("truncated.json", sentencepiece_document().dump().substr(0, 300));
  message = input_error_message([&] { Tokenizer::load(truncated); });
  EXPECT_NE(message.find("tokenizer '" + truncated + "'"), std::string::npos) << message;

  const auto folder = std::filesystem::path(write_temp_file("placeholder", "")).parent_path() / "empty_folder";
  std::filesystem::create_directories(folder);
  EXPECT_NE(input_error_message([&] { Tokenizer::load(folder.string()); }).find("holds no tokenizer.json"),
            std::string::npos);
}

TEST(TokenizerJsonTest, FolderHoldingTokenizerJson) {
  const std::string path = write_temp_file("tokenizer.json", sentencepiece_document().dump());
  const Tokenizer tokenizer = Tokenizer::load(std::filesystem::path(path).parent_path().string());
  EXPECT_EQ(tokenizer.path(), path);
  EXPECT_EQ(tokenizer.sha256().size(), 64u);
  EXPECT_NE(input_error_message([&] { tokenizer.decode(Ids{4, 9999}, false); }).find("id 9999 (at position 1)"),
            std::string::npos);
}

}  // namespace
}  // namespace tqlab::testing
