#pragma once
// tpf::data::Dataset<T>: a typed input pipeline in the style of tf.data, with
// every member defined. The class itself is in dataset_core.hpp; each
// header below defines some of its members on top of it (and includes
// dataset_core.hpp, never this header), so the includes form no loop.
#include "tapeflow/data/batch_transforms.hpp"
#include "tapeflow/data/dataset_core.hpp"
#include "tapeflow/data/interleave.hpp"
#include "tapeflow/data/prefetch_to_device.hpp"
#include "tapeflow/data/stage_transforms.hpp"
#include "tapeflow/data/transforms.hpp"

namespace tapeflow::data {

// The two most common pipelines, Dataset<Tensor> (range, the slices of one
// tensor) and Dataset<std::tuple<Tensor, Tensor>> (mnist, (features, labels)
// slices), have their members compiled once in libtapeflow
// (src/data/precompiled.cpp) rather than in every user's translation unit;
// member templates such as map(f) are still compiled where they are used.
extern template class Dataset<Tensor>;
extern template class Dataset<std::tuple<Tensor, Tensor>>;

}  // namespace tapeflow::data
