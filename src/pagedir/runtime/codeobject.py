"""The AMDGPU code object's kernel-argument layout, and the kernarg segment a launch passes.

LLVM writes the layout into the code object (``NT_AMDGPU_METADATA``, a msgpack map, in the
``.note`` section; llvm.org/docs/AMDGPUUsage.html, "Code Object V3 to V6 Metadata"): per kernel its
``.args`` (``.offset``, ``.size``, ``.value_kind``), ``.kernarg_segment_size`` and ``_align``,
``.group_segment_fixed_size`` (static LDS). The explicit arguments are pagedir's bare pointers
(``global_buffer``, 8 bytes) and the i64 sizes of a dynamic kernel (``by_value``, 8 bytes), in
the kernel's order; hidden arguments (``hidden_*``) come after them, where the kernel uses them.
The code-object version is the ELF header's ``EI_ABIVERSION`` (``ELFABIVERSION_AMDGPU_HSA_V5`` = 3,
``_V6`` = 4: LLVM 22 writes v6, whose hidden arguments are v5's).

:func:`kernarg_segment` writes the segment at the offsets the metadata gives: each explicit
argument little-endian in its ``.size``, and the hidden arguments a launcher knows the values of
(v5: ``hidden_block_count_x/y/z`` u32, ``hidden_group_size_x/y/z`` u16, ``hidden_remainder_x/y/z``
u16, ``hidden_grid_dims`` u16, ``hidden_global_offset_*`` 0, ``hidden_dynamic_lds_size`` u32); the
pointers only the HSA runtime owns (queue, hostcall buffer, heap, ...) stay 0, and HIP writes
its own hidden arguments over the segment it is given. pagedir's kernels use none today (their
``.args`` end at the explicit ones), which the launcher checks from the metadata, not assumes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

#: ELF e_ident[EI_ABIVERSION] -> code object version (AMDGPUUsage, "ELF Header").
CODE_OBJECT_VERSIONS = {1: 3, 2: 4, 3: 5, 4: 6}
NT_AMDGPU_METADATA = 32
EM_AMDGPU = 224


class CodeObjectError(ValueError):
    """Not an AMDGPU code object, or metadata this launcher cannot follow."""


@dataclass(frozen=True)
class KernelArgument:
    offset: int
    size: int
    value_kind: str


@dataclass(frozen=True)
class KernelMetadata:
    name: str
    arguments: tuple[KernelArgument, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    reqd_workgroup_size: tuple[int, ...] | None
    wavefront_size: int

    @property
    def explicit(self) -> tuple[KernelArgument, ...]:
        return tuple(a for a in self.arguments if not a.value_kind.startswith("hidden_"))

    @property
    def hidden(self) -> tuple[KernelArgument, ...]:
        return tuple(a for a in self.arguments if a.value_kind.startswith("hidden_"))


@dataclass
class CodeObject:
    version: int
    target: str
    kernels: dict[str, KernelMetadata] = field(default_factory=dict)


def read(data: bytes) -> CodeObject:
    """The code-object version, target and kernel metadata of an AMDGPU ELF code object."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CodeObjectError("not a 64-bit little-endian ELF file (an AMDGPU code object is one)")
    if struct.unpack_from("<H", data, 18)[0] != EM_AMDGPU:
        raise CodeObjectError("an ELF file for another machine than AMDGPU")
    version = CODE_OBJECT_VERSIONS.get(data[8])
    if version is None or version < 5:
        raise CodeObjectError(f"code object ABI version {data[8]}: this launcher reads code objects v5 and v6")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    for index in range(shnum):
        kind, = struct.unpack_from("<I", data, shoff + index * shentsize + 4)
        offset, size = struct.unpack_from("<QQ", data, shoff + index * shentsize + 24)
        if kind == 7:  # SHT_NOTE
            metadata = _metadata_note(data[offset: offset + size])
            if metadata is not None:
                return _code_object(version, metadata)
    raise CodeObjectError("the code object has no NT_AMDGPU_METADATA note")


def _metadata_note(notes: bytes) -> dict | None:
    position = 0
    while position + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, position)
        name = notes[position + 12: position + 12 + namesz].rstrip(b"\0")
        desc_at = position + 12 + (namesz + 3) // 4 * 4
        if name == b"AMDGPU" and kind == NT_AMDGPU_METADATA:
            return unpack_msgpack(notes[desc_at: desc_at + descsz])
        position = desc_at + (descsz + 3) // 4 * 4
    return None


def _code_object(version: int, metadata: dict) -> CodeObject:
    found = CodeObject(version, metadata.get("amdhsa.target", ""))
    for kernel in metadata.get("amdhsa.kernels", []):
        arguments = tuple(KernelArgument(int(a[".offset"]), int(a[".size"]), a[".value_kind"]) for a in kernel[".args"])
        reqd = kernel.get(".reqd_workgroup_size")
        found.kernels[kernel[".name"]] = KernelMetadata(
            kernel[".name"], arguments, int(kernel[".kernarg_segment_size"]), int(kernel[".kernarg_segment_align"]),
            int(kernel[".group_segment_fixed_size"]), int(kernel[".private_segment_fixed_size"]),
            tuple(int(r) for r in reqd) if reqd else None, int(kernel[".wavefront_size"]))
    return found


def unpack_msgpack(data: bytes) -> Any:
    """The one msgpack value of ``data`` (the subset LLVM writes: maps, arrays, strings, ints, bools, floats)."""
    value, end = _unpack(data, 0)
    return value


def _unpack(data: bytes, at: int) -> tuple[Any, int]:
    first = data[at]
    at += 1
    if first <= 0x7F:
        return first, at
    if first >= 0xE0:
        return first - 0x100, at
    if 0x80 <= first <= 0x8F:
        return _map(data, at, first & 0x0F)
    if 0x90 <= first <= 0x9F:
        return _array(data, at, first & 0x0F)
    if 0xA0 <= first <= 0xBF:
        length = first & 0x1F
        return data[at: at + length].decode("utf-8"), at + length
    fixed = {0xC0: (None, 0), 0xC2: (False, 0), 0xC3: (True, 0)}
    if first in fixed:
        return fixed[first][0], at
    scalars = {0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q",
               0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
    if first in scalars:
        value, = struct.unpack_from(scalars[first], data, at)
        return value, at + struct.calcsize(scalars[first])
    lengths = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
    if first in lengths:
        length, = struct.unpack_from(lengths[first], data, at)
        at += struct.calcsize(lengths[first])
        raw = data[at: at + length]
        return (raw.decode("utf-8") if first >= 0xD9 else bytes(raw)), at + length
    containers = {0xDC: (">H", _array), 0xDD: (">I", _array), 0xDE: (">H", _map), 0xDF: (">I", _map)}
    if first in containers:
        form, build = containers[first]
        count, = struct.unpack_from(form, data, at)
        return build(data, at + struct.calcsize(form), count)
    raise CodeObjectError(f"msgpack type 0x{first:02x} in the code-object metadata")


def _array(data: bytes, at: int, count: int) -> tuple[list, int]:
    items = []
    for _ in range(count):
        item, at = _unpack(data, at)
        items.append(item)
    return items, at


def _map(data: bytes, at: int, count: int) -> tuple[dict, int]:
    items = {}
    for _ in range(count):
        key, at = _unpack(data, at)
        items[key], at = _unpack(data, at)
    return items, at


def hidden_values(grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_lds: int = 0) -> dict[str, int]:
    """The v5/v6 hidden arguments a launch of ``grid`` workgroups of ``block`` threads sets (the
    dispatch is ``grid * block`` work-items, so every workgroup is whole and the remainders are 0)."""
    dims = 3 if grid[2] > 1 or block[2] > 1 else 2 if grid[1] > 1 or block[1] > 1 else 1
    values = {"hidden_grid_dims": dims, "hidden_dynamic_lds_size": dynamic_lds}
    for axis, name in enumerate("xyz"):
        values[f"hidden_block_count_{name}"] = grid[axis]
        values[f"hidden_group_size_{name}"] = block[axis]
        values[f"hidden_remainder_{name}"] = 0
        values[f"hidden_global_offset_{name}"] = 0
    return values


def kernarg_segment(kernel: KernelMetadata, explicit: list[int], grid: tuple[int, int, int],
                    block: tuple[int, int, int], dynamic_lds: int = 0) -> bytes:
    """The kernarg segment of one launch: ``explicit`` (pointers and i64 sizes, in order) at the
    metadata's offsets, then the hidden arguments (see the module docstring)."""
    if len(explicit) != len(kernel.explicit):
        raise CodeObjectError(f"@{kernel.name} takes {len(kernel.explicit)} explicit arguments, given {len(explicit)}")
    segment = bytearray(kernel.kernarg_segment_size)
    for argument, value in zip(kernel.explicit, explicit):
        if argument.offset % min(argument.size, 8):
            raise CodeObjectError(f"@{kernel.name}: argument at offset {argument.offset} is not aligned to its size")
        segment[argument.offset: argument.offset + argument.size] = (int(value) & (1 << 8 * argument.size) - 1
                                                                      ).to_bytes(argument.size, "little")
    known = hidden_values(grid, block, dynamic_lds)
    for argument in kernel.hidden:
        value = known.get(argument.value_kind, 0)
        segment[argument.offset: argument.offset + argument.size] = value.to_bytes(argument.size, "little")
    return bytes(segment)
