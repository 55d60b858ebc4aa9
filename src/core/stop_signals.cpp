#include "core/stop_signals.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <unistd.h>

namespace tqlab {
namespace {

std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

struct sigaction g_previous_int, g_previous_term, g_previous_xfsz;

extern "C" void on_stop_signal(int signal) {
  int expected = 0;
  if (g_received.compare_exchange_strong(expected, signal)) return;
  // A second signal: the user insists. End as the default action would (signal() and raise()
  // are async-signal-safe).
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// exit_on_stop_signals' state. The handler reads it, so it is fixed before the handler is installed
// (the command's line) or changed only atomically (the files to remove).
std::atomic<char*> g_removed[kRemovedOnStopSlots];
std::atomic<int> g_exiting{0};
char g_command[256];
bool g_clear_line = false;

// Appends `text` to line[0, size) at `used`, as far as it fits (no allocation: a signal handler).
void append(char* line, std::size_t size, std::size_t& used, const char* text) {
  while (*text != '\0' && used + 1 < size) line[used++] = *text++;
}

extern "C" void on_exit_signal(int signal) {
  // One handler ends the process; a signal arriving on another thread meanwhile waits for it.
  if (g_exiting.exchange(1) != 0) {
    for (;;) ::pause();
  }
  int removed = 0;
  for (std::atomic<char*>& slot : g_removed) {
    const char* path = slot.load();
    if (path != nullptr && ::unlink(path) == 0) ++removed;
  }
  char line[512];
  std::size_t used = 0;
  // A progress line on a terminal ends with \r, not \n: clear it rather than write after it.
  if (g_clear_line) append(line, sizeof line, used, "\r\033[K");
  append(line, sizeof line, used, "error: ");
  append(line, sizeof line, used, g_command);
  append(line, sizeof line, used, " stopped by ");
  append(line, sizeof line, used, signal_name(signal));
  if (removed > 0) append(line, sizeof line, used, "; its unfinished output was removed");
  append(line, sizeof line, used, "\n");
  [[maybe_unused]] const ssize_t wrote = ::write(STDERR_FILENO, line, used);
  ::_exit(signal_exit_code(signal));
}

}  // namespace

void exit_on_stop_signals(const std::string& command) {
  const std::size_t length = std::min(command.size(), sizeof g_command - 1);
  std::memcpy(g_command, command.data(), length);
  g_command[length] = '\0';
  g_clear_line = ::isatty(STDERR_FILENO) != 0;
  struct sigaction action {};
  action.sa_handler = on_exit_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  for (const int signal : {SIGINT, SIGTERM}) {
    struct sigaction previous {};
    sigaction(signal, nullptr, &previous);
    if (previous.sa_handler != SIG_IGN) sigaction(signal, &action, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, nullptr);
}

RemovedOnStop::RemovedOnStop(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) return;
  for (std::atomic<char*>& slot : g_removed) {
    char* empty = nullptr;
    if (slot.compare_exchange_strong(empty, copy)) {
      slot_ = &slot;
      return;
    }
  }
  std::free(copy);
}

RemovedOnStop::~RemovedOnStop() {
  if (slot_ == nullptr) return;
  char* path = slot_->exchange(nullptr);
  // A handler that started may still read the path: it ends the process, so wait for that.
  while (g_exiting.load() != 0) ::pause();
  std::free(path);
}

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress go on; the job polls received()
  // A signal ignored when the process started (nohup, a background job of a script) stays ignored.
  for (auto [signal, previous] : {std::pair{SIGINT, &g_previous_int}, std::pair{SIGTERM, &g_previous_term}}) {
    sigaction(signal, nullptr, previous);
    if (previous->sa_handler != SIG_IGN) sigaction(signal, &action, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, &g_previous_xfsz);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  sigaction(SIGXFSZ, &g_previous_xfsz, nullptr);
}

int StopSignals::received() { return g_received.load(); }

int signal_exit_code(int signal) { return 128 + signal; }

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

}  // namespace tqlab
