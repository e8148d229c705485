// The op path's out-of-line parts: the device check, soft placement and
// foreign exceptions turned into tapeflow errors.
#include "ops/apply.hpp"

#include <new>
#include <stdexcept>

#include "core/cpu_allocator.hpp"
#include "core/op_error.hpp"
#include "tapeflow/config.hpp"

namespace tapeflow {

namespace {

[[noreturn, gnu::noinline, gnu::cold]] void throw_device_mismatch(
    const char* op, Inputs in, size_t i) {
  throw op_error<DeviceError>(op, "expected all inputs on ",
                              in[0].device().str(), ", got input ", i, " on ",
                              in[i].device().str());
}

}  // namespace

Device common_device(const char* op, Inputs in) {
  if (in.empty()) return Device::cpu();
  // The result is read back from the first input, never kept in a local: a
  // local Device is stored member by member (its padding byte skipped) and
  // then loaded whole, a store-forwarding stall of ~15 cycles on every op.
  for (size_t i = 1; i < in.size(); ++i)
    if (!(in[i].device() == in[0].device())) throw_device_mismatch(op, in, i);
  return in[0].device();
}

void throw_no_kernel(const char* op, Device device) {
  throw op_error<DeviceError>(op, "expected a kernel for ", device.str(),
                              ", got none (soft placement is ",
                              (config::soft_placement() ? "on" : "off"), ")");
}

void run_soft_placed(const char* op, Inputs in, Device device,
                     const std::function<void(Inputs, const Outputs&)>& cpu_run,
                     std::span<const autograd::TensorSpec> specs,
                     std::span<Tensor> out) {
  if (!config::soft_placement()) throw_no_kernel(op, device);
  // A device that does not exist (DeviceScope(cuda(0)) without a GPU) is
  // this op's error, not the copy's ([to]) after the CPU ran it.
  if (!device.is_cpu()) checked_backend(device, op);
  std::vector<Tensor> host;
  host.reserve(in.size());
  for (const Tensor& t : in) host.push_back(t.cpu());
  std::vector<Tensor> host_out;
  for (const autograd::TensorSpec& s : specs)
    host_out.push_back(empty_tensor(s.shape, s.dtype, Device::cpu(), op));
  cpu_run(host, Outputs(host_out, nullptr));
  for (size_t i = 0; i < out.size(); ++i) out[i] = host_out[i].to(device);
}

void rethrow_as_error(const char* op) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw op_error<ResourceExhaustedError>(
        op, "expected the memory its kernel needs, got an allocation failure");
  } catch (const std::length_error& e) {
    throw op_error<ResourceExhaustedError>(
        op, "expected buffers of a size that can exist, got: ", e.what());
  } catch (const std::exception& e) {
    throw op_error<ValueError>(
        op, "expected arguments its kernel's library accepts, got: ", e.what());
  }
}

}  // namespace tapeflow
