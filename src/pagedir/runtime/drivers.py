"""The two module APIs the runtime launches through, by ctypes (no binding package needed).

* CUDA driver API (``libcuda.so.1``): ``cuModuleLoadData`` (a cubin, or PTX that the driver
  JIT-compiles), ``cuModuleGetFunction``, ``cuLaunchKernel`` with ``kernelParams``: one pointer
  per argument to its value (a bare pointer or an i64 size: 8 bytes each).
* HIP module API (``libamdhip64.so``): ``hipModuleLoadData`` (a code object), ``hipModuleGetFunction``,
  ``hipModuleLaunchKernel`` with ``extra = {HIP_LAUNCH_PARAM_BUFFER_POINTER, buffer,
  HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}``: the kernarg segment laid out as
  the code object's metadata says (:mod:`pagedir.runtime.codeobject`).

Both launch on the stream given (a ``CUstream``/``hipStream_t`` as an int; 0 is the legacy default
stream), pass 0 bytes of dynamic shared memory (the kernels' LDS is static, in the module), and
return at once: no synchronisation. The library path can be replaced (``PAGEDIR_CUDA_LIBRARY``,
``PAGEDIR_HIP_LIBRARY``, or ``library=``): the tests load a stub HIP library that records launches.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

#: ``extra`` markers of hipModuleLaunchKernel (hip_runtime_api.h: HIP_LAUNCH_PARAM_*).
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03


class DriverError(RuntimeError):
    """A driver call failed (its name and error string), or the library is not there."""


class _Api:
    """A loaded driver library, its calls checked."""

    prefix = ""
    library_names: tuple[str, ...] = ()
    environment = ""

    def __init__(self, library: str | None = None):
        names = [library] if library else ([os.environ[self.environment]] if os.environ.get(self.environment)
                                           else list(self.library_names))
        self.lib, errors = None, []
        for name in names:
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError as err:
                errors.append(str(err))
        if self.lib is None:
            raise DriverError(f"cannot load the {self.prefix} driver library ({'; '.join(errors)})")
        self.path = names[len(errors)]

    def call(self, name: str, *args: Any) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise DriverError(f"{name} failed: {self.error_string(status)} ({status})")

    def error_string(self, status: int) -> str:
        return "unknown error"


class Cuda(_Api):
    prefix = "CUDA"
    library_names = ("libcuda.so.1", "libcuda.so")
    environment = "PAGEDIR_CUDA_LIBRARY"

    def __init__(self, library: str | None = None):
        super().__init__(library)
        self.call("cuInit", ctypes.c_uint(0))
        context = ctypes.c_void_p()
        # The current context (torch's primary context once torch touched the GPU); else the primary
        # context of device 0, made current.
        self.call("cuCtxGetCurrent", ctypes.byref(context))
        if not context.value:
            device = ctypes.c_int()
            self.call("cuDeviceGet", ctypes.byref(device), 0)
            self.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
            self.call("cuCtxSetCurrent", context)

    def error_string(self, status: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuGetErrorString(status, ctypes.byref(text)) == 0 and text.value:
            return text.value.decode()
        return "unknown error"

    def load(self, image: bytes) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        # PTX must end with a NUL; a cubin is read by its ELF header.
        buffer = ctypes.create_string_buffer(image if image[:4] == b"\x7fELF" else image.rstrip(b"\0") + b"\0")
        self.call("cuModuleLoadData", ctypes.byref(module), buffer)
        return module

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(handle), module, name.encode())
        return handle

    def launch(self, function: ctypes.c_void_p, grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_bytes: int, stream: int, values: list[int], segment: bytes | None = None) -> None:
        held = (ctypes.c_uint64 * max(1, len(values)))(*[v & (1 << 64) - 1 for v in values])
        params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(held) + 8 * i for i in range(len(values))])
        self.call("cuLaunchKernel", function, *(ctypes.c_uint(g) for g in grid), *(ctypes.c_uint(b) for b in block),
                  ctypes.c_uint(shared_bytes), ctypes.c_void_p(stream), params, None)

    def alloc(self, size: int) -> int:
        pointer = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(max(1, size)))
        return pointer.value

    def free(self, pointer: int) -> None:
        self.call("cuMemFree_v2", ctypes.c_uint64(pointer))


class Hip(_Api):
    prefix = "HIP"
    library_names = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7", "/opt/rocm/lib/libamdhip64.so")
    environment = "PAGEDIR_HIP_LIBRARY"

    def __init__(self, library: str | None = None):
        super().__init__(library)
        self.call("hipInit", ctypes.c_uint(0))

    def error_string(self, status: int) -> str:
        self.lib.hipGetErrorString.restype = ctypes.c_char_p
        text = self.lib.hipGetErrorString(status)
        return text.decode() if text else "unknown error"

    def load(self, image: bytes) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        self._image = ctypes.create_string_buffer(image, len(image))  # kept alive with the module
        self.call("hipModuleLoadData", ctypes.byref(module), self._image)
        return module

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self.call("hipModuleGetFunction", ctypes.byref(handle), module, name.encode())
        return handle

    def launch(self, function: ctypes.c_void_p, grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_bytes: int, stream: int, values: list[int], segment: bytes | None = None) -> None:
        buffer = ctypes.create_string_buffer(segment, len(segment))
        size = ctypes.c_size_t(len(segment))
        extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(buffer),
                                      HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size), HIP_LAUNCH_PARAM_END)
        self.call("hipModuleLaunchKernel", function, *(ctypes.c_uint(g) for g in grid), *(ctypes.c_uint(b) for b in block),
                  ctypes.c_uint(shared_bytes), ctypes.c_void_p(stream), None, extra)

    def alloc(self, size: int) -> int:
        pointer = ctypes.c_void_p()
        self.call("hipMalloc", ctypes.byref(pointer), ctypes.c_size_t(max(1, size)))
        return pointer.value or 0

    def free(self, pointer: int) -> None:
        self.call("hipFree", ctypes.c_void_p(pointer))
