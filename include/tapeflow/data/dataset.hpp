#pragma once
// tpf::data::Dataset<T>: a typed input pipeline in the style of tf.data, with
// every member defined. The class itself is in dataset_core.hpp; each
// header below defines some of its members on top of it (and includes
// dataset_core.hpp, never this header), so the includes form no loop.
#include "tapeflow/data/batch_transforms.hpp"
#include "tapeflow/data/dataset_core.hpp"
#include "tapeflow/data/interleave.hpp"
#include "tapeflow/data/transforms.hpp"
