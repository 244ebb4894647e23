"""torch.distributed with backend "ring" (ring/torch.py), on every rank of an mpiexec job,
beside gloo on the same processes: every collective's result, a DDP step's gradients, the
DDP communication hook, and errors raised on every rank."""

import contextlib
import datetime
import os
import time
import warnings

import pytest
from mpi4py import MPI

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

import ring.torch  # noqa: E402,F401  (registers the backend)
import ring  # noqa: E402
from ring import MismatchError  # noqa: E402

from ..gpu import CUDA_OR_SIM  # noqa: E402
from .conftest import shared_folder  # noqa: E402

W = MPI.COMM_WORLD
K, RANK = W.size, W.rank
RO = dist.ReduceOp
OPS = {"sum": RO.SUM, "prod": RO.PRODUCT, "min": RO.MIN, "max": RO.MAX}
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
          torch.int64, torch.int8, torch.uint8]


@pytest.fixture(scope="module")
def gloo():
    """The default group on ring; a gloo group over the same ranks to compare with."""
    with shared_folder(W, "ring-torch-") as where:
        dist.init_process_group("ring", init_method=f"file://{os.path.join(where, 'store')}",
                                rank=RANK, world_size=K)
        g = dist.new_group(backend="gloo")
        yield g
        dist.destroy_process_group()


def data(dtype, n=37, seed=0):
    """Rank-dependent values small enough that a product of K of them stays exact."""
    gen = torch.Generator().manual_seed(1000 * seed + RANK)
    if dtype.is_floating_point:
        return (torch.rand(n, generator=gen) * 2 + 0.5).to(dtype)
    return torch.randint(1, 3, (n,), generator=gen).to(dtype)


RTOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2}  # a few roundings apart


def same(a, b, exact=True):
    """Bitwise, or (when the reduction orders differ) within a few roundings."""
    if exact:
        assert torch.equal(a, b), (a, b)
    else:
        torch.testing.assert_close(a, b, rtol=RTOL.get(a.dtype, 1e-5), atol=0)


def same_mean(a, b, part, gloo):
    """a and b: the mean over the ranks of each rank's float32 `part`, summed in two orders.
    Bitwise at two ranks (one rounding); beyond, each order's K - 1 additions of the parts / K
    round by at most eps/2 of a running total no larger than sum|part| / K, and the division
    (before or after) by eps/2 more, so |a - b| <= eps (sum|part| + |b|). A tolerance
    relative to |b| alone fails wherever the ranks' parts cancel (gradients do)."""
    if K <= 2:
        return same(a, b)
    magnitude = part.abs()
    dist.all_reduce(magnitude, group=gloo)
    bound = torch.finfo(a.dtype).eps * (magnitude + b.abs())
    assert torch.all((a - b).abs() <= bound), ((a - b).abs() / bound).max()


@pytest.mark.parametrize("op,dtype", [(o, d) for o in OPS for d in DTYPES
                                      if (o, d) != ("prod", torch.bfloat16)],  # gloo has none
                         ids=str)
def test_all_reduce_is_gloos(gloo, op, dtype):
    x = data(dtype, seed=1)
    ours, theirs = x.clone(), x.clone()
    dist.all_reduce(ours, op=OPS[op])
    dist.all_reduce(theirs, op=OPS[op], group=gloo)
    # two operands: one rounding, whatever the order; more: the orders differ
    same(ours, theirs, exact=K <= 2 or op in ("min", "max") or not dtype.is_floating_point)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_avg_and_prod_in_low_precision(gloo, dtype):
    """AVG (gloo has none): the float32 sum of the inputs over K, rounded once;
    a bfloat16 product against float32's."""
    x = data(dtype, seed=2)
    ours = x.clone()
    dist.all_reduce(ours, op=RO.AVG)
    total = x.float().clone()
    dist.all_reduce(total, group=gloo)
    torch.testing.assert_close(ours.float(), total / K, rtol=1e-2 if dtype != torch.float32
                               else 1e-6, atol=0)
    p = x.clone()
    dist.all_reduce(p, op=RO.PRODUCT)
    q = x.float().clone()
    dist.all_reduce(q, op=RO.PRODUCT, group=gloo)
    torch.testing.assert_close(p.float(), q, rtol=2e-2 if dtype != torch.float32 else 1e-6,
                               atol=0)


@pytest.mark.parametrize("root", sorted({0, K - 1}))
def test_rooted_collectives_are_gloos(gloo, root):
    x = data(torch.float32, seed=3)
    a, b = x.clone(), x.clone()
    dist.broadcast(a, src=root)
    dist.broadcast(b, src=root, group=gloo)
    same(a, b)
    a, b = x.clone(), x.clone()
    dist.reduce(a, dst=root)
    dist.reduce(b, dst=root, group=gloo)
    if RANK == root:
        same(a, b, exact=K <= 2)
    ga = [torch.empty_like(x) for _ in range(K)] if RANK == root else None
    gb = [torch.empty_like(x) for _ in range(K)] if RANK == root else None
    dist.gather(x, ga, dst=root)
    dist.gather(x, gb, dst=root, group=gloo)
    if RANK == root:
        for u, v in zip(ga, gb):
            same(u, v)
    parts = [data(torch.float32, n=5, seed=10 + r) for r in range(K)] if RANK == root else None
    sa, sb = torch.empty(5), torch.empty(5)
    dist.scatter(sa, parts, src=root)
    dist.scatter(sb, parts, src=root, group=gloo)
    same(sa, sb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_gathers_and_scatters_are_gloos(gloo, dtype):
    x = data(dtype, n=6, seed=4)
    la = [torch.empty_like(x) for _ in range(K)]
    lb = [torch.empty_like(x) for _ in range(K)]
    dist.all_gather(la, x)
    dist.all_gather(lb, x, group=gloo)
    for u, v in zip(la, lb):
        same(u, v)
    fa = torch.empty(K * 6, dtype=dtype)
    dist.all_gather_into_tensor(fa, x)
    same(fa, torch.cat(lb))
    big = data(dtype, n=6 * K, seed=5)
    oa, ob = torch.empty(6, dtype=dtype), torch.empty(6, dtype=dtype)
    dist.reduce_scatter_tensor(oa, big)
    total = big.clone()
    dist.all_reduce(total, group=gloo)
    same(oa, total[RANK * 6:(RANK + 1) * 6], exact=K <= 2 or not dtype.is_floating_point)
    dist.reduce_scatter(ob, list(big.chunk(K)))
    same(ob, oa)
    ta, tb = torch.empty(6 * K, dtype=dtype), torch.empty(6 * K, dtype=dtype)
    dist.all_to_all_single(ta, big)
    dist.all_to_all_single(tb, big, group=gloo)
    same(ta, tb)
    dist.all_to_all_single(ta, big, [6] * K, [6] * K)  # equal splits, written out
    same(ta, tb)
    dist.barrier()


def test_barrier_lets_no_rank_past_until_every_rank_has_reached_it(gloo):
    """dist.barrier(): the last rank, late by half a second, leaves a mark before its
    barrier; every rank finds the mark after its own (one that went through at once would
    look before it is there)."""
    with shared_folder(W, "ring-barrier-") as where:  # (its MPI barrier: every rank has
        mark = os.path.join(where, "reached")          # looked before the mark goes)
        if RANK == K - 1:
            time.sleep(0.5)
            open(mark, "w").close()
        dist.barrier()
        found = os.path.exists(mark)
    assert found, f"rank {RANK} left the barrier before rank {K - 1} reached it"


def test_the_list_forms_all_to_all_and_all_reduce_coalesced(gloo):
    """What torch keeps beside the tensor forms: all_to_all of lists (rank r's output j is
    rank j's input r: against all_to_all_single of the same blocks, which the test above
    compares with gloo's) and all_reduce_coalesced (to be deprecated, torch says: against
    gloo's all_reduce of each tensor)."""
    xs = [data(torch.float32, n=3, seed=20 + j) for j in range(K)]
    outs = [torch.empty(3) for _ in range(K)]
    dist.all_to_all(outs, xs)
    flat = torch.empty(3 * K)
    dist.all_to_all_single(flat, torch.cat(xs))
    same(torch.cat(outs), flat)
    ts = [data(torch.float32, n=n, seed=30 + n) for n in (2, 5)]
    want = [t.clone() for t in ts]
    for t in want:
        dist.all_reduce(t, group=gloo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's notice that it will be deprecated)
        dist.all_reduce_coalesced(ts)
    for t, w in zip(ts, want):
        same(t, w, exact=K <= 2)
    ts = [data(torch.float32, n=n, seed=40 + n) for n in (3, 4)]  # another op: max
    want = [t.clone() for t in ts]
    for t in want:
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist.all_reduce_coalesced(ts, op=dist.ReduceOp.MAX)
    for t, w in zip(ts, want):
        same(t, w)


def test_all_reduce_runs_behind_the_caller(gloo):
    """On CPU tensors all_reduce returns before the peers have called it (ring's progress
    thread), so DDP's bucket all-reduces overlap its backward pass."""
    x = torch.full((5,), float(RANK))
    if RANK == 0:
        work = dist.all_reduce(x, async_op=True)
        assert not work.is_completed()
        if K > 1:  # torch's wait(timeout): gives up, and the call goes on
            with pytest.raises(ring.TimeoutError, match="not finished within wait"):
                work.wait(timeout=datetime.timedelta(seconds=0.2))
        for q in range(1, K):
            W.send(None, dest=q, tag=78)
    else:
        W.recv(source=0, tag=78)
        work = dist.all_reduce(x, async_op=True)
    assert work.wait(timeout=datetime.timedelta(0)) is True  # (zero: torch's "no timeout")
    same(x, torch.full((5,), float(K * (K - 1) // 2)))
    assert work.get_future().value()[0] is x


def test_several_collectives_in_flight(gloo):
    """CPU collectives run behind the caller in call order; each Work finishes its own
    (the list forms' copies into torch's outputs included)."""
    x = data(torch.float32, n=6, seed=8)
    gathered = [torch.empty_like(x) for _ in range(K)]
    flat, shard, total = torch.empty(6 * K), torch.empty(6), x.clone()
    big = data(torch.float32, n=6 * K, seed=9)
    works = [dist.all_gather(gathered, x, async_op=True),
             dist.all_gather_into_tensor(flat, x, async_op=True),
             dist.reduce_scatter_tensor(shard, big, async_op=True),
             dist.all_reduce(total, async_op=True),
             dist.broadcast(big, src=0, async_op=True)]  # after the reduce-scatter read it
    for w in works:
        w.wait()
    want = [torch.empty_like(x) for _ in range(K)]
    dist.all_gather(want, x, group=gloo)
    for u, v in zip(gathered, want):
        same(u, v)
    same(flat, torch.cat(want))
    assert torch.equal(total, sum(want)) or K > 2
    b0 = data(torch.float32, n=6 * K, seed=9)
    dist.broadcast(b0, src=0, group=gloo)
    same(big, b0)
    assert shard.shape == (6,)


def model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def batch():
    g = torch.Generator().manual_seed(50 + RANK)
    return torch.randn(10, 8, generator=g), torch.randn(10, 3, generator=g)


def ddp_grads(process_group=None, hook_state=None, hook=None):
    from torch.nn.parallel import DistributedDataParallel as DDP
    m = DDP(model(), process_group=process_group, bucket_cap_mb=0.0005)  # several buckets
    if hook_state is not None:
        m.register_comm_hook(hook_state, hook or ring.torch.allreduce_hook)
    x, y = batch()
    torch.nn.functional.mse_loss(m(x), y).backward()
    return [p.grad.clone() for p in m.parameters()]


def local_grads():
    """This rank's own gradients: the model's, on its batch, without DDP."""
    single = model()
    x, y = batch()
    torch.nn.functional.mse_loss(single(x), y).backward()
    return [p.grad for p in single.parameters()]


def test_ddp_step_gives_gloos_gradients(gloo):
    ours, theirs = ddp_grads(), ddp_grads(gloo)
    for a, b, local in zip(ours, theirs, local_grads()):
        same_mean(a, b, local, gloo)
        assert not torch.equal(a, local) or K == 1  # the gradients were averaged


def test_ddp_hook_gives_gloos_gradients(gloo):
    with ring.Communicator(device="host", timeout=60) as comm:
        ours = ddp_grads(gloo, hook_state=comm)
    theirs = ddp_grads(gloo)
    for a, b, local in zip(ours, theirs, local_grads()):
        same_mean(a, b, local, gloo)


def micro_batches(n: int):
    g = torch.Generator().manual_seed(150 + RANK)
    return [(torch.randn(6, 8, generator=g), torch.randn(6, 3, generator=g)) for _ in range(n)]


def accumulated(m, steps: int, seen: list | None = None):
    """Gradient accumulation as DDP has it: the first steps - 1 micro-batches' backward
    passes under m.no_sync() (no communication), the last one's all-reduced. `seen`: the
    micro-batch at each hook call."""
    for s, (x, y) in enumerate(micro_batches(steps)):
        if seen is not None:
            seen.append(("micro-batch", s))
        with m.no_sync() if s < steps - 1 else contextlib.nullcontext():
            torch.nn.functional.mse_loss(m(x), y).backward()
    return [p.grad.clone() for p in m.parameters()]


def test_ddp_no_sync_on_the_hook_reduces_the_accumulated_gradients_once(gloo):
    """Gradient accumulation on ring's DDP hook: three micro-batches under DDP's no_sync()
    call no hook, the fourth calls it once per DDP bucket (counted) and all-reduces the
    accumulated gradients, as gloo's DDP does with the same no_sync()."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    seen = []

    def counting(comm, bucket):
        seen.append(("hook", bucket.index()))
        return ring.torch.allreduce_hook(comm, bucket)
    with ring.Communicator(device="host", timeout=60) as comm:
        m = DDP(model(), process_group=gloo, bucket_cap_mb=0.0005)
        m.register_comm_hook(comm, counting)
        ours = accumulated(m, 4, seen)
    theirs = accumulated(DDP(model(), process_group=gloo, bucket_cap_mb=0.0005), 4)
    single = model()  # this rank's own accumulated gradients, without DDP
    for x, y in micro_batches(4):
        torch.nn.functional.mse_loss(single(x), y).backward()  # .grad adds up
    local = [p.grad for p in single.parameters()]
    hooks = [i for i, (what, _) in enumerate(seen) if what == "hook"]
    assert hooks and min(hooks) > seen.index(("micro-batch", 3)), seen  # the last one only
    assert sorted(b for what, b in seen if what == "hook") == list(range(len(hooks)))
    for a, b, part in zip(ours, theirs, local):
        same_mean(a, b, part, gloo)


def everyones_bucket(gloo):
    """Every rank's own gradients (local_grads) as DDP's one bucket holds them (the
    parameters in reverse order), all-gathered over gloo, as NumPy arrays by rank; and the
    function that lays a flat gradient out so."""
    sizes = [g.numel() for g in local_grads()]

    def as_bucket(flat):
        return torch.cat(list(reversed(torch.split(flat, sizes)))).numpy()
    mine = torch.cat([g.reshape(-1) for g in local_grads()])
    everyone = [torch.empty_like(mine) for _ in range(K)]
    dist.all_gather(everyone, mine, group=gloo)
    return [as_bucket(e) for e in everyone], as_bucket


@pytest.mark.parametrize("density", [0.1, 1.0])
def test_topk_hook_averages_each_ranks_largest_gradients(gloo, density):
    """ring.torch.topk_hook: DDP's bucket gradients become the average of every rank's k
    largest (index, value) pairs, as tests/topk_reference.py computes them from every
    rank's own gradients (all-gathered over gloo); at density 1 the plain average."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ..topk_reference import TopKBucket
    with ring.Communicator(device="host", timeout=60) as comm:
        m = DDP(model(), process_group=gloo, bucket_cap_mb=1)  # one bucket
        state = ring.torch.TopKState(comm, density=density, error_feedback=False)
        m.register_comm_hook(state, ring.torch.topk_hook)
        x, y = batch()
        torch.nn.functional.mse_loss(m(x), y).backward()
        ours = [p.grad.clone() for p in m.parameters()]
    buckets, as_bucket = everyones_bucket(gloo)
    from ring.training.topk import k_of
    n = buckets[0].size
    ref = TopKBucket(n, K, k_of(n, density), False)
    want = ref.step(buckets, True)
    got = as_bucket(torch.cat([g.reshape(-1) for g in ours]))
    assert got.tobytes() == want.tobytes()


# the top-k hook's selection on the host, and on the GPU (a cuda Communicator: the CPU
# gradients copied over and back; under Numba's simulator without a GPU)
HOOK_DEVICES = ["host", pytest.param("cuda", marks=CUDA_OR_SIM)]


@pytest.mark.parametrize("device", HOOK_DEVICES)
@pytest.mark.parametrize("momentum,kind", [(0.0, "global"), (0.9, "global"), (0.9, "local")])
def test_topk_hook_carries_its_residual_and_momentum_across_steps(gloo, momentum, kind, device):
    """TopKState with error feedback, without and with momentum: over three backward
    passes (the same gradients each time), each step's bucket is tests/topk_reference.py's,
    the residual and velocity (or carry) carried from step to step, also across DDP's
    rebuild of its buckets after the first step (the parameters in another order: each
    one's state moves with it); a bad momentum_kind, or momentum without error feedback,
    is refused. The same bits with the selection on the GPU."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ring.training.topk import k_of

    from ..topk_reference import TopKBucket
    buckets, as_bucket = everyones_bucket(gloo)
    n = buckets[0].size
    ref = TopKBucket(n, K, k_of(n, 0.1), True, momentum, kind)
    with ring.Communicator(device=device, timeout=60) as comm:
        m = DDP(model(), process_group=gloo, bucket_cap_mb=1)  # one bucket
        state = ring.torch.TopKState(comm, density=0.1, momentum=momentum, momentum_kind=kind)
        m.register_comm_hook(state, ring.torch.topk_hook)
        x, y = batch()
        for step in range(3):
            m.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            want = ref.step(buckets, True)
            got = as_bucket(torch.cat([p.grad.reshape(-1) for p in m.parameters()]))
            assert got.tobytes() == want.tobytes(), step
        with pytest.raises(ValueError, match="momentum_kind"):
            ring.torch.TopKState(comm, momentum=0.9, momentum_kind="dgc")
        with pytest.raises(ValueError, match="error_feedback"):
            ring.torch.TopKState(comm, momentum=0.9, error_feedback=False)
        with pytest.raises(TypeError, match="error_feedback: expected True or False"):
            ring.torch.TopKState(comm, error_feedback="no")
        for density in (0, 1.5, "0.5", True):
            with pytest.raises(ValueError, match="density: 0 < density <= 1"):
                ring.torch.TopKState(comm, density=density)


@pytest.mark.parametrize("device", HOOK_DEVICES)
def test_topk_hook_loses_no_gradient_across_ddps_rebuild_of_many_buckets(gloo, device):
    """Several DDP buckets, rebuilt after the first step (parameters may change bucket):
    with error feedback nothing is lost, each parameter's residual kept with it (on the
    GPU too). After three steps of the same gradients, what was applied plus the ranks'
    mean residual is three times the mean gradient, parameter by parameter."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from ring.training.torch import _per_parameter
    with ring.Communicator(device=device, timeout=60) as comm:
        m = DDP(model(), process_group=gloo, bucket_cap_mb=0.0001)  # one per parameter
        state = ring.torch.TopKState(comm, density=0.3)
        layouts = []  # each step's buckets, as the hook saw them

        def hook(state, bucket):
            layouts[-1].append(tuple(id(p) for p in bucket.parameters()))
            return ring.torch.topk_hook(state, bucket)
        m.register_comm_hook(state, hook)
        x, y = batch()
        applied = [torch.zeros_like(p) for p in m.parameters()]
        for _ in range(3):
            layouts.append([])
            m.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            for a, p in zip(applied, m.parameters()):
                a += p.grad
        groups = [{frozenset(b) for b in step} for step in layouts]
        assert groups[1] != groups[0], layouts  # rebuilt: parameters changed buckets
        owed = _per_parameter(state.buckets)
        for a, p, g in zip(applied, m.parameters(), local_grads()):
            residual = torch.from_numpy(owed[id(p)]["residual"].copy()).reshape(p.shape)
            dist.all_reduce(residual, group=gloo)
            mean = g.clone()
            dist.all_reduce(mean, group=gloo)
            torch.testing.assert_close(a + residual / K, 3 * mean / K, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("wire", ["bf16", "fp16"])
def test_compress_hooks_give_torchs_gradients(gloo, wire):
    """ring's bf16 / fp16 hooks against torch's own over gloo (its compress hook, which
    torch's bf16 wrapper refuses off NCCL): the same rounding, the same bits at 2 ranks."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    wire_dtype = torch.bfloat16 if wire == "bf16" else torch.float16

    def theirs(state, bucket) -> torch.futures.Future[torch.Tensor]:
        return default_hooks._compress_hook(wire_dtype, state, bucket)
    with ring.Communicator(device="host", timeout=60) as comm:
        ours = ddp_grads(gloo, comm, getattr(ring.torch, f"allreduce_{wire}_hook"))
    from torch.nn.parallel import DistributedDataParallel as DDP
    m = DDP(model(), process_group=gloo, bucket_cap_mb=0.0005)
    m.register_comm_hook(gloo, theirs)
    x, y = batch()
    torch.nn.functional.mse_loss(m(x), y).backward()
    exact = ddp_grads(gloo)
    for a, b, e in zip(ours, [p.grad for p in m.parameters()], exact):
        if K <= 2:
            same(a, b)
        else:  # 16-bit sums in two orders: a few 16-bit roundings apart
            torch.testing.assert_close(a, b, rtol=0.05, atol=1e-3)
        assert not torch.equal(a, e)  # 16 bits on the wire: not float32's result
        torch.testing.assert_close(a, e, rtol=0.05, atol=1e-3)


class Bucket:
    """A stand-in for DDP's GradBucket (torch makes none in Python): one parameter's
    gradient, as a hook sees it."""

    def __init__(self, grads: torch.Tensor):
        self.grads, self.param = grads, torch.nn.Parameter(torch.zeros_like(grads))

    def buffer(self):
        return self.grads

    def index(self):
        return 0

    def is_last(self):
        return True

    def parameters(self):
        return [self.param]


HOOKS = ["allreduce", "allreduce_bf16", "allreduce_fp16", "topk"]


@pytest.mark.parametrize("name", HOOKS)
def test_hooks_on_the_host_run_behind_the_caller(gloo, name):
    """A hook over a host communicator returns before its call has run (ring's progress
    thread), so that DDP's backward pass goes on, and the future completes with the bucket
    reduced: rank 0's hook returns, and its future is not done, before any peer has called
    its own. At full density top-k is the plain average, so every hook's result is the
    mean of the ranks' buckets (16-bit hooks: within their wire's rounding)."""
    mine = torch.arange(1, 9, dtype=torch.float32) * (RANK + 1)
    want = torch.arange(1, 9, dtype=torch.float32) * (K + 1) / 2
    with ring.Communicator(device="host", timeout=60) as comm:
        state = ring.torch.TopKState(comm, density=1.0) if name == "topk" else comm
        hook = getattr(ring.torch, f"{name}_hook")
        bucket = Bucket(mine.clone())
        if RANK == 0:
            future = hook(state, bucket)
            assert not future.done()  # no peer has called yet: it cannot have run
            for q in range(1, K):
                W.send(None, dest=q, tag=79)
        else:
            W.recv(source=0, tag=79)
            future = hook(state, bucket)
        got = future.wait()
    assert got is bucket.grads
    same(got, want, exact=name in ("allreduce", "topk"))


@pytest.mark.parametrize("name", HOOKS)
def test_a_hooks_bad_call_is_raised_by_its_future_on_every_rank(gloo, name):
    """Buckets of different sizes on the ranks (rank 0's one value longer): every rank's
    future raises the call's MismatchError, from the progress thread, none hangs."""
    if K == 1:
        pytest.skip("one rank has no peer to differ from")
    with ring.Communicator(device="host", timeout=60) as comm:
        state = ring.torch.TopKState(comm, density=1.0) if name == "topk" else comm
        future = getattr(ring.torch, f"{name}_hook")(state, Bucket(torch.ones(8 + (RANK == 0))))
        with pytest.raises(MismatchError):
            future.wait()


def test_subgroup(gloo):
    """A group of every other rank: its own MPI sub-communicator, in torch's rank order."""
    members = list(range(0, K, 2))
    g = dist.new_group(members, backend="ring")
    x = data(torch.float64, seed=6)
    everyone = W.allgather(x.numpy())
    if RANK in members:
        dist.all_reduce(x, group=g)
        same(x, torch.as_tensor(sum(everyone[m] for m in members)), exact=len(members) <= 2)


BAD = {
    "op": (ValueError, lambda g, x: dist.all_reduce(x, op=RO.BAND if RANK == 0 else RO.SUM,
                                                    group=g)),
    "count": (MismatchError, lambda g, x: dist.all_reduce(torch.ones(4 + (RANK == K - 1)),
                                                          group=g)),
    "non-contiguous": (ValueError, lambda g, x: dist.all_reduce(
        torch.ones(4, 2).t() if RANK == 0 else torch.ones(8), group=g)),
}


@pytest.mark.parametrize("what", list(BAD))
def test_a_bad_call_raises_on_every_rank_and_breaks_the_group(gloo, what):
    """ring's agreement: every rank raises (the culprit its own error, the others a
    MismatchError naming it), and the group is broken from then on, as a Communicator."""
    exc, call = BAD[what]
    g = dist.new_group(backend="ring")
    with pytest.raises(ValueError) as info:
        call(g, torch.ones(4))
    assert isinstance(info.value, MismatchError if RANK != 0 else exc), repr(info.value)
    with pytest.raises(ring.CommunicatorError):
        dist.all_reduce(torch.ones(4), group=g)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_float8_is_carried_and_not_reduced(gloo, dtype):
    """CPU float8 tensors (through their bits, as ml_dtypes'): gathered and broadcast bit
    for bit (gloo has no float8: the bits through MPI are the reference); an all-reduce is
    refused on every rank, as ring refuses float8 arrays, and breaks that group only."""
    x = data(torch.float32, n=6, seed=7).to(dtype)
    bits = W.allgather(x.view(torch.uint8).numpy().copy())
    out = torch.empty(6 * K, dtype=dtype)
    dist.all_gather_into_tensor(out, x)
    assert out.view(torch.uint8).tolist() == [b for r in bits for b in r.tolist()]
    y = x.clone()
    dist.broadcast(y, src=K - 1)
    assert y.view(torch.uint8).tolist() == bits[K - 1].tolist()
    g = dist.new_group(backend="ring")
    with pytest.raises(TypeError, match=f"x: {dtype}".replace("torch.", "") + " is carried by "
                       "the collectives that only move data"):
        dist.all_reduce(x.clone(), group=g)


def test_a_dtype_numpy_lacks_on_one_rank_is_refused_on_every_rank(gloo):
    """A tensor of a dtype neither NumPy nor ring has (float8_e4m3fnuz) on rank 0 only: a
    TypeError naming it there, a MismatchError on the others (torch's own TypeError, raised
    before ring's agreement, left them waiting in the collective until the timeout)."""
    g = dist.new_group(backend="ring")
    x = torch.zeros(4, dtype=torch.float8_e4m3fnuz if RANK == 0 else torch.uint8)
    with pytest.raises((TypeError, ValueError)) as info:
        dist.broadcast(x, src=0, group=g)
    if RANK == 0:
        assert isinstance(info.value, TypeError) and "torch.float8_e4m3fnuz" in str(info.value)
    else:
        assert isinstance(info.value, MismatchError), repr(info.value)


def test_a_tensor_on_another_device_on_one_rank_is_refused_on_every_rank(gloo):
    """A meta tensor on rank 0 only: a TypeError there naming the device, a MismatchError on
    the others (the TypeError was rank 0's alone, before ring's agreement)."""
    g = dist.new_group(backend="ring")
    x = torch.empty(4, device="meta") if RANK == 0 else torch.ones(4)
    with pytest.raises((TypeError, ValueError)) as info:
        dist.all_reduce(x, group=g)
    if RANK == 0:
        assert isinstance(info.value, TypeError) and "tensors on meta are not supported" in \
            str(info.value), repr(info.value)
    else:
        assert isinstance(info.value, MismatchError), repr(info.value)


def test_wrong_lists_raise_on_every_rank_and_the_group_goes_on(gloo):
    """torch's argument lists, which ring's agreement does not see: checked on each rank
    and agreed on; the group stays usable, as gloo's does."""
    x = torch.ones(4)
    with pytest.raises(ValueError, match="tensor list must hold|another rank"):
        dist.all_gather([torch.empty(4)] * (K + (RANK == 0)), x)
    with pytest.raises(ValueError, match="equal splits|another rank"):
        dist.all_to_all_single(torch.empty(4 * K), torch.ones(4 * K),
                               [4 * K] + [0] * (K - 1) if RANK == 0 else None)
    with pytest.raises(ValueError, match=r"must be like the other argument \(4 x torch.float32"
                       r"\), got 3 x torch.float32|another rank"):
        dist.all_gather([torch.empty(3 if RANK == 0 else 4)] * K, x)
    y = x.clone()
    dist.all_reduce(y)
    same(y, torch.full((4,), float(K)))
