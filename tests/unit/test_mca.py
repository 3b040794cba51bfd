"""pagedir.backend.mca (llvm-mca for the kernel report and benchmarks/mca.py): the instruction rewrite llvm-mca 19
needs (it aborts on buffer instructions), used only with an llvm-mca that needs it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pagedir.backend import mca  # noqa: E402


def test_buffer_instructions_become_global_ones_of_the_same_width_on_the_same_registers():
    assert mca.rewrite("buffer_load_dwordx4 v[54:57], v114, s[24:27], 0 offen") == \
        "global_load_dwordx4 v[54:57], v114, s[24:25]"
    assert mca.rewrite("buffer_store_dwordx2 v[2:3], v7, s[8:11], 0 offen offset:64") == \
        "global_store_dwordx2 v7, v[2:3], s[8:9]"
    # no per-lane offset: the data's first register stands for the address
    assert mca.rewrite("buffer_load_dword v5, off, s[0:3], s4 offset:16") == "global_load_dword v5, v5, s[0:1]"
    assert mca.rewrite("buffer_load_dword v3, s[4:7], 0 offen lds") == "global_load_lds_dword v3, s[4:5]"
    assert mca.rewrite("ds_read_b128 v[0:3], v9") == "ds_read_b128 v[0:3], v9"


def test_buffer_instructions_are_rewritten_only_for_an_llvm_mca_that_rejects_them(monkeypatch):
    loop = ["buffer_load_dwordx4 v[0:3], v4, s[0:3], 0 offen", "s_waitcnt vmcnt(0)"]
    monkeypatch.setattr(mca, "takes_buffers", lambda arch: True)
    assert mca.simulated_text(loop, "gfx942") == "\n".join(loop) + "\n"
    monkeypatch.setattr(mca, "takes_buffers", lambda arch: False)
    assert mca.simulated_text(loop, "gfx942") == "global_load_dwordx4 v[0:3], v4, s[0:1]\ns_waitcnt vmcnt(0)\n"


def test_no_figure_for_a_chip_llvm_mca_does_not_know_or_no_instructions():
    assert mca.cycles(["s_nop 0"], "gfx000") is None
    assert mca.cycles([], "gfx942") is None
