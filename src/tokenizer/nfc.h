// Unicode Normalization Form C (canonical decomposition, then composition),
// the NFC normalizer of tokenizer.json (Qwen2/Qwen3), done by utf8proc.
#pragma once

#include <string>
#include <string_view>

namespace tqlab::tokenizer {

/// `text` in NFC. NUL bytes are characters like any other (utf8proc is called
/// with the text's length, never through its NUL-terminated entry points).
/// Text need not be UTF-8: every stretch of well-formed UTF-8 is normalized on
/// its own and every stray byte is kept where it was.
std::string to_nfc(std::string_view text);

}  // namespace tqlab::tokenizer
