// Characters and character classes over possibly malformed UTF-8 (rules in unicode_text.h).
#include "tokenizer/unicode_text.h"

#include <utf8proc.h>

namespace tqlab::tokenizer {

std::size_t utf8_char_at(std::string_view text, char32_t& code_point) {
  if (text.empty()) return 0;
  const auto lead = static_cast<unsigned char>(text[0]);
  if (lead < 0x80) {  // the common case, without a library call
    code_point = lead;
    return 1;
  }
  // utf8proc_iterate refuses overlong forms, surrogates and values above U+10FFFF.
  utf8proc_int32_t value = 0;
  const auto length = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                       static_cast<utf8proc_ssize_t>(text.size()), &value);
  if (length <= 0) return 0;
  code_point = static_cast<char32_t>(value);
  return static_cast<std::size_t>(length);
}

std::size_t char_or_byte_length(std::string_view text) {
  char32_t code_point = 0;
  const std::size_t length = utf8_char_at(text, code_point);
  return length == 0 ? 1 : length;
}

void append_utf8(char32_t code_point, std::string& out) {
  utf8proc_uint8_t bytes[4];
  const auto length = utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(length));
}

bool is_white_space(char32_t code_point) {
  if ((code_point >= 0x09 && code_point <= 0x0D) || code_point == 0x85) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: return true;
    default: return false;
  }
}

bool is_word_char(char32_t code_point) {
  if (code_point == 0x200C || code_point == 0x200D) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC: return true;
    default: return false;
  }
}

std::size_t trailing_white_space_start(std::string_view text) {
  // Walk forward (UTF-8 cannot be read backwards reliably when bytes may be stray),
  // remembering where the current run of white space began.
  std::size_t run_start = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    char32_t code_point = 0;
    const std::size_t length = utf8_char_at(text.substr(at), code_point);
    const bool space = length != 0 && is_white_space(code_point);
    at += length == 0 ? 1 : length;
    if (!space) run_start = at;
  }
  return run_start;
}

std::size_t leading_white_space_length(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    char32_t code_point = 0;
    const std::size_t length = utf8_char_at(text.substr(at), code_point);
    if (length == 0 || !is_white_space(code_point)) break;
    at += length;
  }
  return at;
}

}  // namespace tqlab::tokenizer
