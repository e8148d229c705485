// Loads tapeflow's optional modules from beside libtapeflow.so. The CUDA
// backend (libtapeflow_cuda.so) comes the first time a CUDA device is asked
// for: linking cuBLAS costs every process ~0.6 s at start-up, which CPU-only
// programs must not pay.
#include "core/backend_loader.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "core/registry.hpp"

namespace tapeflow {
namespace {

std::string g_load_error = "not attempted";
std::atomic<bool> g_attempted{false};

std::string library_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&load_cuda_backend), &info) ||
      !info.dli_fname)
    return "";
  const std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? "" : self.substr(0, slash + 1);
}

}  // namespace

void* open_module(const char* file, std::string& error) {
  const std::string beside = library_dir() + file;
  void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle) return handle;
  // The first error is the telling one when the module is there but one of
  // its own libraries is not ("libcublas.so.13: cannot open ...").
  const char* why = dlerror();
  error = why ? why : "dlopen failed";
  handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (handle) error.clear();
  return handle;
}

void load_cuda_backend() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_attempted = true;
    void* handle = open_module("libtapeflow_cuda.so", g_load_error);
    if (!handle) return;
    using RegisterFn = void (*)(Registry*);
    auto fn =
        reinterpret_cast<RegisterFn>(dlsym(handle, "tapeflow_register_cuda"));
    if (!fn) {
      g_load_error = "libtapeflow_cuda.so has no tapeflow_register_cuda";
      return;
    }
    Registry r;
    fn(&r);
    g_load_error.clear();
  });
}

const std::string& cuda_load_error() {
  return g_load_error;
}

bool cuda_load_attempted() {
  return g_attempted.load();
}

}  // namespace tapeflow
