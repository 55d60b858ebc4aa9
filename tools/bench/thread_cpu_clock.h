// A std::chrono-style clock that reads the calling thread's CPU time, for
// tools/bench.sh: the probe kernel is built with its steady_clock replaced by
// this one, so that its rates are CPU-time rates like Google Benchmark's
// cpu_time, and time stolen by other processes on a shared machine does not
// count against either side of a ratio.
#pragma once

#include <chrono>
#include <ctime>

struct thread_cpu_clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<thread_cpu_clock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return time_point(duration(static_cast<rep>(t.tv_sec) * 1000000000 + t.tv_nsec));
  }
};
