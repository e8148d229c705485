#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tapeflow::config {

/**
 * Threads every CPU kernel (ours and oneDNN's) may use; default: OpenMP's
 * (OMP_NUM_THREADS, else all cores). intra_op_threads() is what a kernel
 * starting now gets: fewer while other processes keep cores busy (below).
 */
void set_intra_op_threads(int n);
int intra_op_threads();
/**
 * On (default; env TAPEFLOW_ADAPT_TO_LOAD=0 turns it off): kernels run with
 * one thread fewer for each core other processes keep busy (measured from
 * /proc over the last ~200 ms; at the process's first kernels, from the
 * tasks the run queues hold), never fewer than 1. An OpenMP team with more
 * threads than free cores waits at every barrier for a thread the OS has
 * parked, and runs slower than one thread alone.
 */
void set_adapt_to_load(bool on);
bool adapt_to_load();
/**
 * Threads of the process's inter-op pool, which runs the calls of every
 * parallel Dataset::map (kAutotune means this many); default: one per core.
 * Fixed once the pool starts (the first parallel map): a different count
 * after that is a ValueError, as TensorFlow's RuntimeError.
 */
void set_inter_op_threads(int n);
int inter_op_threads();

/** When on (default), an op whose device has no kernel runs on the CPU. */
void set_soft_placement(bool on);
bool soft_placement();
/** Print "op -> device (backend)" once per distinct triple; also env
 * TAPEFLOW_LOG_PLACEMENT=1. */
void log_device_placement(bool on);
bool log_device_placement();

/**
 * How float32 convolutions and matmuls may multiply, after PyTorch's
 * torch.set_float32_matmul_precision. `highest` (the default) and `high`
 * compute in float32. `medium` multiplies in bfloat16 and accumulates in
 * float32 where the CPU has native bfloat16 dot products (AVX512-BF16): about
 * twice the speed, with inputs rounded to 8 significant bits; elsewhere it
 * computes as `highest`, and so does the filter gradient of a one- or
 * two-channel convolution at stride 1 (a kernel of tapeflow's own). On a GPU,
 * cuBLAS products follow it too: `high` rounds inputs to TF32 (11 significant
 * bits) on tensor cores and `medium` to bfloat16, both accumulating in float32;
 * cuBLAS's own NVIDIA_TF32_OVERRIDE=0 turns TF32 off. Results, gradients and
 * optimizer state stay float32; float64 is never affected.
 */
enum class Float32Precision { highest, high, medium };
void set_float32_matmul_precision(Float32Precision precision);
/** The same by PyTorch's names: "highest", "high" or "medium". */
void set_float32_matmul_precision(std::string_view name);
Float32Precision float32_matmul_precision();

/**
 * How each GPU's memory is managed (TensorFlow's GPUOptions). The arena of a
 * device caps the bytes it reserves at `memory_limit_bytes` when > 0, else at
 * `per_process_gpu_memory_fraction` (in (0, 1]) of the device's total
 * memory. `allow_growth` (default on, unlike TF) reserves segments as needed;
 * off, the whole cap is reserved at first use. Env TF_FORCE_GPU_ALLOW_GROWTH
 * = true|false overrides it. allocator_type "BFC" is the arena;
 * "cuda_malloc" (or env TF_GPU_ALLOCATOR=cuda_malloc, which overrides it) is
 * a cudaMalloc per tensor, nothing cached, for debugging with
 * compute-sanitizer. Set them before a device first allocates: later calls
 * throw ValueError.
 */
struct GpuMemoryOptions {
  double per_process_gpu_memory_fraction = 1.0;
  bool allow_growth = true;
  size_t memory_limit_bytes = 0;
  std::string allocator_type = "BFC";
};
void set_gpu_memory_options(const GpuMemoryOptions& options);
GpuMemoryOptions gpu_memory_options();

/**
 * The CUDA devices this process uses, by the driver's ordinals (TF's
 * visible_device_list): writes CUDA_VISIBLE_DEVICES, which the driver reads
 * once, when tapeflow first uses CUDA; visible devices are numbered from 0
 * ({2, 3} makes cuda:0 the third GPU). An empty list hides every GPU.
 * Negative or repeated ordinals are a ValueError; a call after CUDA's first
 * use is a DeviceError naming the devices visible then.
 */
void set_visible_devices(const std::vector<int>& ordinals);

}  // namespace tapeflow::config
