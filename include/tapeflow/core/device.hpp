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
  static constexpr Device cuda(int i = 0) {
    return {DeviceType::cuda, static_cast<int16_t>(i)};
  }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  friend bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }
};

std::ostream& operator<<(std::ostream& os, Device d);

}  // namespace tapeflow
