// NFC through utf8proc (nfc.h).
//
// Speed: most text is ASCII, which NFC leaves alone, and no ASCII character
// composes with the character before it (the second character of every
// canonical composition is a combining mark or a Hangul vowel or final), so
// the text can be cut before any ASCII byte and each piece normalized on its
// own. Runs of ASCII are copied; only the pieces that hold other characters,
// from the ASCII character before them (which may take a combining mark) up to
// the next ASCII byte, go through utf8proc.
#include "tokenizer/nfc.h"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

#include "core/error.h"
#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {
namespace {

bool is_ascii(char byte) { return static_cast<unsigned char>(byte) < 0x80; }

// Appends NFC of `text`, which is well-formed UTF-8 (possibly holding NULs).
void append_nfc_of_valid(std::string_view text, std::string& out) {
  utf8proc_uint8_t* mapped = nullptr;
  const auto length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                   static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  if (length < 0) {
    if (length == UTF8PROC_ERROR_NOMEM) throw std::bad_alloc();
    throw InternalError(std::string("utf8proc could not normalize well-formed UTF-8: ") +
                        utf8proc_errmsg(length));
  }
  out.append(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
}

// Appends NFC of `text` (no ASCII inside except possibly its first byte), keeping stray bytes.
void append_nfc_of_piece(std::string_view text, std::string& out) {
  std::size_t valid_start = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    char32_t code_point = 0;
    const std::size_t length = utf8_char_at(text.substr(at), code_point);
    if (length != 0) {
      at += length;
      continue;
    }
    append_nfc_of_valid(text.substr(valid_start, at - valid_start), out);
    out += text[at];  // a stray byte stays as it is
    valid_start = ++at;
  }
  append_nfc_of_valid(text.substr(valid_start), out);
}

}  // namespace

std::string to_nfc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    // Copy ASCII up to the last ASCII byte before the next non-ASCII byte.
    std::size_t non_ascii = at;
    while (non_ascii < text.size() && is_ascii(text[non_ascii])) ++non_ascii;
    if (non_ascii == text.size()) {
      out.append(text.substr(at));
      break;
    }
    const std::size_t piece_start = non_ascii > at ? non_ascii - 1 : non_ascii;
    out.append(text.substr(at, piece_start - at));
    std::size_t piece_end = non_ascii;
    while (piece_end < text.size() && !is_ascii(text[piece_end])) ++piece_end;
    append_nfc_of_piece(text.substr(piece_start, piece_end - piece_start), out);
    at = piece_end;
  }
  return out;
}

}  // namespace tqlab::tokenizer
