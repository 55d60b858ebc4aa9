// Deterministic parallelism: one parallel_for that every multi-threaded job
// uses, and the BLAS thread policy, in one place.
//
// Results must not depend on the thread count (docs/SWEEP.md#how-the-work-is-done:
// the same bytes for any thread count). parallel_for therefore only hands out item indices;
// each item writes its own partial results, and the caller reduces them in
// item order afterwards. Errors are reported as if the items had run one by
// one in order: the error of the lowest failing item wins, whichever thread
// hit an error first.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace tqlab {

/// `requested` when it is positive, else the number of cores this process may
/// use (at least 1).
int resolve_thread_count(int requested);

/// Runs body(item, worker) for every item in [0, count) on up to `threads`
/// threads (the calling thread is worker 0; worker < min(threads, count)).
/// Items are handed out in ascending order. When items throw, the exception
/// of the lowest-numbered failing item is rethrown after all workers stop;
/// items numbered above a failed one may be skipped, items below it are not.
/// While it runs, OpenBLAS runs on one thread (see BlasThreadPolicy).
void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t item, int worker)>& body);

/// While an instance lives, OpenBLAS runs every call on the calling thread
/// (openblas_set_num_threads(1)); the previous setting comes back after. Our
/// own workers provide the parallelism, so BLAS threads would only compete
/// with them, and a BLAS result must not depend on how work is split.
class BlasThreadPolicy {
 public:
  BlasThreadPolicy();
  ~BlasThreadPolicy();
  BlasThreadPolicy(const BlasThreadPolicy&) = delete;
  BlasThreadPolicy& operator=(const BlasThreadPolicy&) = delete;

 private:
  int previous_;
};

/// The BLAS kernels in use, as results record them: "OpenBLAS Haswell".
std::string blas_kernels();

}  // namespace tqlab
