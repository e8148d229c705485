#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>

namespace tapeflow {

enum class DeviceType : uint8_t { cpu = 0, cuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

/** Where a tensor's memory lives: the host, or one CUDA GPU. */
struct Device {
  DeviceType type = DeviceType::cpu;
  int16_t index = 0;

  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  /** CUDA device i; DeviceError outside [0, 32767] (never a wrapped index). */
  static constexpr Device cuda(int i = 0) {
    if (i < 0 || i > INT16_MAX) throw_bad_index(i);
    return {DeviceType::cuda, static_cast<int16_t>(i)};
  }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  [[noreturn]] static void throw_bad_index(int i);
  friend bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }
};

std::ostream& operator<<(std::ostream& os, Device d);

/**
 * Where creation functions put tensors when not told: the innermost
 * DeviceScope's device on this thread (tapeflow/device_scope.hpp), else the
 * CPU.
 */
Device default_device();

}  // namespace tapeflow
