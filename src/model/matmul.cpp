#include "model/matmul.h"

#include <cblas.h>

namespace tqlab {

void matmul_nt(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void matmul_nn(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void matmul_nt_reference(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b,
                         std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < k; ++l) sum += static_cast<double>(a[i * lda + l]) * b[j * ldb + l];
      float& out = c[i * ldc + j];
      out = static_cast<float>(alpha * sum + (beta == 0 ? 0.0 : static_cast<double>(beta) * out));
    }
  }
}

void matmul_nn_reference(int m, int n, int k, float alpha, const float* a, std::int64_t lda, const float* b,
                         std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < k; ++l) sum += static_cast<double>(a[i * lda + l]) * b[l * ldb + j];
      float& out = c[i * ldc + j];
      out = static_cast<float>(alpha * sum + (beta == 0 ? 0.0 : static_cast<double>(beta) * out));
    }
  }
}

}  // namespace tqlab
