// Ending a long job cleanly on SIGINT (Ctrl-C) and SIGTERM (kill, a cluster's
// time limit or scancel).
//
// While a StopSignals lives, the first SIGINT or SIGTERM does not end the
// process: it is recorded, and the job polls received() between units of work,
// starts no new one, finishes what it has in hand and exits with
// signal_exit_code(), the status a shell reports for a process the signal
// ended (130, 143). A second signal ends the process at once, as without a
// StopSignals. A signal the process was started ignoring (nohup; SIGINT in a
// script's background job) stays ignored. SIGXFSZ is ignored as well, so that a write beyond the file size
// limit (ulimit -f) fails with an error naming the file (EFBIG) instead of
// ending the process without a word.
#pragma once

namespace tqlab {

class StopSignals {
 public:
  /// Installs the handlers (at most one instance at a time).
  StopSignals();
  /// Puts the previous handlers back.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The first SIGINT or SIGTERM received while an instance lived, or 0. Safe from any thread.
  static int received();
};

/// 128 + signal: 130 for SIGINT, 143 for SIGTERM.
int signal_exit_code(int signal);

/// "SIGINT", "SIGTERM", else "a signal".
const char* signal_name(int signal);

}  // namespace tqlab
