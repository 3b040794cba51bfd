"""--emit=hsaco links a real code object with the ld.lld of the ``ziglang`` dependency.

The linked file is read back with a small ELF64 reader (the header and ``.dynsym``):
a loader finds a kernel through its dynamic symbols, the code (``<name>``, a function)
and its kernel descriptor (``<name>.kd``, a 64-byte object).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from pagedir.backend import BackendError, linker
from pagedir.backend.codegen import link_hsaco
from pagedir.cli import compile as compile_cli
from pagedir.gen import attention as gen

from test_attention import make_args

EM_AMDGPU = 224
ET_DYN = 3
ELFOSABI_AMDGPU_HSA = 64
SHT_DYNSYM = 11
STT_OBJECT, STT_FUNC = 1, 2
ROOT = Path(__file__).resolve().parents[2]


def elf_header(data: bytes) -> dict:
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a little-endian ELF64 file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    e_shoff, = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 58)
    return dict(osabi=data[7], abi_version=data[8], type=e_type, machine=e_machine,
                shoff=e_shoff, shentsize=e_shentsize, shnum=e_shnum)


def dynamic_symbols(data: bytes) -> dict[str, tuple[int, int]]:
    """name -> (symbol type, size) for every named symbol of ``.dynsym``."""
    header = elf_header(data)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, header["shoff"] + i * header["shentsize"])
                for i in range(header["shnum"])]
    symbols = {}
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != SHT_DYNSYM:
            continue
        strtab_offset = sections[link][4]
        for start in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            st_name, st_info, _other, _shndx, _value, st_size = struct.unpack_from("<IBBHQQ", data, start)
            end = data.index(b"\0", strtab_offset + st_name)
            symbols[data[strtab_offset + st_name:end].decode()] = (st_info & 0xF, st_size)
    return symbols


def test_split_decode_kernels_link_into_an_amdgpu_shared_object(monkeypatch) -> None:
    monkeypatch.delenv(linker.LD_LLD_ENV, raising=False)  # the packaged zig ld.lld, whatever the environment says
    args = make_args(num_heads_q=8, num_heads_kv=2, seq_len_k=256, num_splits=4, arch="gfx942")
    entry = compile_cli.compile_source(gen.generate(args), emit="hsaco", cache=False)
    code = entry.artefact
    header = elf_header(code)
    assert (header["machine"], header["type"], header["osabi"]) == (EM_AMDGPU, ET_DYN, ELFOSABI_AMDGPU_HSA)
    assert header["abi_version"] >= 2  # code object v4 or later (LLVM 22 writes v6: 4)
    symbols = dynamic_symbols(code)
    for kernel in ("paged_attention", "paged_attention_combine"):
        assert symbols[kernel][0] == STT_FUNC and symbols[kernel][1] > 0
        assert symbols[f"{kernel}.kd"] == (STT_OBJECT, 64)


def test_the_linker_is_found_in_the_ziglang_package_not_on_path(monkeypatch) -> None:
    monkeypatch.delenv(linker.LD_LLD_ENV, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    command = linker.linker_command()
    assert command is not None, linker.missing_linker_message()
    assert Path(command[0]).parent.name == "ziglang" and command[1:] == ["ld.lld"]


def test_without_the_package_the_error_names_what_to_install(monkeypatch) -> None:
    monkeypatch.delenv(linker.LD_LLD_ENV, raising=False)
    monkeypatch.setattr(linker.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendError, match=re.escape(f"pip install '{linker.ZIGLANG_REQUIREMENT}'")):
        link_hsaco(b"\x7fELF")


def test_a_failing_linker_reports_its_own_error(monkeypatch, tmp_path) -> None:
    fake = tmp_path / "ld.lld"
    fake.write_text("#!/bin/sh\necho 'ld.lld: error: k.o: unknown ABI version' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(linker.LD_LLD_ENV, str(fake))
    with pytest.raises(BackendError, match="failed:\nld.lld: error: k.o: unknown ABI version"):
        link_hsaco(b"\x7fELF")


def test_the_error_names_the_pinned_requirement() -> None:
    pins = re.findall(r'"(ziglang==[^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pins == [linker.ZIGLANG_REQUIREMENT]
