"""The model the training examples share: a small MLP (tanh hidden layers, mean squared
error), its data, and a backward pass that hands each gradient over as soon as it is done,
last layer first, as autograd does. NumPy on the host, CuPy on a GPU (`xp`)."""

from __future__ import annotations

import argparse

import numpy as np

SIZES = (16, 64, 64, 4)  # inputs, hidden, hidden, outputs


def data(n: int, seed: int = 0):
    """n samples of a smooth target the MLP can fit (float32, NumPy)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, SIZES[0]), dtype=np.float32)
    w = rng.standard_normal((SIZES[0], SIZES[-1]), dtype=np.float32) / 4
    return x, np.sin(x @ w).astype(np.float32)


def init(seed: int = 1) -> list[np.ndarray]:
    """[W1, b1, W2, b2, W3, b3], float32."""
    rng = np.random.default_rng(seed)
    params = []
    for a, b in zip(SIZES, SIZES[1:]):
        params += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
                   np.zeros(b, np.float32)]
    return params


def backward(xp, params, x, y, scale: float, grads, ready=None, add: bool = False) -> float:
    """Gradients of sum((f(x) - y)^2) * scale / 2 into `grads` (arrays like params; with
    add, added to what they hold: gradient accumulation), the last layer's first; ready(i)
    is called as soon as grads[i] is final. Returns the loss."""
    acts = [x]
    for layer in range(len(params) // 2):
        z = acts[-1] @ params[2 * layer] + params[2 * layer + 1]
        acts.append(xp.tanh(z) if 2 * layer + 2 < len(params) else z)
    delta = (acts[-1] - y) * xp.float32(scale)
    loss = float((acts[-1] - y).ravel() @ (acts[-1] - y).ravel()) * scale / 2
    for layer in reversed(range(len(params) // 2)):
        w, b = 2 * layer, 2 * layer + 1
        if add:
            grads[w] += acts[layer].T @ delta
            grads[b] += xp.sum(delta, axis=0)
        else:
            xp.matmul(acts[layer].T, delta, out=grads[w])
            xp.sum(delta, axis=0, out=grads[b])
        for i in (b, w):
            if ready is not None:
                ready(i)
        if layer:
            delta = (delta @ params[w].T) * (1 - acts[layer] * acts[layer])
    return loss


class Momentum:
    """SGD with momentum (PyTorch's form: v = mu v + g; p -= lr v), on whatever slice of the
    parameters it is given: all of them, or a ZeRO shard."""

    def __init__(self, xp, params, lr: float = 0.05, mu: float = 0.9):
        self.lr, self.mu = np.float32(lr), np.float32(mu)
        self.v = [xp.zeros_like(p) for p in params]

    def step(self, params, grads) -> None:
        for p, g, v in zip(params, grads, self.v):
            v *= self.mu
            v += g
            p -= self.lr * v


def reference(x, y, batch: int, steps: int) -> list[np.ndarray]:
    """Single-process training with the whole global batch: what every example must match."""
    params = init()
    grads = [np.empty_like(p) for p in params]
    opt = Momentum(np, params)
    for s in range(steps):
        lo = (s * batch) % len(x)
        backward(np, params, x[lo:lo + batch], y[lo:lo + batch], 1.0 / batch, grads)
        opt.step(params, grads)
    return params


def largest_relative_difference(got, want) -> float:
    """max over tensors of max|got - want| / max|want|."""
    return max(float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30)) for g, w in zip(got, want))


def at_least_one(text: str) -> int:
    """An argparse type: a count of 1 or more (0 steps or a batch of 0 trains nothing)."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"at least 1, got {n}")
    return n


def start(doc: str, extra=None):
    """(args, communicator, xp) from the command line every example takes."""
    import ring
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--steps", type=at_least_one, default=30)
    ap.add_argument("--batch", type=at_least_one, default=64,
                    help="global batch (divisible by ranks)")
    ap.add_argument("--device", default="host", choices=["host", "cuda"])
    if extra is not None:
        extra(ap)
    args = ap.parse_args()
    comm = ring.Communicator(device=args.device)
    if args.batch % comm.size:
        raise SystemExit(f"--batch {args.batch} is not divisible by {comm.size} ranks")
    if args.device == "cuda":
        import cupy as xp
        from numba import config
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0  # the model's gradients are tiny: so are grids
    else:
        xp = np
    return args, comm, xp


def finish(comm, xp, what: str, diff: float, timing: str) -> int:
    """Print the verdict (rank 0), agree on it across ranks (an array on the communicator's
    device), close; the exit status."""
    ok = diff <= 1e-5
    if comm.rank == 0:
        print(what)
        print(f"largest relative difference from single-process training: {diff:.2e} "
              f"({'OK' if ok else 'FAIL'}: limit 1e-5)")
        print(f"step time: {timing}")
    ok = bool(int(comm.allreduce(xp.asarray([int(ok)], xp.int32), op="min")[0]))  # everyone's
    comm.close()
    return 0 if ok else 1


def host(xp, params) -> list[np.ndarray]:
    return [p if xp is np else xp.asnumpy(p) for p in params]
