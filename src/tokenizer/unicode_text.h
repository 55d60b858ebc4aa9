// Walking text that may not be UTF-8: a tokenizer's input is bytes from a file.
//
// A "character" here is a well-formed UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or else one stray byte. The
// character classes follow the Unicode properties Hugging Face tokenizers
// use (its Rust `regex` crate's \s and \w), computed from utf8proc's general
// categories rather than from tables of our own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tqlab::tokenizer {

/// Length (1..4) of the well-formed UTF-8 character that `text` starts with,
/// its code point stored in `code_point`; 0 when `text` is empty or starts
/// with a byte that begins no well-formed character.
std::size_t utf8_char_at(std::string_view text, char32_t& code_point);

/// Bytes of the character at the start of non-empty `text`: the length of a
/// well-formed UTF-8 character, or 1 for a stray byte.
std::size_t char_or_byte_length(std::string_view text);

/// Appends the UTF-8 form (1..4 bytes) of `code_point` (at most U+10FFFF) to `out`.
void append_utf8(char32_t code_point, std::string& out);

/// Unicode White_Space: general categories Zs, Zl, Zp, the controls U+0009..U+000D
/// and U+0085 (what \s matches in Hugging Face's added-token rules).
bool is_white_space(char32_t code_point);

/// A "word" character as \w in Hugging Face's single_word rule: letters (L*),
/// marks (M*), decimal digits (Nd), letter numbers (Nl), connector punctuation
/// (Pc) and the joiners U+200C/U+200D.
bool is_word_char(char32_t code_point);

/// Byte offset where the run of white space that ends `text` begins (text.size() when none).
std::size_t trailing_white_space_start(std::string_view text);
/// Byte length of the run of white space that starts `text`.
std::size_t leading_white_space_length(std::string_view text);

}  // namespace tqlab::tokenizer
