// GPT-2's byte-to-character map, which byte-level BPE vocabularies are written in.
//
// Every byte value stands for one printable character, so that any byte string
// (valid UTF-8 or not) becomes a string of characters the vocabulary can hold:
// the bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for the code points of
// the same value; the other 68 bytes (controls, space, DEL, 0x80..0xA0, 0xAD)
// stand for U+0100, U+0101, ... in increasing byte order, so the space 0x20
// becomes U+0120 'Ġ' and the line feed 0x0A becomes U+010A 'Ċ'.
// Source: OpenAI's gpt-2 encoder.py, bytes_to_unicode(); the same table is in
// Hugging Face tokenizers' ByteLevel pre-tokenizer and decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tqlab::tokenizer {

/// The code point byte value `byte` stands for (U+0021..U+0143).
char32_t byte_level_code_point(std::uint8_t byte);

/// The byte value code point `code_point` stands for, or nullopt when it is not in the alphabet.
std::optional<std::uint8_t> byte_of_byte_level_code_point(char32_t code_point);

/// Appends `bytes` written in the alphabet (1 or 2 bytes of UTF-8 per input byte) to `out`.
void append_byte_level(std::string_view bytes, std::string& out);

/// Appends the bytes that `token`, a string in the alphabet, stands for to `out`.
/// Returns false and leaves `out` unchanged when a character of `token` is not
/// in the alphabet (an added token such as "<|im_start|>" may hold such characters).
bool append_bytes_of_byte_level(std::string_view token, std::string& out);

}  // namespace tqlab::tokenizer
