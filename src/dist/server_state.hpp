#pragma once
// What a Server holds; ParameterClient registers its ps service here so that
// Server::join() can run it.
#include <functional>

#include "tapeflow/dist/cluster.hpp"

namespace tapeflow::dist::detail {

struct ServerState {
  ClusterSpec cluster;
  TaskSpec task;
  bool local = false;
  /** Set on a ps task by ParameterClient::create: serves until all done. */
  std::function<void()> serve;
};

}  // namespace tapeflow::dist::detail
