"""A DistributedDataParallel training step on CPU tensors with torch.distributed's backend
"ring" (ring/torch.py) against gloo on the same processes, and ring's DDP communication
hooks over a gloo group (`--hooks`: allreduce, bf16, fp16, topk at `--density`). Per step:
the slowest rank's time, best and median over `--steps`, all of them interleaved.

    mpiexec -n 2 python benchmarks/torch_ddp.py [--layers 8] [--width 1024] [--batch 32]
        [--steps 20] [--hooks allreduce] [--density 0.01] [--json results/torch-ddp-2ranks.json]
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one compute thread per rank

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from mpi4py import MPI  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ring  # noqa: E402
from harness.sizes import at_least  # noqa: E402
import ring.torch  # noqa: E402


HOOKS = {"allreduce": "allreduce_hook", "bf16": "allreduce_bf16_hook",
         "fp16": "allreduce_fp16_hook", "topk": "topk_hook"}
HOOK_NAMES = {"allreduce": "ring hook over gloo", "bf16": "ring bf16 hook",
              "fp16": "ring fp16 hook", "topk": "ring top-k hook"}  # (the first: as before)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=at_least(1), default=8)
    ap.add_argument("--width", type=at_least(1), default=1024)
    ap.add_argument("--batch", type=at_least(1), default=32)
    ap.add_argument("--steps", type=at_least(1), default=20)
    ap.add_argument("--hooks", default="allreduce",
                    help="ring's DDP hooks to time over gloo: allreduce,bf16,fp16,topk")
    ap.add_argument("--density", type=float, default=0.01, help="the topk hook's")
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    where = world.bcast(tempfile.mkdtemp(prefix="ring-ddp-") if world.rank == 0 else None)
    dist.init_process_group("ring", init_method=f"file://{where}/store", rank=world.rank,
                            world_size=world.size)
    gloo = dist.new_group(backend="gloo")
    hook_comm = ring.Communicator(device="host")

    def make():
        torch.manual_seed(0)
        layers = []
        for _ in range(a.layers):
            layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    models = {"ring": DDP(make()), "gloo": DDP(make(), process_group=gloo)}
    for hook in a.hooks.split(","):
        m = models[HOOK_NAMES[hook]] = DDP(make(), process_group=gloo)
        if hook == "topk":
            m.register_comm_hook(ring.torch.TopKState(hook_comm, a.density), ring.torch.topk_hook)
        else:
            m.register_comm_hook(hook_comm, getattr(ring.torch, HOOKS[hook]))
    g = torch.Generator().manual_seed(world.rank)
    x = torch.randn(a.batch, a.width, generator=g)
    times = {k: [] for k in models}
    for s in range(a.steps + 2):
        for name, m in models.items():
            world.Barrier()
            t = time.perf_counter()
            m.zero_grad(set_to_none=False)
            m(x).square().mean().backward()
            dt = world.allreduce(time.perf_counter() - t, op=MPI.MAX)
            if s >= 2:
                times[name].append(dt * 1e3)
    grads = {k: torch.cat([p.grad.reshape(-1) for p in m.parameters()]) for k, m in models.items()}
    same = {k: bool(torch.equal(v, grads["gloo"])) for k, v in grads.items()}
    params = sum(p.numel() for p in models["gloo"].parameters())
    rows = {k: {"best_ms": min(v), "median_ms": statistics.median(v)} for k, v in times.items()}
    hook_comm.close()
    dist.destroy_process_group()
    if world.rank:
        return
    print(f"{world.size} ranks, DDP of {a.layers} x Linear({a.width}): {params * 4 / 2**20:.0f} MB "
          f"of float32 gradient, batch {a.batch} per rank, torch {torch.__version__}")
    print(f"{'backend':>20} {'best ms':>9} {'median ms':>10}  gradients == gloo's "
          f"(compressed hooks: not meant to be)")
    for k, r in rows.items():
        print(f"{k:>20} {r['best_ms']:9.1f} {r['median_ms']:10.1f}  {same[k]}")
    if a.json:
        from harness.meta import describe
        argv = ["mpiexec", "-n", str(world.size), "python", *sys.argv]
        with open(a.json, "w") as f:
            json.dump({"meta": describe(argv, cuda=False), "ranks": world.size, "args": vars(a),
                       "torch": torch.__version__, "gradient_mb": params * 4 / 2**20,
                       "steps": rows, "gradients_equal_gloo": same, "per_step_ms": times},
                      f, indent=1)


if __name__ == "__main__":
    main()
