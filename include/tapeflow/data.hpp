#pragma once
// tpf::data: input pipelines (datasets, transformations, readers, queues).
#include "tapeflow/data/batch_traits.hpp"
#include "tapeflow/data/dataset.hpp"
#include "tapeflow/data/iterator.hpp"
#include "tapeflow/data/queue.hpp"
#include "tapeflow/data/readers.hpp"
