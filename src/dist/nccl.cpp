#include "dist/nccl.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/cpu_allocator.hpp"
#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/nccl_api.hpp"
#include "dist/watchdog.hpp"

namespace tapeflow::dist::detail {
namespace {

/** libtapeflow_dist_nccl.so beside this library, once per process. */
const TpfNcclApi* load_api() {
  static const TpfNcclApi* api = [] {
    Dl_info info{};
    std::string dir;
    if (dladdr(reinterpret_cast<void*>(&load_api), &info) && info.dli_fname) {
      dir = info.dli_fname;
      dir = dir.substr(0, dir.rfind('/') + 1);
    }
    void* handle = dlopen((dir + "libtapeflow_dist_nccl.so").c_str(),
                          RTLD_NOW | RTLD_LOCAL);
    if (!handle) return static_cast<const TpfNcclApi*>(nullptr);
    auto fn = reinterpret_cast<const TpfNcclApi* (*)()>(
        dlsym(handle, "tapeflow_dist_nccl_api"));
    return fn ? fn() : nullptr;
  }();
  return api;
}

/** Every rank's `mine`, and-ed. */
bool all_agree(CommState& c, bool mine, const char* op) {
  int ok = mine ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c.comm), op);
  return ok == 1;
}

bool nccl_disabled() {
  const char* v = std::getenv("TAPEFLOW_DIST_NCCL");
  return v != nullptr && std::string(v) == "0";
}

/** NCCL is an optimization: where it cannot start, say so once and go on. */
void fall_back(CommState& c, const std::string& why) {
  c.nccl_state = -1;
  if (c.rank == 0)
    std::fprintf(stderr,
                 "[dist] NCCL not used (%s): collectives on CUDA tensors go "
                 "through host memory\n",
                 why.c_str());
}

/** NCCL's communicator for `c` on `device`, started on first use. */
void* nccl_comm(CommState& c, const Tensor& t, const char* op) {
  if (c.comm == MPI_COMM_NULL || t.device().type != DeviceType::cuda ||
      !t.is_contiguous() || c.nccl_state < 0)
    return nullptr;
  if (c.nccl_state == 0) {
    InFlight flight("nccl init", c.seq);
    const TpfNcclApi* api = nccl_disabled() ? nullptr : load_api();
    if (!all_agree(c, api != nullptr, op)) {
      fall_back(c, nccl_disabled() ? "TAPEFLOW_DIST_NCCL=0"
                                   : "libtapeflow_dist_nccl.so did not load");
      return nullptr;
    }
    // Rank 0 makes the id; byte 128 says whether it could.
    unsigned char id[129] = {};
    char err[256] = "";
    if (c.rank == 0) id[128] = api->unique_id(id, err, sizeof err) == 0;
    check_mpi(MPI_Bcast(id, 129, MPI_UNSIGNED_CHAR, 0, c.comm), op);
    if (id[128] != 1) {
      fall_back(c, err);
      return nullptr;
    }
    // NCCL works on the CUDA backend's stream of the GPU (never destroyed),
    // after the kernels that wrote its buffers, before those that read them.
    void* stream =
        checked_backend(t.device(), op)->native_stream(t.device().index);
    void* comm = api->init(id, c.size, c.rank, t.device().index, stream, err,
                           sizeof err);
    if (!all_agree(c, comm != nullptr, op)) {
      fall_back(c, comm ? "another rank could not start it" : err);
      return nullptr;
    }
    c.nccl_comm = comm;
    c.nccl_device = t.device().index;
    c.nccl_state = 1;
  }
  if (t.device().index != c.nccl_device)
    throw op_error<DeviceError>(op, "expected tensors on cuda:", c.nccl_device,
                                " (this communicator's GPU), got ",
                                t.device().str());
  return c.nccl_comm;
}

void check_nccl(int rc, const char* err, const char* op) {
  if (rc != 0) throw op_error<DistError>(op, "NCCL failed: ", err);
}

}  // namespace

bool nccl_all_reduce(CommState& c, const Tensor& t, ReduceOp op, Order order) {
  void* comm = nccl_comm(c, t, "all_reduce");
  if (comm == nullptr) return false;
  const Tensor target = begin_in_place_write(t, true, "all_reduce");
  InFlight flight("all_reduce", c.seq);
  char err[256] = "";
  check_nccl(
      load_api()->all_reduce(comm, target.raw_data(), t.numel(),
                             static_cast<int>(t.dtype()), static_cast<int>(op),
                             order == Order::canonical, err, sizeof err),
      err, "all_reduce");
  return true;
}

bool nccl_broadcast(CommState& c, const Tensor& t, int root) {
  void* comm = nccl_comm(c, t, "broadcast");
  if (comm == nullptr) return false;
  const Tensor target =
      c.rank == root ? held(t) : begin_in_place_write(t, true, "broadcast");
  InFlight flight("broadcast", c.seq);
  char err[256] = "";
  check_nccl(
      load_api()->broadcast(comm, target.raw_data(), t.numel(),
                            static_cast<int>(t.dtype()), root, err, sizeof err),
      err, "broadcast");
  return true;
}

bool nccl_all_gather(CommState& c, const Tensor& t, Tensor& out) {
  void* comm = nccl_comm(c, t, "all_gather");
  if (comm == nullptr) return false;
  InFlight flight("all_gather", c.seq);
  char err[256] = "";
  check_nccl(
      load_api()->all_gather(comm, t.raw_data(), out.raw_data(), t.numel(),
                             static_cast<int>(t.dtype()), err, sizeof err),
      err, "all_gather");
  return true;
}

}  // namespace tapeflow::dist::detail
