#pragma once

namespace tapeflow::config {

/** Threads every CPU kernel (ours and oneDNN's) may use; default: all cores. */
void set_intra_op_threads(int n);
int intra_op_threads();
/** Threads for running independent ops concurrently (pipelines, prefetch). */
void set_inter_op_threads(int n);
int inter_op_threads();

/** When on (default), an op whose device has no kernel runs on the CPU. */
void set_soft_placement(bool on);
bool soft_placement();
/** Print "op -> device (backend)" once per distinct triple; also env
 * TAPEFLOW_LOG_PLACEMENT=1. */
void log_device_placement(bool on);
bool log_device_placement();

}  // namespace tapeflow::config
