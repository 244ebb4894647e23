"""torch.distributed with backend "ring" on CUDA tensors (a GPU machine; every rank on the
same GPU): each collective's result beside gloo's on CPU copies of the same tensors, and a
DDP step on a CUDA model beside NCCL's and gloo's on the same model.

NCCL with several ranks on one GPU, as the harness runs it: NCCL_MULTI_RANK_GPU_ENABLE=1
where torch's NCCL is 2.30 or later, else a distinct NCCL_HOSTID per rank (NCCL then takes
the ranks for separate hosts and talks over sockets)."""

import os

import pytest
from mpi4py import MPI

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)
import torch.distributed as dist  # noqa: E402

import ring.torch  # noqa: E402,F401  (registers the backend)

from .conftest import shared_folder  # noqa: E402

W = MPI.COMM_WORLD
K, RANK = W.size, W.rank
RO = dist.ReduceOp
OPS = {"sum": RO.SUM, "prod": RO.PRODUCT, "min": RO.MIN, "max": RO.MAX}
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
          torch.int64, torch.int8, torch.uint8]
DEV = torch.device("cuda", 0)

if tuple(torch.cuda.nccl.version()[:2]) >= (2, 30):
    os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
else:
    os.environ["NCCL_HOSTID"] = f"ring-test-rank-{RANK}"


@pytest.fixture(scope="module")
def groups():
    """The default group on ring; gloo and NCCL groups over the same ranks."""
    torch.cuda.set_device(DEV)
    with shared_folder(W, "ring-torch-cuda-") as where:
        dist.init_process_group("ring", init_method=f"file://{os.path.join(where, 'store')}",
                                rank=RANK, world_size=K)
        yield {"gloo": dist.new_group(backend="gloo"), "nccl": dist.new_group(backend="nccl")}
        dist.destroy_process_group()


def data(dtype, n=37, seed=0):
    gen = torch.Generator().manual_seed(1000 * seed + RANK)
    if dtype.is_floating_point:
        return (torch.rand(n, generator=gen) * 2 + 0.5).to(dtype)
    return torch.randint(1, 3, (n,), generator=gen).to(dtype)


def same(a, b, exact=True):
    a, b = a.cpu(), b.cpu()
    if exact:
        assert torch.equal(a, b), (a, b)
    else:
        torch.testing.assert_close(a, b, rtol={torch.float16: 1e-2, torch.bfloat16: 3e-2}
                                   .get(a.dtype, 1e-5), atol=0)


@pytest.mark.parametrize("op,dtype", [(o, d) for o in OPS for d in DTYPES
                                      if (o, d) != ("prod", torch.bfloat16)], ids=str)
def test_all_reduce_on_cuda_is_gloos_on_cpu(groups, op, dtype):
    x = data(dtype, seed=1)
    ours, theirs = x.to(DEV), x.clone()
    dist.all_reduce(ours, op=OPS[op])
    dist.all_reduce(theirs, op=OPS[op], group=groups["gloo"])
    assert ours.is_cuda
    same(ours, theirs, exact=K <= 2 or op in ("min", "max") or not dtype.is_floating_point)


def test_other_collectives_on_cuda_are_gloos_on_cpu(groups):
    g = groups["gloo"]
    x = data(torch.float32, n=6, seed=4)
    a, b = x.to(DEV), x.clone()
    dist.broadcast(a, src=K - 1)
    dist.broadcast(b, src=K - 1, group=g)
    same(a, b)
    fa, fb = torch.empty(6 * K, device=DEV), torch.empty(6 * K)
    dist.all_gather_into_tensor(fa, x.to(DEV))
    dist.all_gather_into_tensor(fb, x, group=g)
    same(fa, fb)
    big = data(torch.float32, n=6 * K, seed=5)
    oa = torch.empty(6, device=DEV)
    dist.reduce_scatter_tensor(oa, big.to(DEV))
    total = big.clone()
    dist.all_reduce(total, group=g)
    same(oa, total[RANK * 6:(RANK + 1) * 6], exact=K <= 2)
    ta, tb = torch.empty(6 * K, device=DEV), torch.empty(6 * K)
    dist.all_to_all_single(ta, big.to(DEV))
    dist.all_to_all_single(tb, big, group=g)
    same(ta, tb)
    avg = x.to(DEV)
    dist.all_reduce(avg, op=RO.AVG)
    s = x.clone()
    dist.all_reduce(s, group=g)
    torch.testing.assert_close(avg.cpu(), s / K, rtol=1e-6, atol=0)


def ddp_grads(process_group=None, hook_state=None, hook=None):
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                            torch.nn.Linear(16, 3)).to(DEV)
    m = DDP(m, device_ids=[DEV.index], process_group=process_group, bucket_cap_mb=0.0005)
    if hook_state is not None:
        m.register_comm_hook(hook_state, hook)
    gen = torch.Generator().manual_seed(50 + RANK)
    x, y = torch.randn(10, 8, generator=gen).to(DEV), torch.randn(10, 3, generator=gen).to(DEV)
    torch.nn.functional.mse_loss(m(x), y).backward()
    return [p.grad.clone() for p in m.parameters()]


def test_ddp_step_on_cuda_gives_nccls_and_gloos_gradients(groups):
    ours = ddp_grads()
    for name in ("nccl", "gloo"):
        for a, b in zip(ours, ddp_grads(groups[name])):
            assert a.is_cuda
            same(a, b, exact=K <= 2)


def test_ddp_hook_on_cuda_gives_nccls_gradients(groups):
    with ring.Communicator(device="cuda", timeout=60) as comm:
        ours = ddp_grads(groups["nccl"], comm, ring.torch.allreduce_hook)
    for a, b in zip(ours, ddp_grads(groups["nccl"])):
        same(a, b, exact=K <= 2)


@pytest.mark.parametrize("momentum,kind", [(0.0, "global"), (0.9, "global"), (0.9, "local")])
def test_topk_hook_on_cuda_is_the_references(groups, momentum, kind):
    """ring.torch.topk_hook on CUDA gradients (the selection, residual and combine on the
    GPU, Communicator(device="cuda")): over three backward passes, each step's result is
    tests/topk_reference.py's for every rank's gradients as DDP handed them over, bit for
    bit, the residual and momentum carried from step to step (also across DDP's rebuild of
    its bucket after the first step, which orders the parameters anew)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ring.training.topk import k_of

    from ..topk_reference import TopKBucket
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                            torch.nn.Linear(16, 3)).to(DEV)
    m = DDP(m, device_ids=[DEV.index], bucket_cap_mb=1)  # one bucket
    order = {id(p): i for i, p in enumerate(m.parameters())}
    seen = []  # each step: this rank's gradients as handed over, and the result

    def in_model_order(bucket):
        """The bucket's gradients, flat, in the model's order of parameters."""
        pairs = sorted(zip(bucket.parameters(), bucket.gradients()), key=lambda q: order[id(q[0])])
        return torch.cat([g.reshape(-1) for _, g in pairs]).cpu().numpy()

    def hook(state, bucket):
        given = in_model_order(bucket)
        fut = ring.torch.topk_hook(state, bucket)  # (the bucket holds the result on return)
        seen.append((given, in_model_order(bucket)))
        return fut
    gen = torch.Generator().manual_seed(50 + RANK)
    x, y = torch.randn(10, 8, generator=gen).to(DEV), torch.randn(10, 3, generator=gen).to(DEV)
    with ring.Communicator(device="cuda", timeout=60) as comm:
        state = ring.torch.TopKState(comm, density=0.1, momentum=momentum, momentum_kind=kind)
        m.register_comm_hook(state, hook)
        ref = None
        for step in range(3):
            m.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            assert len(seen) == step + 1, "one bucket, one hook call a step"
            given, got = seen[-1]
            everyone = W.allgather(given)
            if ref is None:
                ref = TopKBucket(given.size, K, k_of(given.size, 0.1), True, momentum, kind)
            want = ref.step(everyone, True)
            assert got.tobytes() == want.tobytes(), step
