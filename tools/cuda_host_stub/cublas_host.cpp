// A stand-in for libcublas.so.13 beside cudart_host.cpp: handles are real,
// the routines return success and compute nothing (the host path of a
// matmul is what tools/cuda_host_time.sh times).
// cublas_api.h is left out: its prototypes would clash with the ones below.
using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(new char);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<char*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}
// The rest take their real arguments and ignore them: a C function that
// reads none of its parameters may be declared with any list.
#define TAPEFLOW_CUBLAS_NOTHING(name) \
  cublasStatus_t name(...) {          \
    return CUBLAS_STATUS_SUCCESS;     \
  }
TAPEFLOW_CUBLAS_NOTHING(cublasSetStream_v2)
TAPEFLOW_CUBLAS_NOTHING(cublasSetWorkspace_v2)
TAPEFLOW_CUBLAS_NOTHING(cublasGemmEx)
TAPEFLOW_CUBLAS_NOTHING(cublasGemmStridedBatchedEx)
TAPEFLOW_CUBLAS_NOTHING(cublasSgetrfBatched)
TAPEFLOW_CUBLAS_NOTHING(cublasDgetrfBatched)
TAPEFLOW_CUBLAS_NOTHING(cublasSgetriBatched)
TAPEFLOW_CUBLAS_NOTHING(cublasDgetriBatched)

}  // extern "C"
