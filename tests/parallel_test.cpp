// parallel_for: every item once, the lowest failing item's error whatever the thread timing.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/parallel.h"

namespace tqlab {
namespace {

TEST(ParallelFor, RunsEveryItemOnceOnEachThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> seen(101);
    parallel_for(seen.size(), threads, [&](std::size_t item, int worker) {
      EXPECT_GE(worker, 0);
      EXPECT_LT(worker, threads);
      ++seen[item];
    });
    for (std::size_t i = 0; i < seen.size(); ++i)
      EXPECT_EQ(seen[i].load(), 1) << "item " << i << ", " << threads << " threads";
  }
  parallel_for(0, 4, [](std::size_t, int) { FAIL() << "no items, no calls"; });
}

TEST(ParallelFor, ReportsTheLowestFailingItemNotTheFirstToFail) {
  for (int threads : {1, 2, 4}) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      try {
        parallel_for(40, threads, [&](std::size_t item, int) {
          // Item 30 fails at once; item 6 fails late: a first-come report would name 30.
          if (item == 30) throw std::runtime_error("item 30");
          if (item == 6) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            throw std::runtime_error("item 6");
          }
          if (item == 9) throw std::runtime_error("item 9");
        });
        FAIL() << "no exception";
      } catch (const std::runtime_error& error) {
        EXPECT_EQ(std::string(error.what()), "item 6") << threads << " threads";
      }
    }
  }
}

TEST(ParallelFor, ALaterErrorOfAHigherItemDoesNotReplaceALowerOne) {
  for (int threads : {1, 2, 4}) {
    try {
      parallel_for(8, threads, [&](std::size_t item, int) {
        if (item == 1) throw std::runtime_error("item 1");
        if (item == 2) {  // already running on another thread when item 1 fails
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
          throw std::runtime_error("item 2");
        }
      });
      FAIL() << "no exception";
    } catch (const std::runtime_error& error) {
      EXPECT_EQ(std::string(error.what()), "item 1") << threads << " threads";
    }
  }
}

TEST(ParallelFor, ResolveThreadCount) {
  EXPECT_EQ(resolve_thread_count(3), 3);
  EXPECT_GE(resolve_thread_count(0), 1);
}

}  // namespace
}  // namespace tqlab
