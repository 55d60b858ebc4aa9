#include "model/workers.h"

#include "core/parallel.h"

namespace tqlab {

Workers::Workers(int threads)
    : threads_(resolve_thread_count(threads)),
      floats_(static_cast<std::size_t>(threads_) * kWorkerBuffers),
      doubles_(static_cast<std::size_t>(threads_)) {}

void Workers::run(std::size_t count, const std::function<void(std::size_t item, int worker)>& body) {
  parallel_for(count, threads_, body);
}

std::vector<float>& Workers::floats(int worker, WorkerBuffer buffer) {
  return floats_[static_cast<std::size_t>(worker) * kWorkerBuffers + static_cast<std::size_t>(buffer)];
}

std::vector<double>& Workers::doubles(int worker) { return doubles_[static_cast<std::size_t>(worker)]; }

}  // namespace tqlab
