// The table of byte_level_alphabet.h, built once from GPT-2's rule.
#include "tokenizer/byte_level_alphabet.h"

#include <array>

#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {
namespace {

// The bytes that stand for themselves: printable ASCII and Latin-1 without the soft hyphen.
constexpr bool stands_for_itself(unsigned byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct Alphabet {
  std::array<char32_t, 256> code_point{};
  std::array<std::string, 256> utf8;  // code_point[b] as UTF-8
  std::array<std::int16_t, 0x144> byte_of{};  // code point -> byte, -1 when none

  Alphabet() {
    byte_of.fill(-1);
    unsigned next_shifted = 0;
    for (unsigned byte = 0; byte < 256; ++byte) {
      code_point[byte] = stands_for_itself(byte) ? byte : 0x100 + next_shifted++;
      byte_of[code_point[byte]] = static_cast<std::int16_t>(byte);
      append_utf8(code_point[byte], utf8[byte]);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet table;
  return table;
}

}  // namespace

char32_t byte_level_code_point(std::uint8_t byte) { return alphabet().code_point[byte]; }

std::optional<std::uint8_t> byte_of_byte_level_code_point(char32_t code_point) {
  const Alphabet& table = alphabet();
  if (code_point >= table.byte_of.size() || table.byte_of[code_point] < 0) return std::nullopt;
  return static_cast<std::uint8_t>(table.byte_of[code_point]);
}

void append_byte_level(std::string_view bytes, std::string& out) {
  const Alphabet& table = alphabet();
  for (const char byte : bytes) out += table.utf8[static_cast<unsigned char>(byte)];
}

bool append_bytes_of_byte_level(std::string_view token, std::string& out) {
  const std::size_t old_size = out.size();
  std::size_t at = 0;
  while (at < token.size()) {
    char32_t code_point = 0;
    const std::size_t length = utf8_char_at(token.substr(at), code_point);
    const auto byte = length == 0 ? std::nullopt : byte_of_byte_level_code_point(code_point);
    if (!byte) {
      out.resize(old_size);
      return false;
    }
    out += static_cast<char>(*byte);
    at += length;
  }
  return true;
}

}  // namespace tqlab::tokenizer
