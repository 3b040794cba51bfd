"""A compiled module and its launch plan, ready to launch on a stream: :class:`Launcher`.

    launcher = Launcher.from_files("kernel.hsaco", "kernel.plan.json")
    launcher(q, k_cache, v_cache, block_table, seq_lens, out, stream=0)

One call evaluates the plan on the arguments' shapes (:mod:`pagedir.runtime.plan`), takes the
workspace given or allocates one, packs each kernel's arguments for its target and launches the
kernels in the plan's order on ``stream``; it returns when they are queued (no synchronisation,
no copy). With ``workspace=`` given (:meth:`Launcher.workspace_bytes` says how much a call needs)
nothing is allocated in the call, as a CUDA graph capture needs.

The target follows the artefact: an AMDGPU code object (hsaco) goes through the HIP module API,
a cubin or PTX through the CUDA driver API (:mod:`pagedir.runtime.drivers`). Arguments, for both:
one bare pointer per memref, then the i64 sizes of a dynamic kernel (``size_arguments``), as
``rock-backend-pipeline`` lowers the kernel signature (``use-bare-ptr-memref-call-conv`` and
:mod:`pagedir.backend.dynamic_abi`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pagedir.runtime import arrays, codeobject, drivers, plan as plans


class LaunchError(ValueError):
    """Arguments a launch cannot take (their shapes, dtypes, devices, the workspace given)."""


def target_of(artefact: bytes) -> str:
    """"hip" for an AMDGPU code object, "cuda" for a cubin (an NVIDIA ELF) or PTX text."""
    if artefact[:4] == b"\x7fELF":
        machine = int.from_bytes(artefact[18:20], "little")
        if machine == codeobject.EM_AMDGPU:
            return "hip"
        if machine == 190:  # EM_CUDA
            return "cuda"
        raise LaunchError(f"an ELF file for machine {machine}: neither an AMDGPU code object nor a cubin")
    if b".target" in artefact[:4096] or b".version" in artefact[:4096]:
        return "cuda"  # PTX
    raise LaunchError("the artefact is neither an AMDGPU code object, a cubin nor PTX")


def ptx_entries(ptx: str) -> dict[str, list[int]]:
    """Each ``.entry`` of PTX text and the bytes of its parameters (``.param .u64 ...``: 8)."""
    found = {}
    for match in re.finditer(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\((.*?)\)", ptx, re.S):
        found[match.group(1)] = [int(bits) // 8 for bits in re.findall(r"\.param\s+\.[usbf](\d+)", match.group(2))]
    return found


class Launcher:
    """Launches the kernels of one module (see the module docstring)."""

    def __init__(self, artefact: bytes | str, plan: str | bytes | dict, *, names: list[str] | None = None,
                 library: str | None = None, api: Any = None):
        self.artefact = artefact.encode() if isinstance(artefact, str) else bytes(artefact)
        self.plan = plans.load(plan)
        self.target = target_of(self.artefact)
        self.names = names
        self.arguments = plans.user_arguments(self.plan)
        if names is not None and len(names) != len(self.arguments):
            raise LaunchError(f"{len(names)} names given for the {len(self.arguments)} arguments of the kernels")
        self.metadata = codeobject.read(self.artefact) if self.target == "hip" else None
        if self.metadata is not None:
            self._check_metadata()
        elif self.artefact[:4] != b"\x7fELF":
            self._check_ptx()
        self._api = api
        self._library = library
        self._functions: dict[str, Any] = {}
        self._workspace: tuple[int, int] | None = None  # (pointer, bytes) of a workspace allocated here
        self._plans: dict[tuple, plans.CallPlan] = {}  # by the arguments' shapes

    @classmethod
    def from_files(cls, artefact_path: str, plan_path: str, **options: Any) -> "Launcher":
        with open(artefact_path, "rb") as handle:
            artefact = handle.read()
        with open(plan_path, encoding="utf-8") as handle:
            plan = json.load(handle)
        return cls(artefact, plan, **options)

    def _check_metadata(self) -> None:
        """The code object's kernels as the plan states them: explicit arguments, block, static LDS."""
        for kernel in self.plan["kernels"]:
            found = self.metadata.kernels.get(kernel["symbol"])
            if found is None:
                raise LaunchError(f"the code object has no kernel @{kernel['symbol']} (the plan's)")
            wanted = len(kernel["arguments"]) + len(kernel["size_arguments"])
            if len(found.explicit) != wanted or any(a.size != 8 for a in found.explicit):
                raise LaunchError(f"@{kernel['symbol']}: the code object has {len(found.explicit)} explicit arguments "
                                  f"({[a.size for a in found.explicit]} bytes), the plan {wanted} of 8 bytes")
            if found.group_segment_fixed_size != kernel["lds_bytes"]:
                raise LaunchError(f"@{kernel['symbol']}: {found.group_segment_fixed_size} bytes of LDS in the code "
                                  f"object, {kernel['lds_bytes']} in the plan")

    def _check_ptx(self) -> None:
        """The PTX entries' parameters as the plan states them: one 8-byte parameter per pointer and size.
        (A cubin's parameter table is not read: the driver takes the values as they come.)"""
        entries = ptx_entries(self.artefact.decode("utf-8", "replace"))
        for kernel in self.plan["kernels"]:
            found = entries.get(kernel["symbol"])
            if found is None:
                raise LaunchError(f"the PTX has no entry {kernel['symbol']} (the plan's)")
            wanted = len(kernel["arguments"]) + len(kernel["size_arguments"])
            if len(found) != wanted or any(size != 8 for size in found):
                raise LaunchError(f"{kernel['symbol']}: the PTX entry takes {len(found)} parameters ({found} bytes), "
                                  f"the plan {wanted} of 8 bytes")

    # ------------------------------------------------------------------ the API, loaded on first launch
    def api(self) -> Any:
        if self._api is None:
            self._api = drivers.Hip(self._library) if self.target == "hip" else drivers.Cuda(self._library)
        if not self._functions:
            module = self._api.load(self.artefact)
            self._module = module
            self._functions = {k["symbol"]: self._api.function(module, k["symbol"]) for k in self.plan["kernels"]}
        return self._api

    # ------------------------------------------------------------------ plan evaluation
    def describe(self, args: list[Any]) -> list[arrays.DeviceArray]:
        if len(args) != len(self.arguments):
            raise LaunchError(f"the kernels take {len(self.arguments)} arguments "
                              f"({', '.join(self._name(i) for i in range(len(self.arguments)))}), got {len(args)}")
        found = []
        for position, (value, argument) in enumerate(zip(args, self.arguments)):
            array = arrays.describe(value, self._name(position))
            if array.device == "cpu":
                raise LaunchError(f"{self._name(position)}: a host array; the kernels read device memory "
                                  "(PagedAttention runs host arrays on the interpreter)")
            if array.dtype is not None and array.dtype != argument["dtype"]:
                raise LaunchError(f"{self._name(position)}: dtype {array.dtype}, the kernel takes {argument['dtype']}")
            found.append(array)
        return found

    def _name(self, position: int) -> str:
        return self.names[position] if self.names else f"argument {position}"

    def call_plan(self, shapes: list[tuple[int, ...]]) -> plans.CallPlan:
        key = tuple(tuple(shape) for shape in shapes)
        found = self._plans.get(key)
        if found is None:
            try:
                found = plans.call_plan(self.plan, list(key), self.names)
            except plans.PlanError as err:
                raise LaunchError(str(err)) from None
            if len(self._plans) >= plans.MEMO_SIZE:
                self._plans.clear()
            self._plans[key] = found
        return found

    def workspace_bytes(self, *args: Any) -> int:
        """The workspace bytes a call on ``args`` (arrays, or their shapes as tuples) needs (0: none)."""
        shapes = [tuple(a) if isinstance(a, (tuple, list)) else arrays.describe(a).shape for a in args]
        return self.call_plan(shapes).workspace_bytes

    # ------------------------------------------------------------------ launching
    def __call__(self, *args: Any, workspace: Any = None, stream: int = 0) -> plans.CallPlan:
        """Launch the kernels on ``args`` (the user arguments, in the kernels' order) on ``stream``;
        returns the evaluated plan (grids, sizes, workspace)."""
        described = self.describe(list(args))
        plan = self.call_plan([a.shape for a in described])
        pointers = [a.pointer for a in described]
        if plan.workspace_argument is not None:
            pointers.insert(plan.workspace_argument, self._workspace_pointer(workspace, plan))
        api = self.api()
        for launch in plan.launches:
            values = pointers + list(launch.sizes)
            segment = None
            if self.metadata is not None:
                segment = codeobject.kernarg_segment(self.metadata.kernels[launch.symbol], values, launch.grid, launch.block)
            api.launch(self._functions[launch.symbol], launch.grid, launch.block, 0, int(stream), values, segment)
        return plan

    def _workspace_pointer(self, workspace: Any, plan: plans.CallPlan) -> int:
        if workspace is not None:
            given = arrays.describe(workspace, "workspace")
            size = _nbytes(given)
            if size < plan.workspace_bytes:
                raise LaunchError(f"workspace: {size} bytes given, this call needs {plan.workspace_bytes}")
            return given.pointer
        if plan.workspace_bytes == 0:
            return 0
        if self._workspace is None or self._workspace[1] < plan.workspace_bytes:
            # Kept for the next calls: on one stream the kernels of two calls never overlap (calls on
            # several streams must each pass a workspace of their own). A smaller one is freed first:
            # cuMemFree/hipFree wait for the device, the one synchronisation a call can cause, only
            # when it needs more workspace than any call before (workspace= avoids it).
            self.close()
            self._workspace = (self.api().alloc(plan.workspace_bytes), plan.workspace_bytes)
        return self._workspace[0]

    def close(self) -> None:
        """Free the workspace this launcher allocated (none when every call passed one)."""
        if self._workspace is not None:
            self.api().free(self._workspace[0])
            self._workspace = None


def _nbytes(array: arrays.DeviceArray) -> int:
    count = 1
    for extent in array.shape:
        count *= extent
    return count * plans.DTYPE_BYTES.get(array.dtype or "i8", 1)
