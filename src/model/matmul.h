// The two matrix products of the forward pass, through OpenBLAS sgemm
// (row-major), with plain-loop references they are tested against.
//
//   nt: C = alpha * A B^T + beta * C    A: m x k (row stride lda), B: n x k (ldb), C: m x n (ldc)
//   nn: C = alpha * A B   + beta * C    A: m x k (lda),            B: k x n (ldb), C: m x n (ldc)
//
// Linear layers are nt (x W^T, W stored [out, in] as transformers stores it),
// attention scores nt (Q K^T), attention outputs nn (P V). OpenBLAS runs on
// the calling thread (callers are inside parallel_for, core/parallel.h).
#pragma once

#include <cstdint>

namespace tqlab {

void matmul_nt(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc);
void matmul_nn(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc);

/// The references: each output a double sum over k in index order, then rounded.
void matmul_nt_reference(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b,
                         std::int64_t ldb, float beta, float* c, std::int64_t ldc);
void matmul_nn_reference(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b,
                         std::int64_t ldb, float beta, float* c, std::int64_t ldc);

}  // namespace tqlab
