#pragma once
// What a Server holds; ParameterClient registers its ps service here so that
// Server::join() can run it.
#include <functional>
#include <vector>

#include "tapeflow/dist/cluster.hpp"

namespace tapeflow::dist::detail {

struct ServerState {
  ClusterSpec cluster;
  TaskSpec task;
  bool local = false;
  /**
   * Added on a ps task by each ParameterClient::create: serves until every
   * worker is done with that client; join() runs them in creation order.
   */
  std::vector<std::function<void()>> serve;
};

}  // namespace tapeflow::dist::detail
