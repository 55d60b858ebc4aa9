// Escaping of untrusted text (rules in text.h).
#include "core/text.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace tqlab {
namespace {

constexpr std::size_t kMinCutBytes = 40;

// Length (1..4) of the well-formed UTF-8 sequence starting at text[at], and its
// code point; 0 when the byte there starts none (RFC 3629, table 3-7 of Unicode).
std::size_t utf8_sequence(std::string_view text, std::size_t at, char32_t& code_point) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned lead = byte(at);
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  std::size_t length = 0;
  unsigned low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong 3-byte forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong 4-byte forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong 2-byte) or F5..FF
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  }
  char32_t value = lead & (0xFF >> (length + 1));
  for (std::size_t i = 1; i < length; ++i) value = (value << 6) | (byte(at + i) & 0x3F);
  code_point = value;
  return length;
}

// The escape printable() uses for a character that would break or reorder a line, or "".
std::string line_safe_escape(char32_t c) {
  switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (c < 0x20 || c == 0x7F) return fmt::format("\\x{:02X}", static_cast<unsigned>(c));
  const bool c1 = c >= 0x80 && c <= 0x9F;
  const bool separator = c == 0x2028 || c == 0x2029;
  const bool bidi = (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
  if (c1 || separator || bidi) return fmt::format("\\u{:04X}", static_cast<unsigned>(c));
  return {};
}

// Escapes `text`; when `boundaries` is given, records after each character or
// escape the pair (bytes of output so far, bytes of text consumed so far).
std::string escape(std::string_view text, bool line_safe,
                   std::vector<std::pair<std::size_t, std::size_t>>* boundaries) {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    char32_t code_point = 0;
    const std::size_t length = utf8_sequence(text, at, code_point);
    if (length == 0) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[at]));
      at += 1;
    } else {
      const std::string escaped = line_safe ? line_safe_escape(code_point) : std::string();
      if (escaped.empty()) {
        out.append(text.substr(at, length));
      } else {
        out += escaped;
      }
      at += length;
    }
    if (boundaries != nullptr) boundaries->emplace_back(out.size(), at);
  }
  return out;
}

}  // namespace

std::size_t invalid_utf8_offset(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    char32_t code_point = 0;
    const std::size_t length = utf8_sequence(text, at, code_point);
    if (length == 0) return at;
    at += length;
  }
  return std::string_view::npos;
}

bool is_valid_utf8(std::string_view text) { return invalid_utf8_offset(text) == std::string_view::npos; }

std::string printable(std::string_view text, std::size_t max_bytes) {
  max_bytes = std::max(max_bytes, kMinCutBytes);
  std::vector<std::pair<std::size_t, std::size_t>> boundaries{{0, 0}};
  const std::string escaped = escape(text, true, &boundaries);
  if (escaped.size() <= max_bytes) return escaped;

  // The marker's length is bounded using text.size() for the count it will show.
  const auto marker = [](std::size_t cut) { return fmt::format("…[{} bytes cut]…", cut); };
  const std::size_t keep = max_bytes - marker(text.size()).size();
  const std::size_t head_budget = (keep + 1) / 2;
  const std::size_t tail_budget = keep - head_budget;
  // The last boundary whose output offset fits the head, and the first from which the rest fits the tail.
  std::size_t head = 0;
  while (head + 1 < boundaries.size() && boundaries[head + 1].first <= head_budget) ++head;
  std::size_t tail = boundaries.size() - 1;
  while (tail > head && escaped.size() - boundaries[tail - 1].first <= tail_budget) --tail;
  const auto [head_out, head_in] = boundaries[head];
  const auto [tail_out, tail_in] = boundaries[tail];
  return escaped.substr(0, head_out) + marker(tail_in - head_in) + escaped.substr(tail_out);
}

std::string json_text(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  return escape(text, false, nullptr);
}

}  // namespace tqlab
