#pragma once
// The C interface between libtapeflow_dist and libtapeflow_dist_nccl, the
// NCCL half of tpf::dist: loaded with dlopen the first time a CUDA tensor
// meets a collective, so that CPU jobs never load CUDA or NCCL. Neither side
// sees the other's headers: dtypes and ops travel as their enum values, and
// every call returns 0 or writes its error into `err`.
#include <cstddef>
#include <cstdint>

extern "C" {

struct TpfNcclApi {
  /** NCCL's 128-byte unique id, made on one rank and broadcast over MPI. */
  int (*unique_id)(unsigned char id[128], char* err, size_t err_len);
  /** A communicator of `ranks` ranks on `device`; null on failure. Its
   * calls all run on `stream` (a cudaStream_t): the CUDA backend's stream of
   * `device`, which every kernel writing their buffers ran on. */
  void* (*init)(const unsigned char id[128], int ranks, int rank, int device,
                void* stream, char* err, size_t err_len);
  /** In place on device memory; `canonical`: send/recv, fold in rank order,
   * then each rank broadcasts its chunk. Blocks until the GPU is done. */
  int (*all_reduce)(void* comm, void* data, int64_t count, int dtype, int op,
                    int canonical, char* err, size_t err_len);
  int (*broadcast)(void* comm, void* data, int64_t count, int dtype, int root,
                   char* err, size_t err_len);
  int (*all_gather)(void* comm, const void* in, void* out, int64_t count,
                    int dtype, char* err, size_t err_len);
  /** ncclCommAbort: the watchdog's way out of a hung GPU collective. */
  void (*abort)(void* comm);
};

/** Exported by libtapeflow_dist_nccl.so. */
const TpfNcclApi* tapeflow_dist_nccl_api();
}
