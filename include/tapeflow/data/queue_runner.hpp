#pragma once
// TensorFlow 1's tf.train.QueueRunner: threads that keep running enqueue
// operations into one of tpf::data's queues until their Coordinator stops
// them or the queue closes. Header-only, like the queues.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "tapeflow/core/error.hpp"
#include "tapeflow/data/coordinator.hpp"

namespace tapeflow::train {

/**
 * Holds a queue (FIFOQueue, RandomShuffleQueue: anything with enqueue and
 * close(cancel_pending_enqueues)) and the enqueue operations that feed it,
 * each a function that enqueues (typically one element, read or computed).
 * create_threads runs each operation over and over on its own thread.
 *
 * A thread ends when the coordinator asks for a stop, when its operation
 * throws OutOfRangeError (its input is exhausted) or CancelledError (the
 * queue was closed). Any other exception goes to the coordinator
 * (request_stop(error): join() rethrows it). A stop request closes the queue
 * with cancel_pending_enqueues, so that producers blocked on a full queue
 * end too; consumers drain what is left, then get the queue's end
 * (OutOfRangeError or std::nullopt). When the last thread ends, the queue
 * is closed. The queue must outlive the threads (join them first).
 */
template <class Queue>
class QueueRunner {
 public:
  using EnqueueOp = std::function<void()>;

  QueueRunner(Queue& queue, std::vector<EnqueueOp> enqueue_ops)
      : queue_(&queue), enqueue_ops_(std::move(enqueue_ops)) {
    if (enqueue_ops_.empty())
      throw ValueError(
          "[QueueRunner] expected at least one enqueue operation, got none");
    for (const EnqueueOp& op : enqueue_ops_)
      if (!op)
        throw ValueError(
            "[QueueRunner] expected callable enqueue operations, got an "
            "empty one");
  }

  /**
   * One thread per enqueue operation, started now unless `start` is false
   * (then CoordinatedThread::start() each). Pass them to coord.join().
   */
  std::vector<CoordinatedThread> create_threads(Coordinator& coord,
                                                bool start = true) {
    auto run = std::make_shared<Run>();
    run->queue = queue_;
    run->remaining = enqueue_ops_.size();
    Queue* queue = queue_;
    run->callback = coord.add_stop_callback(
        [queue] { queue->close(/*cancel_pending_enqueues=*/true); });
    run->coord = coord.state_;
    std::vector<CoordinatedThread> threads;
    for (const EnqueueOp& op : enqueue_ops_)
      threads.push_back(coord.make_thread(
          [run, op] {
            const LastOneCloses last{run.get()};
            try {
              while (!run->coord->should_stop()) op();
            } catch (const OutOfRangeError&) {  // input exhausted
            } catch (const CancelledError&) {   // queue closed
            }
          },
          start));
    return threads;
  }

  Queue& queue() const { return *queue_; }
  const std::vector<EnqueueOp>& enqueue_ops() const { return enqueue_ops_; }

 private:
  // One create_threads call's threads: the last one to end closes the
  // queue, and its stop callback is no longer needed.
  struct Run {
    Queue* queue = nullptr;
    std::shared_ptr<detail::CoordinatorState> coord;
    uint64_t callback = 0;
    std::mutex mu;
    size_t remaining = 0;
    // Threads destroyed unstarted never reach LastOneCloses: the callback
    // would close a queue that may be gone by the next stop request.
    ~Run() {
      if (coord) coord->remove_stop_callback(callback);
    }
  };
  struct LastOneCloses {
    Run* run;
    ~LastOneCloses() {
      std::lock_guard lock(run->mu);
      if (--run->remaining > 0) return;
      run->coord->remove_stop_callback(run->callback);
      run->queue->close();
    }
  };

  Queue* queue_;
  std::vector<EnqueueOp> enqueue_ops_;
};

}  // namespace tapeflow::train
