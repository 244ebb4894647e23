"""kernels/vector.py's GPU half, its lanes: the LLVM IR that cuts a 16-byte vector's four
32-bit words into lanes of 1, 2, 4 or 8 bytes (load16) and packs lanes into the words
(store16), and the test of an address for 16-byte alignment (aligned16), compiled for this
CPU by llvmlite and run on NumPy buffers. On a GPU NVVM compiles the same IR
(tools/compile_kernels.py checks that the PTX moves v4.u32 vectors); under the simulator
load16 and store16 are NumPy views, so without this test a lane taken from the wrong word or
the wrong bits would show on a GPU only. Both the host and the GPU are little-endian, so a
vector's lane u is the u-th element of NumPy's view of its 16 bytes."""

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from kernels import vector

# NumPy's dtype: the LLVM type Numba's CUDA target gives a local array's element of it
# (the lanes), written out: that target is not importable under the simulator, and the
# CPU target's data models, which are, have no float16
LANES = {"int8": ir.IntType(8), "uint8": ir.IntType(8), "int16": ir.IntType(16),
         "uint16": ir.IntType(16), "float16": ir.HalfType(), "int32": ir.IntType(32),
         "uint32": ir.IntType(32), "float32": ir.FloatType(), "int64": ir.IntType(64),
         "uint64": ir.IntType(64), "float64": ir.DoubleType()}
I8P, I64 = ir.IntType(8).as_pointer(), ir.IntType(64)
BUFFERS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def _functions(module: ir.Module, name: str, elem) -> None:
    """unpack_<name>(src, dst): dst[u] = lane u of the 16 bytes at src, for every lane;
    pack_<name>(src, dst): the 16 bytes at dst = the words of the lanes src[0 .. L)."""
    bits = np.dtype(name).itemsize * 8
    n = vector.BYTES * 8 // bits
    for kind in ("unpack", "pack"):
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, I8P]), f"{kind}_{name}")
        b = ir.IRBuilder(fn.append_basic_block())
        src, dst = fn.args
        if kind == "unpack":
            words = b.load(b.bitcast(src, vector.WORDS.as_pointer()), align=vector.BYTES)
            lanes = b.bitcast(dst, elem.as_pointer())
            for u in range(n):
                b.store(vector._unpack(b, words, elem, bits, u),
                        b.gep(lanes, [ir.Constant(I64, u)]))
        else:
            lanes = b.bitcast(src, elem.as_pointer())
            values = [b.load(b.gep(lanes, [ir.Constant(I64, u)])) for u in range(n)]
            b.store(vector._pack(b, values, elem, bits),
                    b.bitcast(dst, vector.WORDS.as_pointer()), align=vector.BYTES)
        b.ret_void()


@pytest.fixture(scope="module")
def compiled():
    """The functions above for every lane type, and aligned(at) -> 0 / 1, compiled for this
    CPU (MCJIT); the engine lives as long as the module's tests."""
    module = ir.Module(name="vector_lanes")
    module.triple = llvm.get_process_triple()
    for name, elem in LANES.items():
        _functions(module, name, elem)
    fn = ir.Function(module, ir.FunctionType(ir.IntType(8), [I64]), "aligned")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(b.zext(vector._multiple_of_16(b, fn.args[0]), ir.IntType(8)))
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    machine = llvm.Target.from_triple(module.triple).create_target_machine()
    engine = llvm.create_mcjit_compiler(parsed, machine)
    engine.finalize_object()
    funcs = {(kind, name): BUFFERS(engine.get_function_address(f"{kind}_{name}"))
             for name in LANES for kind in ("unpack", "pack")}
    funcs["aligned"] = ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_uint64)(
        engine.get_function_address("aligned"))
    yield funcs
    del engine


def _aligned_bytes(values: np.ndarray) -> np.ndarray:
    """A copy of 16 bytes whose address is a multiple of 16 (the vector load's align)."""
    room = np.zeros(2 * vector.BYTES, np.uint8)
    out = room[(-room.ctypes.data) % vector.BYTES:][:vector.BYTES]
    out[:] = values.view(np.uint8)
    return out


@pytest.mark.parametrize("name", list(LANES))
@pytest.mark.parametrize("seed", range(4))
def test_a_vectors_lanes_are_numpys_elements_of_its_bytes(compiled, name, seed):
    """load16's lanes: lane u holds bytes [u w, (u + 1) w) of the vector, as NumPy's view
    of those bytes as the lanes' dtype has them (random bytes: NaN patterns included)."""
    dtype = np.dtype(name)
    raw = _aligned_bytes(np.random.default_rng([seed, dtype.num]).integers(
        0, 256, vector.BYTES, dtype=np.uint8))
    got = np.full(vector.lanes(dtype), 0x5A, np.uint8).repeat(dtype.itemsize).view(dtype)
    compiled["unpack", name](raw.ctypes.data, got.ctypes.data)
    assert got.view(np.uint8).tolist() == raw.tolist(), (name, seed)


@pytest.mark.parametrize("name", list(LANES))
@pytest.mark.parametrize("seed", range(4))
def test_lanes_packed_are_their_bytes_in_order(compiled, name, seed):
    """store16's words: the lanes' bytes one after the other, as NumPy lays the lanes out;
    and a vector unpacked and packed again is the vector it was."""
    dtype = np.dtype(name)
    lanes = np.random.default_rng([seed, dtype.num, 1]).integers(
        0, 256, vector.BYTES, dtype=np.uint8).view(dtype).copy()
    out = _aligned_bytes(np.full(vector.BYTES, 0xA5, np.uint8))
    compiled["pack", name](lanes.ctypes.data, out.ctypes.data)
    assert out.tolist() == lanes.view(np.uint8).tolist(), (name, seed)
    back = np.zeros_like(lanes)
    compiled["unpack", name](out.ctypes.data, back.ctypes.data)
    assert back.view(np.uint8).tolist() == out.tolist()


def test_aligned16_asks_for_a_multiple_of_16(compiled):
    """The kernel's test of an element's address: a multiple of 16, nothing less."""
    addresses = list(range(0, 80)) + [(1 << 40) + d for d in (0, 1, 4, 8, 15, 16, 24, 32)]
    got = [bool(compiled["aligned"](a)) for a in addresses]
    assert got == [a % 16 == 0 for a in addresses]
