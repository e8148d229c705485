#!/usr/bin/env python3
"""The Python peers of tapeflow_bench on the CPU: PyTorch 2.x eager,
TensorFlow 2.x (tf.function) and JAX (jit) on the benchmark's own cases, for
the closing notes of the CPU work. Never a CI dependency: a framework that
is not importable is skipped with a line that says so.

Cases, as tapeflow_bench defines them (benchmarks/bench_cases.hpp):
  overhead_add        c = a + b on 1-element float32 tensors, eagerly
  conv2d_<a|b|c>_fwd  the three convolutions, SAME, stride 1, no bias
  conv2d_<a|b|c>_train  forward and the gradients wrt input and filter
  train_step_cnn      the samples' Fashion-MNIST CNN (samples/common/
                      models.hpp), batch 64, Adam 1e-3 (epsilon 1e-7)
  train_step_mlp      64-64-64-4 tanh, batch 32, mean squared error, Adam
TensorFlow and JAX run channels-last (their CPU layout), PyTorch NCHW as
tapeflow does; their convolutions are also set against tapeflow's
conv2d_<b|c>_nhwc_* (the same data in TensorFlow's layout). JAX's Adam is
written out (no optax), with Keras' epsilon.

Each framework and thread count runs in a process of its own, pinned to
that many CPUs (taskset: XLA sizes its pool to the CPUs it may use), with the
framework's own thread settings too. A time is the best of --repeats timings
of about --seconds each after warm-up (compilation included in the
warm-up), which favours the peer over tapeflow_bench's medians.

  python3 tools/bench_table.py build-bench/benchmarks/tapeflow_bench \\
      --threads 1,2 --save-json /tmp/bench -- --benchmark_repetitions=3
  /opt/tapeflow-peers/py/bin/python tools/cpu_python_peers.py \\
      --threads 1,2 --tapeflow-dir /tmp/bench

prints, per case and thread count, each peer's time and peer/tapeflow (above
1: tapeflow is faster); with bench_table.py's --processes, tapeflow's time is
the median of its processes'. The peers' virtual environment comes from
scripts/install_deps.sh --python-peers.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

from gpu_peer_common import seconds_per_call, tapeflow_runs

TOOL = "cpu_python_peers"
FRAMEWORKS = ("torch", "tensorflow", "jax")
CHANNELS_LAST = ("tensorflow", "jax")
# name, batch, in channels, out channels, height = width, kernel (SAME).
CONVS = (("a", 64, 1, 32, 28, 5), ("b", 64, 32, 64, 14, 5),
         ("c", 32, 64, 64, 56, 3))
CNN_BATCH, MLP_BATCH, MLP_WIDTH, MLP_OUTPUTS = 64, 32, 64, 4


def torch_cases(threads):
    import torch
    torch.set_num_threads(threads)
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(42)
    cases = {}
    a, b = torch.ones(1), torch.full((1,), 2.0)
    cases["overhead_add"] = lambda: a + b
    for name, n, c, o, hw, k in CONVS:
        x, w = torch.rand(n, c, hw, hw), torch.rand(o, c, k, k)
        dy = torch.rand(n, o, hw, hw)
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

        def fwd(x=x, w=w, pad=k // 2):
            with torch.no_grad():
                return F.conv2d(x, w, padding=pad)

        def train(x=xg, w=wg, dy=dy, pad=k // 2):
            y = F.conv2d(x, w, padding=pad)
            return torch.autograd.grad(y, (x, w), dy)

        cases[f"conv2d_{name}_fwd"], cases[f"conv2d_{name}_train"] = fwd, train

    def stepper(model, x, y, loss_fn):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    cnn = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 1024), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(1024, 10)).train()
    cases["train_step_cnn"] = stepper(
        cnn, torch.rand(CNN_BATCH, 1, 28, 28),
        (torch.rand(CNN_BATCH) * 10).long(), F.cross_entropy)
    mlp = nn.Sequential(nn.Linear(MLP_WIDTH, MLP_WIDTH), nn.Tanh(),
                        nn.Linear(MLP_WIDTH, MLP_WIDTH), nn.Tanh(),
                        nn.Linear(MLP_WIDTH, MLP_OUTPUTS))
    cases["train_step_mlp"] = stepper(
        mlp, torch.rand(MLP_BATCH, MLP_WIDTH),
        torch.rand(MLP_BATCH, MLP_OUTPUTS), F.mse_loss)
    return f"torch {torch.__version__}", cases


def tensorflow_cases(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras = tf.keras
    tf.random.set_seed(42)
    cases = {}
    a, b = tf.ones([1]), tf.fill([1], 2.0)
    cases["overhead_add"] = lambda: a + b
    for name, n, c, o, hw, k in CONVS:
        x, w = tf.random.uniform([n, hw, hw, c]), tf.random.uniform([k, k, c, o])
        dy = tf.random.uniform([n, hw, hw, o])

        @tf.function
        def fwd(x, w):
            return tf.nn.conv2d(x, w, 1, "SAME")

        @tf.function
        def train(x, w, dy):
            with tf.GradientTape() as tape:
                tape.watch([x, w])
                y = tf.nn.conv2d(x, w, 1, "SAME")
            # y returned too: unused, the graph would drop the forward.
            return [y] + tape.gradient(y, [x, w], output_gradients=dy)

        cases[f"conv2d_{name}_fwd"] = lambda f=fwd, x=x, w=w: f(x, w)
        cases[f"conv2d_{name}_train"] = (
            lambda f=train, x=x, w=w, dy=dy: f(x, w, dy))

    def stepper(model, x, y, loss_fn):
        opt = keras.optimizers.Adam(1e-3, epsilon=1e-7)

        # The batch an argument: a small captured tensor becomes a constant
        # that Grappler may fold.
        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return lambda: step(x, y).numpy()

    L = keras.layers
    cnn = keras.Sequential([
        keras.Input((28, 28, 1)),
        L.Conv2D(32, 5, padding="same", activation="relu"), L.MaxPool2D(),
        L.Conv2D(64, 5, padding="same", activation="relu"), L.MaxPool2D(),
        L.Flatten(), L.Dense(1024, activation="relu"), L.Dropout(0.5),
        L.Dense(10)])
    labels = tf.cast(tf.random.uniform([CNN_BATCH], 0, 10), tf.int64)
    cases["train_step_cnn"] = stepper(
        cnn, tf.random.uniform([CNN_BATCH, 28, 28, 1]), labels,
        lambda y, logits: tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits)))
    mlp = keras.Sequential([
        keras.Input((MLP_WIDTH,)), L.Dense(MLP_WIDTH, activation="tanh"),
        L.Dense(MLP_WIDTH, activation="tanh"), L.Dense(MLP_OUTPUTS)])
    cases["train_step_mlp"] = stepper(
        mlp, tf.random.uniform([MLP_BATCH, MLP_WIDTH]),
        tf.random.uniform([MLP_BATCH, MLP_OUTPUTS]),
        lambda y, p: tf.reduce_mean(tf.square(p - y)))
    return f"tensorflow {tf.__version__}", cases


def jax_adam_stepper(jax, loss_fn, params, batch):
    """A jitted step of Adam 1e-3 (Keras' epsilon 1e-7) on loss_fn(params,
    batch, key); the returned callable carries the state and blocks on all
    of it. The batch is an argument: closed over, it would be a constant
    that XLA may fold."""
    jnp = jax.numpy
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-7

    @jax.jit
    def step(params, m, v, t, key, batch):
        key, sub = jax.random.split(key)
        loss, g = jax.value_and_grad(loss_fn)(params, batch, sub)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        rate = lr * jnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - rate * m / (jnp.sqrt(v) + eps), params, m, v)
        return loss, params, m, v, t, key

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [params, zeros, zeros, jnp.float32(0), jax.random.PRNGKey(0)]

    def run():
        loss, *rest = step(*state, batch)
        state[:] = rest
        return jax.block_until_ready((loss, rest))
    return run


def jax_cases(threads):
    import jax
    from jax import lax
    jnp = jax.numpy
    keys = iter(jax.random.split(jax.random.PRNGKey(42), 32))

    def uniform(*shape):
        return jax.random.uniform(next(keys), shape, jnp.float32)

    cases = {}
    a, b = jnp.ones(1), jnp.full(1, 2.0)
    cases["overhead_add"] = lambda: (a + b).block_until_ready()
    nhwc = ("NHWC", "HWIO", "NHWC")

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=nhwc)

    for name, n, c, o, hw, k in CONVS:
        x, w, dy = uniform(n, hw, hw, c), uniform(k, k, c, o), uniform(n, hw, hw, o)
        fwd = jax.jit(conv)
        def forward_and_grads(x, w, dy):
            y, vjp = jax.vjp(conv, x, w)
            return y, vjp(dy)  # y returned: unused, XLA would drop it

        train = jax.jit(forward_and_grads)
        cases[f"conv2d_{name}_fwd"] = (
            lambda f=fwd, x=x, w=w: f(x, w).block_until_ready())
        cases[f"conv2d_{name}_train"] = (
            lambda f=train, x=x, w=w, dy=dy: jax.block_until_ready(f(x, w, dy)))

    def dense(p, x):
        return x @ p[0] + p[1]

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1),
                                 (1, 2, 2, 1), "VALID")

    def cnn_loss(p, batch, key):
        x, labels = batch
        h = pool(jax.nn.relu(conv(x, p["c1"][0]) + p["c1"][1]))
        h = pool(jax.nn.relu(conv(h, p["c2"][0]) + p["c2"][1]))
        h = jax.nn.relu(dense(p["d1"], h.reshape(h.shape[0], -1)))
        keep = jax.random.bernoulli(key, 0.5, h.shape)
        logits = dense(p["d2"], jnp.where(keep, h / 0.5, 0.0))
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], 1))

    def layer(*shape):
        return (uniform(*shape) * 0.1 - 0.05, jnp.zeros(shape[-1]))

    cnn = {"c1": layer(5, 5, 1, 32), "c2": layer(5, 5, 32, 64),
           "d1": layer(64 * 7 * 7, 1024), "d2": layer(1024, 10)}
    labels = (uniform(CNN_BATCH) * 10).astype(jnp.int32)
    cases["train_step_cnn"] = jax_adam_stepper(
        jax, cnn_loss, cnn, (uniform(CNN_BATCH, 28, 28, 1), labels))

    def mlp_loss(p, batch, key):
        x, y = batch
        h = jnp.tanh(dense(p[0], x))
        h = jnp.tanh(dense(p[1], h))
        return jnp.mean(jnp.square(dense(p[2], h) - y))

    mlp = [layer(MLP_WIDTH, MLP_WIDTH), layer(MLP_WIDTH, MLP_WIDTH),
           layer(MLP_WIDTH, MLP_OUTPUTS)]
    cases["train_step_mlp"] = jax_adam_stepper(
        jax, mlp_loss, mlp,
        (uniform(MLP_BATCH, MLP_WIDTH), uniform(MLP_BATCH, MLP_OUTPUTS)))
    return f"jax {jax.__version__}", cases


def worker(args):
    """Times one framework's cases; prints one JSON object per line."""
    build = {"torch": torch_cases, "tensorflow": tensorflow_cases,
             "jax": jax_cases}[args.worker]
    try:
        version, cases = build(args.threads)
    except ImportError as e:
        print(json.dumps({"skipped": f"{args.worker} is not importable ({e})"}))
        return
    for name, fn in cases.items():
        if args.filter and args.filter not in name:
            continue
        try:
            seconds = seconds_per_call(fn, args.warmup, args.seconds,
                                       args.repeats)
        except Exception as e:  # one case's failure leaves the others
            print(json.dumps({"failed": f"{args.worker} {name}: {e}"}),
                  flush=True)
            continue
        print(json.dumps({"case": name, "version": version,
                          "seconds": seconds}), flush=True)


def run_worker(framework, threads, args):
    """{case: seconds} and the framework's version, from a process of its
    own pinned to `threads` CPUs: XLA sizes its pool to the CPUs a process
    may use, whatever it is told."""
    env = dict(os.environ)
    cmd = ["taskset", "-c", f"0-{threads - 1}", sys.executable,
           os.path.abspath(__file__), "--worker", framework,
           "--threads", str(threads), "--warmup", str(args.warmup),
           "--seconds", str(args.seconds), "--repeats", str(args.repeats)]
    if args.filter:
        cmd += ["--filter", args.filter]
    if threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            " --xla_cpu_multi_thread_eigen=false").strip()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    times, version = {}, None
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if "skipped" in row:
            print(f"{TOOL}: {row['skipped']}")
            return {}, None
        if "failed" in row:
            print(f"{TOOL}: {row['failed']}")
            continue
        times[row["case"]], version = row["seconds"], row["version"]
    if done.returncode != 0:
        print(f"{TOOL}: {framework} at {threads} thread(s) exited with "
              f"{done.returncode}: {done.stderr.strip()[-400:]}")
    return times, version


def tapeflow_seconds(directory, threads):
    """{case: seconds} of tapeflow from bench_table.py's threads_<n>.json, or
    its threads_<n>_p<k>.json of --processes: per file the median of the
    runs' real times, then the median over the files."""
    if not directory:
        return {}
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    paths = sorted(glob.glob(
        os.path.join(directory, f"threads_{threads}_p*.json")))
    if not paths:
        paths = [os.path.join(directory, f"threads_{threads}.json")]
    per_file = {}
    for path in paths:
        for case, rows in tapeflow_runs(path, TOOL).items():
            plain = [r for r in rows if r.get("run_type") != "aggregate"]
            per_file.setdefault(case, []).append(statistics.median(
                r["real_time"] * scale[r.get("time_unit", "ns")]
                for r in plain))
    return {case: statistics.median(v) for case, v in per_file.items()}


def duration(seconds):
    """seconds in ns, us or ms, 3 significant digits."""
    for unit, scale in (("ns", 1e-9), ("us", 1e-6)):
        if seconds < 1000 * scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e3:.3g} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--tapeflow-dir",
                    help="bench_table.py's --save-json directory")
    ap.add_argument("--filter", default="", help="cases whose name has it")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.threads = int(args.threads)
        worker(args)
        return
    frameworks = [f for f in args.frameworks.split(",") if f]
    counts = [int(t) for t in args.threads.split(",")]
    if not shutil.which("taskset"):
        sys.exit(f"{TOOL}: taskset (util-linux) is needed to pin the peers")
    if max(counts) > len(os.sched_getaffinity(0)):
        sys.exit(f"{TOOL}: {max(counts)} threads asked for, "
                 f"{len(os.sched_getaffinity(0))} CPUs available")
    for threads in counts:
        tapeflow = tapeflow_seconds(args.tapeflow_dir, threads)
        peers, versions = {}, []
        for framework in frameworks:
            peers[framework], version = run_worker(framework, threads, args)
            if version:
                versions.append(version)
        ran = [f for f in frameworks if peers[f]]
        for framework in set(ran) & set(CHANNELS_LAST):
            with_nhwc = {}
            for case, seconds in peers[framework].items():
                nhwc = case.replace("_fwd", "_nhwc_fwd").replace(
                    "_train", "_nhwc_train")
                if case.startswith("conv2d_") and nhwc in tapeflow:
                    with_nhwc[nhwc] = seconds
            peers[framework].update(with_nhwc)
        if not ran:
            print(f"{TOOL}: no peer ran at {threads} thread(s)")
            continue
        cases = sorted({c for f in ran for c in peers[f]})
        print(f"\n{threads} thread(s); peer/tapeflow above 1: tapeflow faster; "
              + ", ".join(versions))
        print("| case | tapeflow | " + " | ".join(ran) + " |")
        print("|---|---:|" + "---:|" * len(ran))
        for case in cases:
            ours = tapeflow.get(case)
            cells = [duration(ours) if ours else "-"]
            for framework in ran:
                theirs = peers[framework].get(case)
                cell = duration(theirs) if theirs else "-"
                if theirs and ours:
                    cell += f" ({theirs / ours:.2f}x)"
                cells.append(cell)
            print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
