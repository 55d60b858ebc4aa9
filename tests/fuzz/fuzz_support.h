// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cpp): what a parser may
// do with an input and what is a finding.
//
// Every target feeds the bytes to one parser through its public entry point.
// An InputError is the expected answer to a bad input; anything else that
// escapes (InternalError, nlohmann's exceptions, std::bad_alloc) is a finding
// and aborts, as do the sanitizers' reports, leaks, timeouts and out-of-memory.
//
// Messages: the CLI prints every message through core/log.h, which escapes
// bytes that are not printable UTF-8 and cuts the line to kMaxMessageBytes, so
// a raw byte in a message never reaches the terminal. What log cannot repair is
// a message that echoed a 100 kB name uncut (the cut keeps the line's two ends
// and may drop what the message says): a message longer than
// kMaxFindingMessageBytes, before that cut, is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/text.h"

namespace tqlab::fuzz {

/// Longest acceptable error message: a few names cut to kMaxShownNameBytes plus prose.
inline constexpr std::size_t kMaxFindingMessageBytes = 1000;

[[noreturn]] inline void finding(std::string_view what, std::string_view message) {
  std::fprintf(stderr, "FUZZ FINDING: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               printable(message, 2000).c_str());
  std::abort();
}

/// Checks an InputError's message: not empty, and bounded however long the input's names.
inline void check_message(std::string_view message) {
  if (message.empty()) finding("empty error message", message);
  if (message.size() > kMaxFindingMessageBytes) finding("error message too long", message);
}

/// Runs `body`, accepting an InputError with a well-formed message; anything else aborts.
template <typename Body>
void expect_success_or_input_error(Body&& body) {
  try {
    body();
  } catch (const InputError& error) {
    check_message(error.what());
  } catch (const std::bad_alloc&) {
    finding("std::bad_alloc (an allocation the input's size did not justify)", "");
  } catch (const std::exception& error) {
    finding("exception other than InputError", error.what());
  }
}

inline std::vector<std::byte> to_bytes(const std::uint8_t* data, std::size_t size) {
  const auto* begin = reinterpret_cast<const std::byte*>(data);
  return std::vector<std::byte>(begin, begin + size);
}

}  // namespace tqlab::fuzz
