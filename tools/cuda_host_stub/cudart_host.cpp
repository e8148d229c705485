// A stand-in for libcudart.so.13 whose "device" is host memory and whose
// kernels never run: it lets the CUDA backend's host path (op dispatch, the
// BFC arena, launch set-up, the tape) run and be timed on a machine without a
// GPU, which is most of the machines this project is built on. Every result a
// kernel would write is left as it was: nothing here checks values.
// tools/cuda_host_time.sh builds it and runs a program over it.
//
// Built with CUDA_HOST_STUB_KERNELS_RUN, it is the runtime of the CUDA
// emulator (tools/cuda_emu), whose kernels do run on the host: there, what
// the host reads back is what they wrote.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

constexpr size_t kAlignment = 256;                 // cudaMalloc's
constexpr size_t kDeviceBytes = size_t(80) << 30;  // an H100's
#ifdef CUDA_HOST_STUB_KERNELS_RUN
constexpr bool kKernelsRun = true;
constexpr const char* kDeviceName = "cuda emulator (kernels run on the host)";
#else
constexpr bool kKernelsRun = false;
constexpr const char* kDeviceName = "host stub (no kernel runs)";
#endif

// Pinned host memory is zeroed: mapped records (the deferred index errors)
// read as clear. Device memory is too where no kernel runs; where kernels
// run, it starts as 0xff bytes (NaN in float), as no GPU zeroes it, so that
// a kernel that reads what nothing wrote fails its tests.
// A block of exactly `bytes`, so that AddressSanitizer (the emulator's
// tests) faults an access one byte past it.
void* host_block(size_t bytes, int fill = 0) {
  void* block = nullptr;
  if (posix_memalign(&block, kAlignment, bytes == 0 ? 1 : bytes) != 0)
    return nullptr;
  std::memset(block, fill, bytes);
  return block;
}

// Kernel names by their host stubs' addresses (__cudaRegisterFunction), for
// the launches refused below, and whether each was launched.
struct Kernel {
  std::string name;
  bool launched = false;
};
std::mutex kernels_mutex;
std::unordered_map<const void*, Kernel>& kernels() {
  static auto* registered = new std::unordered_map<const void*, Kernel>;
  return *registered;
}

// With CUDA_HOST_STUB_KERNELS=FILE, a line per registered kernel is
// appended to FILE at exit, "launched NAME" or "unlaunched NAME": over a
// test suite, the kernels no test reaches.
void write_kernel_report() {
  const char* path = std::getenv("CUDA_HOST_STUB_KERNELS");
  if (path == nullptr) return;
  FILE* report = std::fopen(path, "a");
  if (report == nullptr) return;
  const std::lock_guard<std::mutex> lock(kernels_mutex);
  for (const auto& [address, kernel] : kernels())
    std::fprintf(report, "%s %s\n", kernel.launched ? "launched" : "unlaunched",
                 kernel.name.c_str());
  std::fclose(report);
}
const int kernel_report_registered = std::atexit(write_kernel_report);

// What a GPU refuses with cudaErrorInvalidConfiguration, checked here so
// that a launch no GPU has run yet shows it: an empty grid or block, a block
// over 1024 threads, a grid past CUDA's extents, dynamic shared memory past
// the 48 KiB a kernel gets without cudaFuncSetAttribute.
const char* launch_problem(dim3 grid, dim3 block, size_t shared_bytes) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return "an empty grid";
  if (block.x == 0 || block.y == 0 || block.z == 0) return "an empty block";
  if (uint64_t(block.x) * block.y * block.z > 1024 || block.z > 64)
    return "a block over 1024 threads (or 64 along z)";
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    return "a grid past 2^31 - 1 x 65535 x 65535 blocks";
  if (shared_bytes > 48 * 1024) return "over 48 KiB of dynamic shared memory";
  return nullptr;
}

}  // namespace

// Refuses what a GPU refuses, as a GPU does (cudaGetLastError) and with a
// line naming the kernel; shared with the emulator's launches.
extern "C" cudaError_t cuda_host_stub_check_launch(const char* kernel,
                                                   dim3 grid, dim3 block,
                                                   size_t shared_bytes);

namespace {

// A launch's configuration, pushed by <<<...>>> and popped by the kernel's
// host stub right after; each host thread launches on its own.
struct CallConfiguration {
  dim3 grid, block;
  size_t shared_bytes = 0;
  void* stream = nullptr;
};
thread_local CallConfiguration pending;
// A refused launch's error, for cudaGetLastError (launches return nothing).
thread_local cudaError_t last_error = cudaSuccess;

// Handles (streams, events) need only be distinct and non-null.
template <class Handle>
Handle new_handle() {
  return reinterpret_cast<Handle>(new char);
}

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void* fat_cubin) {
  static void* handle = nullptr;
  handle = fat_cubin;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* host_function, char*,
                            const char* device_name, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  const std::lock_guard<std::mutex> lock(kernels_mutex);
  kernels()[host_function].name = device_name;
}
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int,
                       int) {}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
                                     CUstream_st* stream) {
  pending = {grid, block, shared, stream};
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared,
                                       void* stream) {
  *grid = pending.grid;
  *block = pending.block;
  *shared = pending.shared_bytes;
  *static_cast<void**>(stream) = pending.stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(function));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                               void**, size_t shared_bytes, cudaStream_t) {
  // Only a report or a refusal looks the kernel up: a timed launch costs a
  // few comparisons.
  static const bool reporting = std::getenv("CUDA_HOST_STUB_KERNELS");
  const char* problem = launch_problem(grid, block, shared_bytes);
  if (problem == nullptr && !reporting) return cudaSuccess;
  std::string name = "?";
  {
    const std::lock_guard<std::mutex> lock(kernels_mutex);
    const auto found = kernels().find(kernel);
    if (found != kernels().end()) {
      found->second.launched = true;
      if (problem) name = found->second.name;
    }
  }
  return problem ? cuda_host_stub_check_launch(name.c_str(), grid, block,
                                               shared_bytes)
                 : cudaSuccess;
}

cudaError_t cuda_host_stub_check_launch(const char* kernel, dim3 grid,
                                        dim3 block, size_t shared_bytes) {
  const char* problem = launch_problem(grid, block, shared_bytes);
  if (problem == nullptr) return cudaSuccess;
  std::fprintf(stderr,
               "cuda host stub: refused launch of %s: %s (grid %u x %u x %u, "
               "block %u x %u x %u, %zu bytes of shared memory)\n",
               kernel, problem, grid.x, grid.y, grid.z, block.x, block.y,
               block.z, shared_bytes);
  return last_error = cudaErrorInvalidConfiguration;
}

// One device, hidden as CUDA hides it: CUDA_VISIBLE_DEVICES set to a list
// that does not start with ordinal 0 ("", "-1", "1").
cudaError_t cudaGetDeviceCount(int* count) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string_view first =
      visible ? std::string_view(visible, std::strcspn(visible, ",")) : "0";
  *count = first == "0";
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) {
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int) {
  *prop = cudaDeviceProp{};
  std::strcpy(prop->name, kDeviceName);
  prop->major = 9;
  prop->minor = 0;
  prop->totalGlobalMem = kDeviceBytes;
  prop->multiProcessorCount = 132;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int) {
  switch (attribute) {
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    default:
      *value = 0;
  }
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *total_bytes = kDeviceBytes;
  *free_bytes = kDeviceBytes;
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error"
         : error == cudaErrorInvalidConfiguration
             ? "invalid configuration argument (cuda host stub)"
             : "cuda host stub error";
}
cudaError_t cudaGetLastError() {
  const cudaError_t error = last_error;
  last_error = cudaSuccess;
  return error;
}
cudaError_t cudaPeekAtLastError() {
  return last_error;
}

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  *pointer = host_block(bytes, kKernelsRun ? 0xff : 0);
  return *pointer ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* pointer) {
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** pointer, size_t bytes, unsigned) {
  *pointer = host_block(bytes);
  return *pointer ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void* pointer) {
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned) {
  *device = host;
  return cudaSuccess;
}
// Where no kernel runs, what the host reads back from the device is 0: stale
// arena contents would steer host code (a size, a label range, an index) as
// no GPU would. Copies to and within the device keep their bytes.
cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t) {
  if (kind == cudaMemcpyDeviceToHost && !kKernelsRun)
    std::memset(to, 0, bytes);
  else
    std::memmove(to, from, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void* to, int, const void* from, int,
                                size_t bytes, cudaStream_t) {
  std::memmove(to, from, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* to, int value, size_t bytes, cudaStream_t) {
  std::memset(to, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new_handle<cudaStream_t>();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<char*>(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) {
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  *event = new_handle<cudaEvent_t>();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<char*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return cudaSuccess;
}

}  // extern "C"
