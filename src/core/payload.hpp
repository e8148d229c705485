#pragma once
// What a kernel leaves for the gradient of its own op: operands it converted
// (blocked layouts, bfloat16), workspaces. Owned by the tape node of the op
// (released with it), or by the caller of apply_keeping; never by the op
// struct, which stays immutable.
#include <memory>

#include "tapeflow/core/device.hpp"

namespace tapeflow {

/**
 * Who may take a payload: the device it lives on and a backend-defined
 * variant (e.g. the precision its operands were converted for). A kernel
 * takes only a payload of its own concrete type with an equal key, so a
 * soft-placed or other-precision pass never reads another's bytes.
 */
struct PayloadKey {
  Device device = Device::cpu();
  int variant = 0;
  bool operator==(const PayloadKey&) const = default;
};

class Payload {
 public:
  explicit Payload(PayloadKey key) : key_(key) {}
  virtual ~Payload() = default;
  const PayloadKey& key() const { return key_; }

 private:
  PayloadKey key_;
};

using PayloadPtr = std::shared_ptr<const Payload>;

/** `p` as a P left under `key`, or null. */
template <class P>
const P* payload_as(const PayloadPtr& p, const PayloadKey& key) {
  if (!p || !(p->key() == key)) return nullptr;
  return dynamic_cast<const P*>(p.get());
}

}  // namespace tapeflow
