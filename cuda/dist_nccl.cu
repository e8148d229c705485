// tpf::dist's collectives on CUDA tensors through NCCL (src/dist/nccl_api.hpp
// is the whole interface). Every call runs on the CUDA backend's stream of
// the communicator's GPU, so it follows the kernels that wrote its buffers
// (a non-blocking stream does not order with the legacy default stream), and
// waits for it: the collectives are blocking from the host's side, as their
// CPU counterparts are.
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/dtype_dispatch.hpp"
#include "dist/fold_math.hpp"
#include "dist/nccl_api.hpp"
#include "tapeflow/core/dtype.hpp"

namespace tapeflow::dist::nccl {
namespace {

struct Comm {
  ncclComm_t comm;
  int ranks, rank, device;
  cudaStream_t stream;  // the CUDA backend's stream of `device`
};

int fail(char* err, size_t len, const char* what, const char* why) {
  std::snprintf(err, len, "%s: %s", what, why);
  return 1;
}
int check(ncclResult_t r, char* err, size_t len, const char* what) {
  return r == ncclSuccess ? 0 : fail(err, len, what, ncclGetErrorString(r));
}
int check(cudaError_t r, char* err, size_t len, const char* what) {
  return r == cudaSuccess ? 0 : fail(err, len, what, cudaGetErrorString(r));
}

ncclDataType_t nccl_type(int dtype) {
  switch (static_cast<DType>(dtype)) {
    case DType::bool_:
      return ncclUint8;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
    case DType::float32:
      return ncclFloat32;
    case DType::float64:
    case DType::string_:  // refused before any transfer (check_defined)
      break;
  }
  return ncclFloat64;
}

ncclRedOp_t nccl_op(int op, int dtype) {
  switch (static_cast<ReduceOp>(op)) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      // Bytes of 0/1: max is their or, as the CPU's sum of bools.
      return static_cast<DType>(dtype) == DType::bool_ ? ncclMax : ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      break;
  }
  return ncclMin;
}

/** acc[i] = blocks[0][i] op blocks[1][i] op ... in rank order. */
template <ReduceOp Op, class T>
__global__ void fold_kernel(T* acc, const T* blocks, int64_t count, int ranks) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    T v = blocks[i];
    for (int r = 1; r < ranks; ++r)
      v = detail::combine<Op>(v, blocks[r * count + i]);
    acc[i] = v;
  }
}

template <class T>
__global__ void mean_kernel(T* data, int64_t count, int ranks) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    data[i] = detail::mean_of(data[i], ranks);
}

int grid_for(int64_t n) {
  return static_cast<int>(std::min<int64_t>((n + 255) / 256, 4096));
}

int fold(int op, int dtype, void* acc, const void* blocks, int64_t count,
         int ranks, cudaStream_t stream) {
  if (count == 0) return 0;
  dispatch_all(static_cast<DType>(dtype), "all_reduce", [&](auto zero) {
    using T = decltype(zero);
    auto* a = static_cast<T*>(acc);
    const auto* b = static_cast<const T*>(blocks);
    switch (static_cast<ReduceOp>(op)) {
      case ReduceOp::sum:
      case ReduceOp::mean:
        fold_kernel<ReduceOp::sum>
            <<<grid_for(count), 256, 0, stream>>>(a, b, count, ranks);
        break;
      case ReduceOp::max:
        fold_kernel<ReduceOp::max>
            <<<grid_for(count), 256, 0, stream>>>(a, b, count, ranks);
        break;
      case ReduceOp::min:
        fold_kernel<ReduceOp::min>
            <<<grid_for(count), 256, 0, stream>>>(a, b, count, ranks);
        break;
    }
  });
  return 0;
}

int finish_mean(int dtype, void* data, int64_t count, int ranks,
                cudaStream_t stream) {
  if (count == 0 || ranks == 1 || static_cast<DType>(dtype) == DType::bool_)
    return 0;
  dispatch_all(static_cast<DType>(dtype), "all_reduce", [&](auto zero) {
    using T = decltype(zero);
    mean_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<T*>(data),
                                                     count, ranks);
  });
  return 0;
}

int unique_id(unsigned char id[128], char* err, size_t len) {
  ncclUniqueId u;
  if (check(ncclGetUniqueId(&u), err, len, "ncclGetUniqueId")) return 1;
  static_assert(sizeof u == 128);
  std::memcpy(id, &u, sizeof u);
  return 0;
}

void* init(const unsigned char id[128], int ranks, int rank, int device,
           void* stream, char* err, size_t len) {
  if (check(cudaSetDevice(device), err, len, "cudaSetDevice")) return nullptr;
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  ncclComm_t comm;
  if (check(ncclCommInitRank(&comm, ranks, u, rank), err, len,
            "ncclCommInitRank"))
    return nullptr;
  return new Comm{comm, ranks, rank, device, static_cast<cudaStream_t>(stream)};
}

int all_reduce(void* handle, void* data, int64_t count, int dtype, int op,
               int canonical, char* err, size_t len) {
  auto& c = *static_cast<Comm*>(handle);
  const size_t item = itemsize(static_cast<DType>(dtype));
  const ncclDataType_t type = nccl_type(dtype);
  if (check(cudaSetDevice(c.device), err, len, "cudaSetDevice")) return 1;
  if (!canonical) {
    if (check(ncclAllReduce(data, data, count, type, nccl_op(op, dtype), c.comm,
                            c.stream),
              err, len, "ncclAllReduce"))
      return 1;
  } else {
    // Rank k folds chunk k: every rank sends it its chunk k.
    std::vector<int64_t> begin(c.ranks + 1);
    for (int k = 0; k <= c.ranks; ++k) begin[k] = count * k / c.ranks;
    const int64_t mine = begin[c.rank + 1] - begin[c.rank];
    char* bytes = static_cast<char*>(data);
    void* blocks = nullptr;
    if (check(
            cudaMallocAsync(&blocks, std::max<size_t>(1, mine * c.ranks * item),
                            c.stream),
            err, len, "cudaMallocAsync"))
      return 1;
    char* recv = static_cast<char*>(blocks);
    int rc = check(ncclGroupStart(), err, len, "ncclGroupStart");
    for (int p = 0; p < c.ranks && rc == 0; ++p) {
      const int64_t n = begin[p + 1] - begin[p];
      rc =
          check(ncclSend(bytes + begin[p] * item, n, type, p, c.comm, c.stream),
                err, len, "ncclSend") ||
          check(
              ncclRecv(recv + p * mine * item, mine, type, p, c.comm, c.stream),
              err, len, "ncclRecv");
    }
    rc = check(ncclGroupEnd(), err, len, "ncclGroupEnd") || rc;
    if (rc == 0)
      fold(op, dtype, bytes + begin[c.rank] * item, recv, mine, c.ranks,
           c.stream);
    // Each rank's folded chunk goes to every other: one broadcast per chunk.
    rc = rc || check(ncclGroupStart(), err, len, "ncclGroupStart");
    for (int k = 0; k < c.ranks && rc == 0; ++k)
      rc = check(
          ncclBroadcast(bytes + begin[k] * item, bytes + begin[k] * item,
                        begin[k + 1] - begin[k], type, k, c.comm, c.stream),
          err, len, "ncclBroadcast");
    rc = (rc == 0 ? check(ncclGroupEnd(), err, len, "ncclGroupEnd") : rc);
    cudaFreeAsync(blocks, c.stream);
    if (rc) return rc;
  }
  if (static_cast<ReduceOp>(op) == ReduceOp::mean)
    finish_mean(dtype, data, count, c.ranks, c.stream);
  return check(cudaGetLastError(), err, len, "the fold kernels") ||
         check(cudaStreamSynchronize(c.stream), err, len,
               "cudaStreamSynchronize");
}

int broadcast(void* handle, void* data, int64_t count, int dtype, int root,
              char* err, size_t len) {
  auto& c = *static_cast<Comm*>(handle);
  return check(cudaSetDevice(c.device), err, len, "cudaSetDevice") ||
         check(ncclBroadcast(data, data, count, nccl_type(dtype), root, c.comm,
                             c.stream),
               err, len, "ncclBroadcast") ||
         check(cudaStreamSynchronize(c.stream), err, len,
               "cudaStreamSynchronize");
}

int all_gather(void* handle, const void* in, void* out, int64_t count,
               int dtype, char* err, size_t len) {
  auto& c = *static_cast<Comm*>(handle);
  return check(cudaSetDevice(c.device), err, len, "cudaSetDevice") ||
         check(
             ncclAllGather(in, out, count, nccl_type(dtype), c.comm, c.stream),
             err, len, "ncclAllGather") ||
         check(cudaStreamSynchronize(c.stream), err, len,
               "cudaStreamSynchronize");
}

void abort_comm(void* handle) {
  ncclCommAbort(static_cast<Comm*>(handle)->comm);
}

constexpr TpfNcclApi kApi{unique_id, init,       all_reduce,
                          broadcast, all_gather, abort_comm};

}  // namespace
}  // namespace tapeflow::dist::nccl

extern "C" const TpfNcclApi* tapeflow_dist_nccl_api() {
  return &tapeflow::dist::nccl::kApi;
}
