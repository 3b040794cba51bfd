"""Device arrays as the runtime reads them: a pointer, a shape, an element type; never a copy.

Accepted: torch tensors (``data_ptr``), anything with ``__cuda_array_interface__`` (CuPy, Numba,
JAX on CUDA, ...) and anything with ``__dlpack__`` (read through the ``DLManagedTensor`` the
capsule holds, without consuming it). The kernels read their memrefs row-major from offset 0,
so an array must be contiguous (C order); a strided view is refused rather than copied.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

#: The plan's element types by the names each protocol uses.
TORCH_DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int32": "i32",
                "int64": "i64", "int8": "i8", "uint8": "i8", "bool": "i1", "float8_e4m3fnuz": "f8E4M3FNUZ",
                "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2"}
#: ``__cuda_array_interface__`` typestr (numpy's array-interface codes); bf16 has none.
TYPESTRS = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "<i4": "i32", "<i8": "i64", "|i1": "i8", "|u1": "i8", "|b1": "i1"}
#: DLPack (code, bits) -> plan element type (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6).
DLPACK_DTYPES = {(2, 16): "f16", (4, 16): "bf16", (2, 32): "f32", (2, 64): "f64", (0, 32): "i32", (0, 64): "i64",
                 (0, 8): "i8", (1, 8): "i8", (6, 8): "i1"}
#: DLPack device types: kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLROCM 10.
DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cpu", 10: "rocm", 13: "cuda"}


class ArrayError(TypeError):
    """An argument the runtime cannot pass without a copy: not a device array, strided, another dtype."""


@dataclass(frozen=True)
class DeviceArray:
    """What a launch needs of an array."""

    pointer: int
    shape: tuple[int, ...]
    dtype: str | None  # None: the protocol cannot name it (a dtype this runtime does not know)
    device: str  # "cpu", "cuda", "rocm"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return tuple(strides)


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    """Row-major, ignoring the strides of dims of extent 1 (their stride never moves)."""
    if strides is None:
        return True
    return all(extent == 1 or s == r for extent, s, r in zip(shape, strides, row_major(shape)))


def describe(value: Any, name: str = "argument") -> DeviceArray:
    """The pointer, shape and dtype of ``value`` (torch, ``__cuda_array_interface__`` or DLPack)."""
    if _is_torch(value):
        shape = tuple(int(e) for e in value.shape)
        if not _contiguous(shape, tuple(value.stride())):
            raise ArrayError(f"{name}: a strided tensor (strides {tuple(value.stride())} for shape {shape}); the kernels "
                             "read row-major memory: pass .contiguous()")
        dtype = TORCH_DTYPES.get(str(value.dtype).replace("torch.", ""))
        device = value.device.type
        if device == "cuda" and getattr(getattr(sys.modules.get("torch"), "version", None), "hip", None):
            device = "rocm"  # torch on ROCm names its GPUs cuda
        return DeviceArray(int(value.data_ptr()), shape, dtype, device)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        shape = tuple(int(e) for e in interface["shape"])
        strides = interface.get("strides")
        itemsize = int(interface["typestr"][2:])
        if strides is not None and not _contiguous(shape, tuple(s // itemsize for s in strides)):
            raise ArrayError(f"{name}: a strided array (byte strides {tuple(strides)} for shape {shape}); the kernels "
                             "read row-major memory")
        return DeviceArray(int(interface["data"][0]), shape, TYPESTRS.get(interface["typestr"]), "cuda")
    if hasattr(value, "__dlpack__"):
        return _from_dlpack(value, name)
    raise ArrayError(f"{name}: {type(value).__name__} is not a device array (a torch tensor, or an object with "
                     "__cuda_array_interface__ or __dlpack__)")


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


def _from_dlpack(value: Any, name: str) -> DeviceArray:
    capsule = value.__dlpack__()
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    # A DLManagedTensor starts with its DLTensor. The capsule is not renamed "used_dltensor": when it
    # is collected its deleter runs, and the producer (which the caller still holds) keeps the data.
    tensor = _DLTensor.from_address(get_pointer(capsule, b"dltensor"))
    shape = tuple(int(tensor.shape[d]) for d in range(tensor.ndim))
    strides = tuple(int(tensor.strides[d]) for d in range(tensor.ndim)) if tensor.strides else None
    if not _contiguous(shape, strides):
        raise ArrayError(f"{name}: a strided array (strides {strides} for shape {shape}); the kernels read row-major memory")
    dtype = DLPACK_DTYPES.get((tensor.dtype.code, tensor.dtype.bits)) if tensor.dtype.lanes == 1 else None
    device = DLPACK_DEVICES.get(tensor.device.device_type, f"dlpack device {tensor.device.device_type}")
    return DeviceArray(int(tensor.data or 0) + int(tensor.byte_offset), shape, dtype, device)
