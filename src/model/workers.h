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

class Workers {
 public:
  /// `threads` as resolve_thread_count takes it (0: every core this process may use).
  explicit Workers(int threads);

  int threads() const { return threads_; }

  /// body(item, worker) for every item < count, on up to threads() threads.
  void run(std::size_t count, const std::function<void(std::size_t item, int worker)>& body);

  /// Float buffer `slot` (0..kSlots-1) of `worker`, kept between calls; callers resize it.
  std::vector<float>& floats(int worker, int slot);
  /// Double buffer of `worker`, kept between calls.
  std::vector<double>& doubles(int worker);

  static constexpr int kSlots = 4;

 private:
  int threads_;
  std::vector<std::vector<float>> floats_;    ///< [worker * kSlots + slot]
  std::vector<std::vector<double>> doubles_;  ///< [worker]
};

}  // namespace tqlab
