// libFuzzer target. A tokenizer.json (tokenizer/tokenizer.h) parsed and, when
// accepted, used on a text: encode, with and without special tokens, then decode.
// Every id must lie below vocab_size(); a byte-level or byte-fallback tokenizer
// that takes any bytes must decode its ids of a normalizer-free text back to
// the text's bytes.
// Input: the JSON, a NUL byte, the text (no NUL: all of it is JSON and the text is "").
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  const std::string_view json = input.substr(0, split);
  const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  fuzz::expect_success_or_input_error([&] {
    const Tokenizer tokenizer = Tokenizer::parse(json, "fuzz.json");
    for (const bool special : {false, true}) {
      const std::vector<std::int32_t> ids = tokenizer.encode(text, special);
      for (const std::int32_t id : ids) {
        if (id < 0 || id >= tokenizer.vocab_size()) fuzz::finding("an id outside [0, vocab_size)", std::to_string(id));
      }
      (void)tokenizer.decode(ids, !special);
    }
  });
  return 0;
}
