python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export PATH=/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c "import sys; print(sys.version)"
python3 -m pip list 2>/dev/null | grep -iE "numba|cupy|mpi|cuda|nccl|ml.dtypes|numpy|pytest|hypothesis"
which mpiexec; python3 -c "from mpi4py import MPI; print(MPI.Get_library_version()[:40]); import mpi4py; print(mpi4py.get_config())"
python3 - <<'PY'
import cupy as cp, time
from cupy.cuda import nccl
print("nccl", nccl.get_version(), "cupy", cp.__version__, "cuda rt", cp.cuda.runtime.runtimeGetVersion(), "drv", cp.cuda.runtime.driverGetVersion())
from numba import cuda
import numba, numpy as np
print("numba", numba.__version__, cuda.get_current_device().name, cuda.get_current_device().compute_capability)
from numba.cuda import fp16
print("has bf16", hasattr(cuda, "bf16"))
try:
    from numba.cuda import bf16
    print([n for n in dir(bf16) if not n.startswith("_")][:60])
except Exception as e: print("bf16 import", e)
@cuda.jit("void(float16[:], float16[:])")
def addh(a,b):
    i=cuda.grid(1)
    if i<a.size: a[i]=a[i]+b[i]
a=cuda.to_device(np.ones(100,np.float16)); addh[1,128](a,a); print("fp16 add", a.copy_to_host()[:3])
n=256*2**20//4
x=cp.ones(n,cp.float32); y=cp.empty_like(x)
for _ in range(3): y[...] = x
cp.cuda.Device().synchronize()
e0,e1=cp.cuda.Event(),cp.cuda.Event(); e0.record()
for _ in range(20): cp.copyto(y,x)
e1.record(); e1.synchronize(); t=cp.cuda.get_elapsed_time(e0,e1)/20
print("d2d copy 256MB: %.3f ms, %.0f GB/s (r+w)"%(t, 2*n*4/t/1e6))
PY
