#pragma once
// Persistence: .npz archives, training checkpoints, IDX (MNIST) files.
#include "tapeflow/io/checkpoint.hpp"
#include "tapeflow/io/idx.hpp"
#include "tapeflow/io/npz.hpp"
