#pragma once
// The CUDA side of core/pinned_staging.hpp: cudaHostAlloc'd blocks, events
// and cudaMemcpyAsync on each device's stream.
#include <memory>

#include "core/pinned_staging.hpp"

namespace tapeflow::cuda {

std::unique_ptr<StagingSource> make_pinned_source();

}  // namespace tapeflow::cuda
