// Logging behind a small header of our own, so that spdlog (a heavy header)
// is compiled once in log.cpp and not in every translation unit.
#pragma once

#include <string>

#include <fmt/format.h>

namespace tqlab::log {

enum class Level { debug, info, warn, error };

/// Sets the minimum level printed (to stderr). Default: info.
void set_level(Level level);

/// Writes one line to stderr: `message` escaped and cut by printable(message,
/// kMaxMessageBytes) (core/text.h), so bytes from files never reach the terminal raw.
void write(Level level, const std::string& message);

template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::info, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::warn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::error, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::debug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tqlab::log
