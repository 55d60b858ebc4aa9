// Text from files and command lines, shown to people and written into JSON.
//
// Tensor names, metadata keys and values, npz member names and paths are bytes
// someone else chose: they need not be UTF-8, and may hold newlines or run to
// 100 kB. One escaping rule serves every message, table and JSON document:
//
//   - valid UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF)
//     is kept as it is;
//   - every byte that does not belong to a valid UTF-8 sequence becomes \xNN
//     (two uppercase hex digits), so "k\xFF" is the name k followed by byte 0xFF.
//
// printable() also turns characters that would break a line or reorder it
// into escapes, for messages and tables: \n \r \t, \xNN for the other C0
// controls and DEL, and \u+4 hex digits for C1 controls (U+0080..U+009F), the
// line and paragraph separators U+2028/U+2029 and the bidirectional controls
// U+202A..U+202E, U+2066..U+2069. json_text() leaves those to JSON, which
// escapes them itself without loss.
//
// The escapes are for reading, not for decoding: a name that really holds a
// backslash followed by "xFF" prints the same as one holding byte 0xFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tqlab {

/// Bytes a name shown in a message or table is cut to (printable's default).
inline constexpr std::size_t kMaxShownNameBytes = 80;
/// Bytes a whole log message is cut to.
inline constexpr std::size_t kMaxMessageBytes = 500;

/// True when `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

/// Offset of the first byte of `text` that belongs to no well-formed UTF-8
/// sequence, or std::string_view::npos when there is none.
std::size_t invalid_utf8_offset(std::string_view text);

/// `text` escaped for one line of a message or table, at most `max_bytes` bytes:
/// longer text keeps its beginning and end around "…[N bytes cut]…", N counting
/// the bytes of `text` left out. Never cuts inside a character or an escape.
/// `max_bytes` below 40 is raised to 40 so the marker always fits.
std::string printable(std::string_view text, std::size_t max_bytes = kMaxShownNameBytes);

/// `text` with only its invalid UTF-8 bytes escaped (\xNN): valid UTF-8, as a
/// JSON string value must be (nlohmann::json throws on anything else).
std::string json_text(std::string_view text);

}  // namespace tqlab
