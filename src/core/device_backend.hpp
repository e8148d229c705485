#pragma once
#include <cstddef>
#include <vector>

#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/**
 * What a non-CPU backend provides besides its kernels: memory per device and
 * copies to and from the host. A backend installs itself from its register
 * function (register_cuda) through Registry::set_backend.
 */
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual const char* name() const = 0;
  virtual int device_count() const = 0;
  virtual Allocator* allocator(int index) = 0;
  virtual void copy_to_host(const void* src, void* host_dst, size_t bytes,
                            int index) = 0;
  virtual void copy_from_host(const void* host_src, void* dst, size_t bytes,
                              int index) = 0;
  /**
   * Copies `bytes` between two devices of this backend, in the order of the
   * work queued on both (CUDA: a peer copy). By default through the host.
   */
  virtual void copy_between_devices(const void* src, int src_index, void* dst,
                                    int dst_index, size_t bytes) {
    std::vector<char> host(bytes);
    copy_to_host(src, host.data(), bytes, src_index);
    copy_from_host(host.data(), dst, bytes, dst_index);
  }
  /**
   * Waits for the work queued on device `index`; throws the data errors its
   * kernels reported meanwhile (CUDA: an out-of-range gather index).
   */
  virtual void synchronize(int /*index*/) {}
  /**
   * Waits for the work queued on device `index` as synchronize does, but
   * leaves the data errors its kernels reported to the next synchronize:
   * for destructors, which must not throw them.
   */
  virtual void wait_idle(int /*index*/) {}
  /**
   * The queue that carries every kernel and copy of device `index` (CUDA:
   * its cudaStream_t), for libraries that must order their work with ours
   * (NCCL); nullptr where there is none.
   */
  virtual void* native_stream(int /*index*/) { return nullptr; }
};

/** The backend installed for `type`, or nullptr (the CPU has none). */
DeviceBackend* device_backend(DeviceType type);
void set_device_backend(DeviceType type, DeviceBackend* backend);

}  // namespace tapeflow
