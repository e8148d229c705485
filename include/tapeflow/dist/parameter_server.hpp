#pragma once
// Asynchronous training with parameter servers (TF 1's replica_device_setter
// and ps tasks): each variable lives on one ps task, which holds its value
// and its optimizer slots and applies every gradient a worker pushes, on
// arrival. Workers keep local copies: pull() fetches the latest values,
// push() sends gradients. Every task (ps ones included) creates the client
// with the same variables; then the ps tasks join():
//   tpf::dist::Server server(cluster, tpf::dist::task_from(argc, argv));
//   tpf::dist::ParameterClient ps(server, {.staleness_bound = 4});
//   ps.create(model.named_parameters(), [] { return make_unique<Adam>(1e-3);
//   }); if (server.job_name() == "ps") return server.join(); for (...) {
//   ps.pull(params); ...; ps.push(tape.gradient(loss, params)); } ps.done();
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/dist/cluster.hpp"
#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::dist {

using NamedVariables = std::vector<std::pair<std::string, Variable>>;
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>()>;

/** How Placement splits large variables. */
struct PlacementOptions {
  /**
   * TF's MinSizePartitioner: a variable of at least twice this many bytes
   * is split along dimension 0 into min(ps tasks, rows, bytes / this)
   * parts, placed like variables of their own (0: never split).
   */
  int64_t min_shard_bytes = 0;
};

/** Which ps task holds each variable (or part of one). */
struct Placement {
  enum class Kind { round_robin, greedy_bytes };
  Kind kind = Kind::round_robin;
  PlacementOptions options = {};
  /** Part i on ps task i % P (TF's default). */
  static Placement round_robin(PlacementOptions o = {}) {
    return {Kind::round_robin, o};
  }
  /** Largest first, each onto the ps task holding the fewest bytes. */
  static Placement greedy_bytes(PlacementOptions o = {}) {
    return {Kind::greedy_bytes, o};
  }
};

struct PsOptions {
  /**
   * Stale synchronous parallel: a worker more than this many pushes ahead of
   * the slowest one waits in pull() (-1: never waits).
   */
  int staleness_bound = -1;
  /** A push computed on values older than this many updates is dropped
   * (-1: never). */
  int drop_stale_after = -1;
  /**
   * Synchronous mode (TF 1's SyncReplicasOptimizer) when > 0: each ps task
   * applies the average of the first `replicas_to_aggregate` gradients of
   * its global step, in worker order, drops later and stale ones, and
   * advances the step; workers use SyncReplicasOptimizer.
   */
  int replicas_to_aggregate = 0;
  /** All workers (> replicas_to_aggregate: backup workers); 0: the workers. */
  int total_num_replicas = 0;
  /**
   * Where save() writes and create() resumes from: each ps task writes its
   * variables, optimizer slots and step as "ckpt-<n>.shard-<k>-of-<P>.npz",
   * and the chief then commits "ckpt-<n>.json"; only committed checkpoints
   * are resumed from, so a job killed mid-save restarts from the last whole
   * one. Empty: no checkpoints. Shared by all tasks (one file system).
   */
  std::string checkpoint_dir = {};
};

/** What a ps task saw; every worker's clock is its number of pushes. */
struct PsStats {
  int64_t applied = 0;        // updates applied (sync: global steps)
  int64_t dropped = 0;        // pushes dropped as too stale
  int64_t max_clock_gap = 0;  // largest fastest-minus-slowest clock seen
};

namespace detail {
struct PsState;
}

class ParameterClient {
 public:
  explicit ParameterClient(Server& server, PsOptions options = {});
  ~ParameterClient();
  ParameterClient(const ParameterClient&) = delete;
  ParameterClient& operator=(const ParameterClient&) = delete;

  /**
   * Every task, the same variables in the same order: the tasks compare
   * names, dtypes, shapes and placement, and a task given others is a
   * DistError on every task. The chief's values are the start; every task
   * calls `make_optimizer` (an empty factory, or one returning null, is a
   * ValueError everywhere) and the ps tasks keep theirs.
   */
  void create(const NamedVariables& variables,
              const OptimizerFactory& make_optimizer,
              Placement placement = Placement::round_robin());
  /**
   * Workers: the latest values into `params` (the created ones, in order),
   * waiting until every ps task has reached `min_global_step`.
   */
  void pull(const std::vector<Variable>& params, int64_t min_global_step = 0);
  /** Workers: gradients for the created variables (undefined: skipped). */
  void push(const std::vector<Tensor>& grads);
  /** Workers: this one is finished; the ps tasks' join() ends after all. */
  void done();
  /**
   * The chief: has every ps task save its shard, then commits the manifest;
   * returns its path. Other workers: nothing, "".
   */
  std::string save();
  /** The global step create() resumed from (0: a fresh start). */
  int64_t resumed_step() const;

  /** The ps task holding variable i (its first part, if split). */
  int owner(size_t i) const;
  /** How many parts variable i was split into (1: not split). */
  int parts(size_t i) const;
  /** This worker's pushes so far. */
  int64_t clock() const;
  /** The global step of the values last pulled (the lowest over ps tasks). */
  int64_t global_step() const;
  /** On a ps task, after join(): what it saw. */
  PsStats stats() const;

 private:
  std::shared_ptr<detail::PsState> s_;
};

/**
 * Variables created on this thread while a PsScope lives go to ps task
 * `task` (TF's `with tf.device('/job:ps/task:k')`), whatever create()'s
 * Placement says for the rest. Scopes nest; the innermost wins.
 */
class PsScope {
 public:
  explicit PsScope(int task);
  ~PsScope();
  PsScope(const PsScope&) = delete;
  PsScope& operator=(const PsScope&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/**
 * The worker side of synchronous training: apply_gradients pushes this
 * worker's gradients for its global step, waits until the ps tasks have
 * aggregated `replicas_to_aggregate` of them and moved on, and pulls the new
 * values. A worker whose gradients came too late (a backup) gets the new
 * values all the same.
 */
class SyncReplicasOptimizer {
 public:
  explicit SyncReplicasOptimizer(ParameterClient& client);
  void apply_gradients(const std::vector<Tensor>& grads,
                       const std::vector<Variable>& params);
  int64_t global_step() const { return client_.global_step(); }

 private:
  ParameterClient& client_;
};

}  // namespace tapeflow::dist
