#include "support/device.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/backend_loader.hpp"
#include "core/device_arena.hpp"
#include "core/registry.hpp"
#include "ops/elementwise_ops.hpp"

namespace testing {
namespace {

/**
 * Host memory posing as a 1 GiB device: the test device's arena carves it
 * as it would a GPU's, so options, statistics and out-of-memory errors are
 * tested through the public API.
 */
class HostSegments final : public tpf::SegmentSource {
 public:
  static constexpr size_t kTotal = size_t{1} << 30;
  void* allocate(size_t bytes) override {
    if (bytes > kTotal - reserved_) return nullptr;
    void* p = std::aligned_alloc(4096, bytes);
    if (p) reserved_ += bytes;
    return p;
  }
  void release(void* p, size_t bytes) override {
    std::free(p);
    reserved_ -= bytes;
  }
  size_t total_bytes() const override { return kTotal; }
  size_t free_bytes() const override { return kTotal - reserved_; }
  std::string device_name() const override { return "cuda:0"; }

 private:
  size_t reserved_ = 0;  // changed under the arena's lock
};

class HostBackedDevice final : public tpf::DeviceBackend {
 public:
  const char* name() const override { return "test"; }
  int device_count() const override { return 1; }
  tpf::Allocator* allocator(int) override { return &memory_; }
  void copy_to_host(const void* src, void* dst, size_t n, int) override {
    std::memcpy(dst, src, n);
  }
  void copy_from_host(const void* src, void* dst, size_t n, int) override {
    std::memcpy(dst, src, n);
  }

 private:
  tpf::DeviceArena memory_{[] { return std::make_unique<HostSegments>(); }};
};

/** The backend that owns DeviceType::cuda once libtapeflow_cuda was tried. */
const tpf::DeviceBackend* cuda_backend() {
  tpf::ensure_backends_registered();
  return tpf::device_backend(tpf::DeviceType::cuda);  // loads libtapeflow_cuda
}

bool real_gpu(const tpf::DeviceBackend* b) {
  return b && std::strcmp(b->name(), "test") != 0 && b->device_count() > 0;
}

}  // namespace

bool install_host_device() {
  static const bool installed = [] {
    // The CUDA backend registers its kernels only where it sees a GPU: with
    // none, the test backend may take DeviceType::cuda over.
    if (real_gpu(cuda_backend())) return false;
    static HostBackedDevice device;
    tpf::Registry r;
    r.set_backend(tpf::DeviceType::cuda, &device);
    r.set<tpf::Add>(tpf::DeviceType::cuda,
                    tpf::KernelTable<tpf::Add>::kernels[static_cast<int>(
                        tpf::DeviceType::cpu)],
                    "test");
    return true;
  }();
  return installed;
}

const TestDevices& test_devices() {
  static const TestDevices resolved = [] {
    TestDevices d;
    const char* env = std::getenv("TAPEFLOW_TEST_DEVICE");
    const std::string want = env ? env : "";
    // Strict: an op without a kernel on the device fails its case instead
    // of soft-placing onto the CPU (tools/gpu_check.sh sets it).
    const char* strict = std::getenv("TAPEFLOW_TEST_STRICT_DEVICE");
    if (strict && std::string(strict) == "1")
      tpf::config::set_soft_placement(false);
    if (want == "cuda") {
      const tpf::DeviceBackend* b = cuda_backend();
      if (real_gpu(b)) {
        d.devices = {tpf::Device::cuda(0)};
        d.backend = "cuda";
      } else {
        d.error =
            "TAPEFLOW_TEST_DEVICE=cuda, but there is no GPU (" +
            (b ? std::string("the CUDA backend sees no device")
               : "the CUDA backend is not loaded: " + tpf::cuda_load_error()) +
            ")";
      }
    } else if (want.empty()) {
      d.devices = {tpf::Device::cuda(0)};
      d.backend = install_host_device() ? "test" : "cuda";
    } else {
      d.error = "TAPEFLOW_TEST_DEVICE=" + want +
                ": expected \"cuda\" or nothing (the host-backed test device)";
    }
    return d;
  }();
  return resolved;
}

std::vector<tpf::Device> all_devices() {
  std::vector<tpf::Device> devices = {tpf::Device::cpu()};
  for (const tpf::Device& d : test_devices().devices) devices.push_back(d);
  return devices;
}

}  // namespace testing
