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
//
// Outside a StopSignals (every command but a sweep's job), exit_on_stop_signals is the policy: the
// first SIGINT or SIGTERM removes the temporary files of unfinished writes (RemovedOnStop, which
// every AtomicFileWriter holds), prints one line and ends the process with the same 130 / 143. No
// half-written file survives it; the output under its name is either the old one or absent.
#pragma once

#include <atomic>
#include <string>

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

/// Installs the policy above for the whole process; `command` ("tqlab ppl") opens its line:
/// "error: tqlab ppl stopped by SIGTERM; its unfinished output was removed". Signals ignored when
/// the process started stay ignored. A StopSignals made later takes over while it lives.
void exit_on_stop_signals(const std::string& command);

/// While it lives, `path` is removed should a stop signal end the process under
/// exit_on_stop_signals (at most kRemovedOnStopSlots such files at once; more are not removed).
class RemovedOnStop {
 public:
  explicit RemovedOnStop(const std::string& path);
  ~RemovedOnStop();
  RemovedOnStop(const RemovedOnStop&) = delete;
  RemovedOnStop& operator=(const RemovedOnStop&) = delete;

 private:
  std::atomic<char*>* slot_ = nullptr;
};
inline constexpr int kRemovedOnStopSlots = 64;

/// 128 + signal: 130 for SIGINT, 143 for SIGTERM.
int signal_exit_code(int signal);

/// "SIGINT", "SIGTERM", else "a signal".
const char* signal_name(int signal);

}  // namespace tqlab
