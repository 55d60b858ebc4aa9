#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/text.h"

namespace tqlab::log {
namespace {

spdlog::logger& logger() {
  // stderr only: stdout carries the commands' results (tables, JSON).
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto made = spdlog::stderr_color_mt("tqlab");
    made->set_pattern("%^%l%$: %v");
    made->set_level(spdlog::level::info);
    return made;
  }();
  return *instance;
}

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

void set_level(Level level) { logger().set_level(to_spdlog(level)); }

void write(Level level, const std::string& message) {
  // Messages echo names from files and command lines: whatever they hold, one short line.
  logger().log(to_spdlog(level), printable(message, kMaxMessageBytes));
}

}  // namespace tqlab::log
