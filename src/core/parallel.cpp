#include "core/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

// OpenBLAS's own thread controls (declared in its cblas.h, which Debian puts
// behind an alternatives link that may point at the reference CBLAS instead).
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
}

namespace tqlab {

int resolve_thread_count(int requested) {
  if (requested > 0) return requested;
  // The affinity mask, not the machine: a Slurm job or taskset may give us fewer cores.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string blas_kernels() { return std::string("OpenBLAS ") + openblas_get_corename(); }

BlasThreadPolicy::BlasThreadPolicy() : previous_(openblas_get_num_threads()) { openblas_set_num_threads(1); }

BlasThreadPolicy::~BlasThreadPolicy() { openblas_set_num_threads(previous_); }

void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t item, int worker)>& body) {
  if (count == 0) return;
  const BlasThreadPolicy blas_on_one_thread;
  const auto workers = static_cast<int>(std::min<std::size_t>(count, static_cast<std::size_t>(std::max(threads, 1))));

  constexpr std::size_t kNoFailure = std::numeric_limits<std::size_t>::max();
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> first_failed{kNoFailure};
  std::mutex failure_mutex;
  std::exception_ptr failure;

  const auto work = [&](int worker) {
    while (true) {
      const std::size_t item = next.fetch_add(1);
      // Items after a failed one cannot change which error is reported.
      if (item >= count || item > first_failed.load()) return;
      try {
        body(item, worker);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (item < first_failed.load()) {
          first_failed.store(item);
          failure = std::current_exception();
        }
      }
    }
  };

  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  for (int worker = 1; worker < workers; ++worker) {
    try {
      pool.emplace_back(work, worker);
    } catch (const std::system_error&) {
      break;  // the system refuses more threads: the ones we have do all the items
    }
  }
  work(0);
  for (std::thread& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tqlab
