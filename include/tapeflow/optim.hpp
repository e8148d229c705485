#pragma once
// tpf::optim: optimizers, learning-rate schedules and gradient clipping.
#include "tapeflow/optim/adadelta.hpp"
#include "tapeflow/optim/adagrad.hpp"
#include "tapeflow/optim/adam.hpp"
#include "tapeflow/optim/adamw.hpp"
#include "tapeflow/optim/clipping.hpp"
#include "tapeflow/optim/momentum.hpp"
#include "tapeflow/optim/optimizer.hpp"
#include "tapeflow/optim/rmsprop.hpp"
#include "tapeflow/optim/schedules.hpp"
#include "tapeflow/optim/sgd.hpp"
