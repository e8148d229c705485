#pragma once
// tpf::dist: multi-process training on MPI (built when Open MPI is found;
// link tapeflow_dist). Run with mpirun; see docs/distributed.md.
#include "tapeflow/dist/communicator.hpp"
#include "tapeflow/dist/cluster.hpp"
#include "tapeflow/dist/data_parallel.hpp"
#include "tapeflow/dist/parameter_server.hpp"
#include "tapeflow/dist/shard.hpp"
#include "tapeflow/dist/simulate.hpp"
