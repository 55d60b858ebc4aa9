#include "cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace tqlab::cli {
namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(200);
// Off a terminal (a log file, a batch job) a line of its own, no sooner than this and this often:
// short work stays silent, long work says how far it is.
constexpr auto kLogInterval = std::chrono::seconds(30);

std::string clock_time(double seconds) {
  const auto whole = static_cast<long>(seconds + 0.5);
  if (whole >= 3600) return fmt::format("{}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
  return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

}  // namespace

ProgressLine::ProgressLine(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), terminal_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(std::size_t done, std::size_t total, const std::string& detail) {
  if (!enabled_) return;
  const std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is drawing; this update is not needed
  const auto now = std::chrono::steady_clock::now();
  if (!terminal_ && (done >= total || now - last_draw_ < kLogInterval)) return;
  if (done < total && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string eta = "--:--";
  if (done > 0 && done < total)
    eta = clock_time(elapsed * static_cast<double>(total - done) / static_cast<double>(done));
  if (done >= total) eta = "0:00";
  const double percent = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  std::fprintf(stderr, "%s%s: %zu/%zu (%.0f%%) %s, %s elapsed, ETA %s%s", terminal_ ? "\r\033[K" : "", label_.c_str(),
               done, total, percent, detail.c_str(), clock_time(elapsed).c_str(), eta.c_str(), terminal_ ? "" : "\n");
  std::fflush(stderr);
  drawn_ = terminal_;
}

void ProgressLine::finish() {
  if (!enabled_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace tqlab::cli
