#pragma once
// Persistence and record files: .npz archives, training checkpoints, IDX
// (MNIST) files, TFRecord files and tf.train.Example records.
#include "tapeflow/io/checkpoint.hpp"
#include "tapeflow/io/example.hpp"
#include "tapeflow/io/idx.hpp"
#include "tapeflow/io/npz.hpp"
#include "tapeflow/io/tfrecord.hpp"
