"""GGUF v3 reading and writing for the k3-tiny tools (PyTorch side of k3cpp).

Only what the training scripts need: every metadata value type, and tensors stored as F32 or F16
(the reader also hands back the raw bytes of any other type, undecoded). The container layout
(header, key/value section, tensor infos, 32-byte aligned data) is described in
docs/quant-formats.md and docs/gguf-info-json.md; k3's own reader (src/gguf/parser.cpp) is the
one that checks files strictly, this one trusts files it wrote or the shipped golden models.

Tensor shapes here are numpy/PyTorch shapes, i.e. the GGUF `ne` list reversed: a weight with
ne = [IN, OUT] is an (OUT, IN) array, exactly an nn.Linear weight.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

GGUF_MAGIC = b"GGUF"
ALIGNMENT = 32

# Metadata value types (ggml's GGUF format, gguf_type).
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 = range(13)
_SCALAR = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
           T_F32: "<f", T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}

# ggml tensor types this module decodes.
GGML_F32, GGML_F16 = 0, 1
_NP_DTYPE = {GGML_F32: np.float32, GGML_F16: np.float16}


@dataclass
class Typed:
    """A metadata value with an explicit GGUF type (ints and floats are ambiguous in Python)."""
    type: int
    value: object
    elem_type: int | None = None  # for arrays


def u32(v): return Typed(T_U32, int(v))
def i32(v): return Typed(T_I32, int(v))
def f32(v): return Typed(T_F32, float(v))
def boolean(v): return Typed(T_BOOL, bool(v))
def string(v): return Typed(T_STRING, str(v))
def arr(elem_type, values): return Typed(T_ARRAY, list(values), elem_type)


@dataclass
class TensorInfo:
    name: str
    ne: list[int]
    type: int
    offset: int


@dataclass
class GGUFFile:
    kv: dict = field(default_factory=dict)       # key -> python value
    kv_types: dict = field(default_factory=dict)  # key -> GGUF type
    tensors: dict = field(default_factory=dict)  # name -> TensorInfo
    data: memoryview | None = None
    data_start: int = 0

    def tensor(self, name: str) -> np.ndarray:
        """The tensor as a numpy array of shape reversed(ne); F32/F16 only."""
        ti = self.tensors[name]
        if ti.type not in _NP_DTYPE:
            raise ValueError(f"tensor {name}: ggml type {ti.type} is not F32/F16")
        n = int(np.prod(ti.ne))
        dt = _NP_DTYPE[ti.type]
        start = self.data_start + ti.offset
        a = np.frombuffer(self.data, dtype=dt, count=n, offset=start)
        return a.reshape(list(reversed(ti.ne)))


class _Reader:
    def __init__(self, buf: memoryview):
        self.buf, self.pos = buf, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self) -> str:
        n = self.take("<Q")
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def value(self, t: int):
        if t in _SCALAR:
            return self.take(_SCALAR[t])
        if t == T_STRING:
            return self.string()
        if t == T_ARRAY:
            et = self.take("<I")
            n = self.take("<Q")
            return [self.value(et) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")


def read_gguf(path: str) -> GGUFFile:
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    r = _Reader(buf)
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    r.pos = 4
    version = r.take("<I")
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, expected 3")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    g = GGUFFile()
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        g.kv_types[key] = t
        g.kv[key] = r.value(t)
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]
        t = r.take("<I")
        off = r.take("<Q")
        g.tensors[name] = TensorInfo(name, ne, t, off)
    align = int(g.kv.get("general.alignment", ALIGNMENT))
    g.data_start = (r.pos + align - 1) // align * align
    g.data = buf
    return g


def _pack_value(t: int, v, elem_type=None) -> bytes:
    if t in _SCALAR:
        return struct.pack(_SCALAR[t], v)
    if t == T_STRING:
        b = v.encode("utf-8")
        return struct.pack("<Q", len(b)) + b
    if t == T_ARRAY:
        out = [struct.pack("<IQ", elem_type, len(v))]
        if elem_type in _SCALAR:
            out.append(np.asarray(v, dtype=np.dtype(_SCALAR[elem_type])).tobytes())
        else:
            out.extend(_pack_value(elem_type, x) for x in v)
        return b"".join(out)
    raise ValueError(f"cannot write GGUF value type {t}")


def _as_typed(v) -> Typed:
    if isinstance(v, Typed):
        return v
    if isinstance(v, bool):
        return boolean(v)
    if isinstance(v, str):
        return string(v)
    raise TypeError(f"give ints/floats an explicit type (u32/f32/...): {v!r}")


def write_gguf(path: str, kv: dict, tensors: list[tuple[str, np.ndarray]]) -> None:
    """Writes a GGUF v3 file (tmp file + rename, so a crash never leaves a partial file).

    `kv` maps keys to Typed values (or str/bool); `tensors` is an ordered list of (name, array)
    with arrays of dtype float32 or float16, in numpy shape order (ne reversed)."""
    header = [GGUF_MAGIC, struct.pack("<IQQ", 3, len(tensors), len(kv))]
    for key, v in kv.items():
        tv = _as_typed(v)
        header.append(_pack_value(T_STRING, key))
        header.append(struct.pack("<I", tv.type))
        header.append(_pack_value(tv.type, tv.value, tv.elem_type))
    offset = 0
    blobs = []
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        if a.dtype == np.float32:
            t = GGML_F32
        elif a.dtype == np.float16:
            t = GGML_F16
        else:
            raise TypeError(f"tensor {name}: dtype {a.dtype} (write float32 or float16)")
        ne = list(reversed(a.shape))
        header.append(_pack_value(T_STRING, name))
        header.append(struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne))
        header.append(struct.pack("<IQ", t, offset))
        b = a.tobytes()
        pad = (-len(b)) % ALIGNMENT
        blobs.append(b + b"\0" * pad)
        offset += len(b) + pad
    head = b"".join(header)
    head += b"\0" * ((-len(head)) % ALIGNMENT)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
