// A progress line on stderr: what a long job is doing, how far it is, elapsed
// time and ETA. On a terminal it is redrawn in place ("\r"); off one (a log, a
// batch job) it is a line of its own every 30 s, the first after 30 s, so that
// short work prints nothing and long work is never silent.
// Safe to call from any thread; redraws at most a few times a second.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace tqlab::cli {

class ProgressLine {
 public:
  /// `enabled` false (--quiet): every call does nothing.
  ProgressLine(std::string label, bool enabled);
  ~ProgressLine();

  /// done of total units; `detail` is shown after the counts ("layer 3").
  void update(std::size_t done, std::size_t total, const std::string& detail);
  /// Erases the line (before the results are printed).
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
  bool drawn_ = false;
};

}  // namespace tqlab::cli
