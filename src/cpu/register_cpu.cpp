#include "core/registry.hpp"

namespace tapeflow {
namespace cpu {
void register_unary(Registry& r);
void register_binary(Registry& r);
void register_fill(Registry& r);
void register_reduce(Registry& r);
void register_scan(Registry& r);
void register_sort(Registry& r);
void register_index(Registry& r);
void register_matmul(Registry& r);
void register_linalg(Registry& r);
void register_optim_updates(Registry& r);
void register_pool(Registry& r);
void register_fractional_pool(Registry& r);
void register_norm(Registry& r);
void register_losses(Registry& r);
void register_conv(Registry& r);
void register_lstm_cell(Registry& r);
}  // namespace cpu

void register_cpu(Registry& r) {
  cpu::register_unary(r);
  cpu::register_binary(r);
  cpu::register_fill(r);
  cpu::register_reduce(r);
  cpu::register_scan(r);
  cpu::register_sort(r);
  cpu::register_index(r);
  cpu::register_matmul(r);
  cpu::register_linalg(r);
  cpu::register_optim_updates(r);
  cpu::register_pool(r);
  cpu::register_fractional_pool(r);
  cpu::register_norm(r);
  cpu::register_losses(r);
  cpu::register_conv(r);
  cpu::register_lstm_cell(r);
}

}  // namespace tapeflow
