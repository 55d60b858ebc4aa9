// The threads of a forward pass and each worker's reusable buffers.
//
// Work is split into items of a fixed size that does not depend on the thread
// count (core/parallel.h hands them out), and each item writes only its own
// outputs, so every float a forward computes is the same for any --threads.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace tqlab {

/// The float buffers each worker keeps between calls, named by what they hold. A buffer
/// is reused by steps that never run at once (a weight's rows, then a layer's K/V rows).
enum class WorkerBuffer {
  rows,     ///< input rows: a weight block's decoded rows (linear.cpp), embedding rows
            ///< (transformer.cpp), one kv head's K or V rows before the cache (kv_hook.cpp)
  scores,   ///< a block of queries' scores against the cached keys (attention.cpp)
  exact,    ///< the same queries' scores against the exact keys they may read (attention.cpp)
  decoded,  ///< one kv head's rows as the cache decodes them (kv_hook.cpp)
};
inline constexpr int kWorkerBuffers = 4;

class Workers {
 public:
  /// `threads` as resolve_thread_count takes it (0: every core this process may use).
  explicit Workers(int threads);

  int threads() const { return threads_; }

  /// body(item, worker) for every item < count, on up to threads() threads.
  void run(std::size_t count, const std::function<void(std::size_t item, int worker)>& body);

  /// Float buffer `buffer` of `worker`, kept between calls; callers resize it.
  std::vector<float>& floats(int worker, WorkerBuffer buffer);
  /// Double buffer of `worker`, kept between calls.
  std::vector<double>& doubles(int worker);

 private:
  int threads_;
  std::vector<std::vector<float>> floats_;    ///< [worker * kWorkerBuffers + buffer]
  std::vector<std::vector<double>> doubles_;  ///< [worker]
};

}  // namespace tqlab
