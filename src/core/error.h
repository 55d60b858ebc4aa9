// Error types shared by every module.
//
// A user error (bad file, bad tensor, bad option) is an InputError: the CLI
// catches it once, prints its message and exits with code 2. Messages name
// the file, the tensor or the option and say what was expected. Internal
// invariants use assert(), not exceptions, except where Release builds must
// still refuse to go on (a numerical solver that did not converge): those
// throw InternalError, which the CLI reports as an internal error (exit 3).
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace tqlab {

/// Exit codes of every command (docs/REFERENCE.md#running-tqlab; also in `tqlab --help`).
enum ExitCode : int {
  kExitOk = 0,            ///< success / no difference
  kExitDifference = 1,    ///< checked and found a difference or violation
  kExitInputError = 2,    ///< usage or input error, or out of memory
  kExitInternalError = 3, ///< a bug in tqlab: any other exception
};

/// A user-facing error: bad input file, tensor, option or argument.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A broken internal invariant that Release builds check too: not the user's
/// fault, and nothing computed after it could be trusted.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InputError with an fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw InputError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tqlab
