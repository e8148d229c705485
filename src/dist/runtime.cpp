// init(), world() and the end of the job: MPI is started only when mpirun
// (or another PMI launcher) started the process.
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/op_error.hpp"
#include "dist/comm_state.hpp"
#include "dist/watchdog.hpp"
#include "tapeflow/memory.hpp"

namespace tapeflow::dist {
namespace detail {

CommState::~CommState() {
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (owned && comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
}

void check_mpi(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw op_error<DistError>(op, "MPI failed: ", std::string(text, len));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::bool_:
      return MPI_UINT8_T;
    case DType::int32:
      return MPI_INT32_T;
    case DType::int64:
      return MPI_INT64_T;
    case DType::float32:
      return MPI_FLOAT;
    case DType::float64:
    case DType::string_:  // refused before any transfer (check_defined)
      break;
  }
  return MPI_DOUBLE;
}

int mpi_count(int64_t n, const char* op) {
  constexpr int64_t kMax = 2147483647;
  if (n > kMax)
    throw op_error<DistError>(op, "expected at most ", kMax,
                              " elements in one message, got ", n);
  return static_cast<int>(n);
}

bool debug_checks() {
  static const bool on = [] {
    const char* v = std::getenv("TAPEFLOW_DIST_DEBUG");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

/** Fills rank, size and the per-machine numbers of an MPI communicator. */
void describe(CommState& c) {
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.size);
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank,
                                MPI_INFO_NULL, &local),
            "init");
  MPI_Comm_rank(local, &c.local_rank);
  MPI_Comm_size(local, &c.local_size);
  MPI_Comm_free(&local);
}

}  // namespace detail

namespace {

bool launched_by_mpi() {
  for (const char* v :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "TAPEFLOW_DIST_MPI"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

struct Runtime {
  std::once_flag once;
  Communicator* world = nullptr;  // leaked: ranks exit without tearing down
  bool we_initialized = false;
};
Runtime& runtime() {
  static Runtime* r = new Runtime;
  return *r;
}

/**
 * At exit. MPI_Finalize waits for every rank, so only a successful exit
 * calls it (watched by the watchdog): a rank that exits with an error leaves
 * without it, and mpirun then ends the whole job at once rather than leave
 * the others blocked in their next collective.
 */
void finalize(int status, void*) {
  if (status != 0) return;
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!runtime().we_initialized || finalized) return;
  {
    // A rank done early waits here for the others' last steps (a parameter
    // server's workers finish apart): the long timeout applies.
    detail::InFlight flight("finalize", 0, true);
    MPI_Finalize();
  }
  detail::stop_watchdog();
}

void start() {
  auto state = std::make_shared<detail::CommState>();
  int already = 0;
  MPI_Initialized(&already);
  if (already || launched_by_mpi()) {
    if (!already) {
      int provided = 0;
      detail::check_mpi(
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
          "init");
      runtime().we_initialized = true;
      on_exit(finalize, nullptr);  // glibc: sees the exit status
    }
    state->comm = MPI_COMM_WORLD;
    detail::describe(*state);
    detail::start_watchdog(state->rank);
  }
  runtime().world = new Communicator(std::move(state));
}

}  // namespace

void init() {
  std::call_once(runtime().once, start);
}
bool initialized() {
  return runtime().world != nullptr;
}
Communicator& world() {
  init();
  return *runtime().world;
}

Device local_device() {
  const int n = device_count(DeviceType::cuda);
  return n > 0 ? Device::cuda(world().local_rank() % n) : Device::cpu();
}

}  // namespace tapeflow::dist
