// libtapeflow's side of the LIBXSMM products: loads libtapeflow_xsmm.so
// (module.cpp) on the first call. Without it every product goes to oneDNN
// and BLAS, only slower for small shapes.
#include "cpu/libxsmm/small_matmul.hpp"

#include <dlfcn.h>

#include <string>

#include "core/backend_loader.hpp"

namespace tapeflow::cpu {
namespace {

using Entry = bool (*)(const Tensor&, const Tensor&, Tensor&);

Entry entry() {
  static const Entry loaded = [] {
    std::string error;
    void* module = open_module("libtapeflow_xsmm.so", error);
    return module ? reinterpret_cast<Entry>(
                        dlsym(module, "tapeflow_small_matmul_v1"))
                  : nullptr;
  }();
  return loaded;
}

}  // namespace

bool small_matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  const Entry run = entry();
  return run && run(a, b, out);
}

bool small_matmul_available() {
  return entry() != nullptr;
}

}  // namespace tapeflow::cpu
