"""The arguments a run takes (pagedir.interp.inputs): pagedir-run --inputs and pagedir.interp.run refuse an
array whose dtype or shape differs from its argument's, or whose batch disagrees with the others', naming
the argument (``arg4 (%seq_lens)``) at its place in the source; nothing is converted by value, no
IndexError escapes, and --outputs is left as it was."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp
from pagedir.cli import run
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import DYNAMIC_SIZES, make_case
from pagedir.interp.inputs import InputError
from pagedir.interp.launch import find_function
from pagedir.interp.memory import Device

KEEP = b"the user's own outputs\n"


def make_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in {**dict(num_heads_q=4, num_heads_kv=2, seq_len_q=1, head_dim=64, page_size=16), **overrides}.items():
        setattr(args, key, value)
    return args


def kernel(tmp_path: Path, lowered: bool = False, **options) -> tuple[Path, list]:
    """The kernel of ``options`` written to a file (L0, or lowered to L6), and a consistent case for it."""
    text = gen.generate(make_args(**options))
    with make_context():
        module = ir.Module.parse(text)
        case = make_case(find_function(module.operation, "paged_attention"), np.random.default_rng(0), Device(),
                         DYNAMIC_SIZES[0] if options.get("dynamic") else None)
        if lowered:
            driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
            text = str(module)
    path = tmp_path / ("l6.mlir" if lowered else "l0.mlir")
    path.write_text(text)
    return path, list(case.args)


def run_inputs(capsys, path: Path, arrays: list, tmp_path: Path) -> tuple[int, str]:
    """pagedir-run PATH --inputs (the arrays as arg0, arg1, ...) --outputs OUT; OUT must keep its bytes on failure."""
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **{f"arg{i}": a for i, a in enumerate(arrays)})
    outputs.write_bytes(KEEP)
    status = run.main([str(path), "--entry", "paged_attention", "--inputs", str(inputs), "--outputs", str(outputs)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    if status != 0:
        assert outputs.read_bytes() == KEEP
    return status, err.strip()


def source_at(path: Path, err: str) -> str:
    """The source text at the ``file:line:col`` the error starts with."""
    where = err[len(str(path)) + 1 :].split(": error: ")[0]
    line, col = (int(x) for x in where.split(":"))
    return path.read_text().splitlines()[line - 1][col - 1 :]


@pytest.mark.parametrize("index, given, message", [
    (0, lambda q: (q.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16),
     "arg0 (%q) has dtype uint16; the argument is memref<2x4x1x64xf16>, which takes float16"),
    (0, lambda q: q.astype(np.float32), "arg0 (%q) has dtype float32; the argument is memref<2x4x1x64xf16>, which takes float16"),
    (3, lambda table: table.astype(np.int64), "arg3 (%block_table) has dtype int64; the argument is memref<2x4xi32>, which takes int32"),
    (4, lambda lens: lens.astype(np.float32), "arg4 (%seq_lens) has dtype float32; the argument is memref<2xi32>, which takes int32"),
], ids=["bf16-bits-for-f16", "f32-for-f16", "i64-table", "float-seq-lens"])
def test_an_array_of_another_dtype_is_refused_not_converted(tmp_path, capsys, index, given, message) -> None:
    path, arrays = kernel(tmp_path, page_table="blocks")
    arrays[index] = given(arrays[index])
    status, err = run_inputs(capsys, path, arrays, tmp_path)
    assert status == 1
    assert err == f"{path}:1:{err.split(':')[2]}: error: inputs '{tmp_path / 'in.npz'}': {message}"
    assert source_at(path, err).startswith(message.split("(")[1].split(")")[0])  # at the argument


def test_bf16_takes_bit_patterns_and_float32_alike(tmp_path, capsys) -> None:
    path, arrays = kernel(tmp_path, page_table="blocks", dtype="bf16")
    assert arrays[0].dtype == np.float32  # rounded to bf16 values
    outs = []
    for q in (arrays[0], (arrays[0].view(np.uint32) >> 16).astype(np.uint16)):
        status, err = run_inputs(capsys, path, [q, *arrays[1:]], tmp_path)
        assert status == 0, err
        with np.load(tmp_path / "out.npz") as written:
            outs.append(written["arg5"])
    np.testing.assert_array_equal(outs[0], outs[1])
    status, err = run_inputs(capsys, path, [arrays[0].astype(np.float16), *arrays[1:]], tmp_path)
    assert status == 1 and err.endswith("arg0 (%q) has dtype float16; the argument is memref<2x4x1x64xbf16>, which takes "
                                        "float32 or uint16 or bfloat16 (uint16: bf16 bit patterns; float32: rounded to bf16)")


def test_vllms_5d_cache_where_a_4d_pool_is_expected_is_refused(tmp_path, capsys) -> None:
    path, arrays = kernel(tmp_path, page_table="blocks", dynamic=True)
    pool = arrays[1]  # [num_blocks, 16, 2, 64]: vLLM's key cache is [num_blocks, Hkv, D / x, block_size, x]
    arrays[1] = np.ascontiguousarray(pool.reshape(pool.shape[0], 16, 2, 8, 8).transpose(0, 2, 4, 1, 3))
    status, err = run_inputs(capsys, path, arrays, tmp_path)
    assert status == 1
    assert err.endswith(f"arg1 (%k_cache) has shape {list(arrays[1].shape)}; the argument is memref<?x16x2x64xf16>, "
                        "which takes shape [?, 16, 2, 64]")


def test_the_element_count_is_not_enough(tmp_path, capsys) -> None:
    path, arrays = kernel(tmp_path, dense=True, seq_lens=True)
    arrays[1] = arrays[1].reshape(2, 64, 2, 64)  # [B, Sk, Hkv, D] for [B, Hkv, Sk, D]: the same element count
    status, err = run_inputs(capsys, path, arrays, tmp_path)
    assert status == 1
    assert err.endswith("arg1 (%k) has shape [2, 64, 2, 64]; the argument is memref<2x2x64x64xf16>, which takes shape "
                        "[2, 2, 64, 64]")


#: Every dynamic form with a size that disagrees with the batch (2): (options, argument, its new length, message end).
DISAGREEING = {
    "blocks-short-seq-lens": (dict(page_table="blocks"), 4, 1,
                              "arg4 (%seq_lens) has shape [1] where the batch is 2 (arg0 (%q) has shape [2, 4, 1, 64]): "
                              "its dim 0 must be 2"),
    "blocks-table-rows": (dict(page_table="blocks"), 3, 3,
                          "arg3 (%block_table) has shape [3, 4] where the batch is 2 (arg0 (%q) has shape [2, 4, 1, 64]): "
                          "its dim 0 must be 2"),
    "csr-short-indptr": (dict(page_table="csr"), 3, 2,
                         "arg3 (%kv_indptr) has shape [2] where the batch is 2 (arg0 (%q) has shape [2, 4, 1, 64]): "
                         "its dim 0 must be the batch + 1 = 3"),
    "csr-last-page-len": (dict(page_table="csr"), 5, 1,
                          "arg5 (%kv_last_page_len) has shape [1] where the batch is 2 (arg0 (%q) has shape [2, 4, 1, 64]): "
                          "its dim 0 must be 2"),
    "dense-short-seq-lens": (dict(dense=True, seq_lens=True), 3, 1,
                             "arg3 (%seq_lens) has shape [1] where the batch is 2 (arg0 (%q) has shape [2, 4, 1, 64]): "
                             "its dim 0 must be 2"),
    "dense-out": (dict(dense=True, seq_lens=True), 4, 3,
                  "arg4 (%out) has shape [3, 4, 1, 64] where the batch is 2 (arg0 (%q) has shape [2, 4, 1, 64]): "
                  "its dim 0 must be 2"),
    "varlen-long-cu-seqlens": (dict(page_table="blocks", varlen=True, seq_len_q=4), 1, 4,
                               "arg4 (%block_table) has shape [2, 4] where the batch is 3 (arg1 (%cu_seqlens_q) has shape "
                               "[4]): its dim 0 must be 3"),
    "varlen-csr-short-seq": (dict(page_table="csr", varlen=True, seq_len_q=4), 6, 1,
                             "arg6 (%kv_last_page_len) has shape [1] where the batch is 2 (arg1 (%cu_seqlens_q) has shape "
                             "[3]): its dim 0 must be 2"),
    "dense-varlen-seq-lens": (dict(dense=True, varlen=True, seq_len_q=4), 4, 3,
                              "arg4 (%seq_lens) has shape [3] where the batch is 2 (arg1 (%cu_seqlens_q) has shape [3]): "
                              "its dim 0 must be 2"),
}


def resized(array: np.ndarray, length: int) -> np.ndarray:
    """``array`` cut or extended (by its last row) to ``length`` rows."""
    if length <= len(array):
        return array[:length].copy()
    return np.concatenate([array, np.repeat(array[-1:], length - len(array), axis=0)])


@pytest.mark.parametrize("lowered", [False, True], ids=["as-written", "lowered"])
@pytest.mark.parametrize("options, index, length, message", DISAGREEING.values(), ids=DISAGREEING.keys())
def test_a_size_that_disagrees_with_the_batch_is_an_error_naming_both(tmp_path, capsys, options, index, length,
                                                                       message, lowered) -> None:
    """As written (the attention op relates the sizes) and lowered (the kernel's rock.batch_sizes records them)."""
    path, arrays = kernel(tmp_path, lowered=lowered, dynamic=True, **options)
    status, err = run_inputs(capsys, path, arrays, tmp_path)
    assert status == 0, err  # the case as drawn runs
    arrays[index] = resized(arrays[index], length)
    status, err = run_inputs(capsys, path, arrays, tmp_path)
    assert status == 1
    assert len(err.splitlines()) == 1
    if lowered:  # the lowered text names its arguments %arg0, %arg1, ...
        message = re.sub(r" \(%\w+\)", "", message)
    assert err.endswith(message), err
    named = re.match(r"arg(\d+)", message).group(1)  # the error is at the argument it names first
    assert source_at(path, err).startswith(f"%arg{named}" if lowered else message.split("(")[1].split(")")[0])


def test_the_python_api_raises_input_error_for_a_short_seq_lens() -> None:
    """Pointer tables hold device addresses: the pointer form runs on the case's own tables, seq_lens cut short."""
    text = gen.generate(make_args(dynamic=True, seq_lens=True))
    with make_context():
        module = ir.Module.parse(text)
        device = Device()
        case = make_case(find_function(module.operation, "paged_attention"), np.random.default_rng(0), device,
                         DYNAMIC_SIZES[0])
        args = list(case.args)
        assert len(interp.run(text, "paged_attention", args, device=device)[-1]) == 2
        args[3] = args[3][:1]
        with pytest.raises(InputError, match=r"^-:1:\d+: error: arg3 \(%seq_lens\) has shape \[1\] where the batch is 2 \(arg0 \(%q\) "
                                             r"has shape \[2, 4, 1, 64\]\): its dim 0 must be 2$") as raised:
            interp.run(text, "paged_attention", args, device=device)
        assert isinstance(raised.value, interp.InterpError)  # what pagedir-run reports as an error
        args[3], args[0] = case.args[3], args[0].astype(np.float32)
        with pytest.raises(InputError, match=r"^-:1:\d+: error: arg0 has dtype float32; the argument is memref<\?x4x1x64xf16>, which "
                                             r"takes float16$"):
            interp.run(module, "paged_attention", args, device=device)  # a parsed module: no source names


SCALAR = """func.func @f(%x: f32, %a: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  memref.store %x, %a[%c0] : memref<2xf32>
  return
}
"""


@pytest.mark.parametrize("given, message", [
    (np.float64(0.5), "arg0 (%x) has dtype float64; the argument is f32, which takes float32"),
    (np.array([0.5], np.float32), "arg0 (%x) has shape [1]; the argument is a scalar f32 (give a 0-d array)"),
], ids=["float64", "shape-1"])
def test_a_scalar_takes_a_0d_array_of_its_dtype(tmp_path, capsys, given, message) -> None:
    path = tmp_path / "scalar.mlir"
    path.write_text(SCALAR)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=given, arg1=np.zeros(2, np.float32))
    assert run.main([str(path), "--entry", "f", "--inputs", str(inputs)]) == 1
    assert capsys.readouterr().err.strip() == f"{path}:1:14: error: inputs '{inputs}': {message}"
    np.savez(inputs, arg0=np.float32(0.5), arg1=np.zeros(2, np.float32))
    assert run.main([str(path), "--entry", "f", "--inputs", str(inputs)]) == 0
    assert interp.run(SCALAR, "f", [0.5, np.zeros(2, np.float32)])[1][0] == 0.5  # a Python number for a scalar


def test_fortran_order_and_strided_arrays_are_read_by_index(tmp_path, capsys) -> None:
    path, arrays = kernel(tmp_path, page_table="blocks")
    status, _ = run_inputs(capsys, path, arrays, tmp_path)
    with np.load(tmp_path / "out.npz") as written:
        expected = written["arg5"]
    status, err = run_inputs(capsys, path, [np.asfortranarray(a) for a in arrays], tmp_path)
    assert status == 0, err
    with np.load(tmp_path / "out.npz") as written:
        np.testing.assert_array_equal(written["arg5"], expected)
    strided = [np.repeat(a, 2, axis=-1)[..., ::2] for a in arrays]  # views: the same values, every other element
    assert not any(a.flags.c_contiguous for a in strided)
    np.testing.assert_array_equal(interp.run(path.read_text(), "paged_attention", strided)[-1], expected)


NUMBERS = """func.func @f(%n: i32, %a: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  memref.store %n, %a[%c0] : memref<1xi32>
  return
}
"""


@pytest.mark.parametrize("number, message", [
    (2**40, "arg0 (%n) is the Python int 1099511627776, not a value of the scalar i32"),
    (1.5, "arg0 (%n) is the Python float 1.5, not a value of the scalar i32"),
], ids=["wraps", "truncates"])
def test_a_python_number_outside_the_scalar_type_is_refused(number, message) -> None:
    assert interp.run(NUMBERS, "f", [7, np.zeros(1, np.int32)])[1][0] == 7
    with pytest.raises(InputError) as raised:
        interp.run(NUMBERS, "f", [number, np.zeros(1, np.int32)])
    assert raised.value.message == message


def nan_table(arrays: list) -> list:
    table = arrays[3].astype(np.float32)
    table[0, 0] = np.nan
    return [*arrays[:3], table, *arrays[4:]]


def nan_and_inf_values(arrays: list) -> list:
    q, k = arrays[0].copy(), arrays[1].copy()
    q[0, 0, 0, 0], k[0, 0, 0, 0], k[1, 0, 0, 0] = np.inf, np.nan, np.inf  # rows of NaN: the math's own
    return [q, k, *arrays[2:]]


@pytest.mark.parametrize("given, status, message", [
    (nan_table, 1, "arg3 (%block_table) has dtype float32; the argument is memref<2x4xi32>, which takes int32"),
    (nan_and_inf_values, 0, None),
], ids=["nan-block-ids", "nan-and-inf-values"])
def test_nan_inputs_leak_no_numpy_warning(tmp_path, given, status, message) -> None:
    # NaN where an index is needed is the user's error, said as one; NaN and Inf in values compute what the
    # math says. Neither prints a numpy RuntimeWarning (run with warnings as errors: one would exit 2).
    import os
    import subprocess
    import sys

    path, arrays = kernel(tmp_path, page_table="blocks")
    inputs = tmp_path / "nan.npz"
    np.savez(inputs, **{f"arg{i}": a for i, a in enumerate(given(arrays))})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    result = subprocess.run([sys.executable, "-W", "error", "-m", "pagedir.cli.run", str(path), "--entry", "paged_attention",
                             "--inputs", str(inputs)], capture_output=True, text=True, env=env, timeout=300)
    assert "Warning" not in result.stderr + result.stdout, result.stderr
    assert result.returncode == status, result.stderr
    if message:
        assert f"error: inputs '{inputs}': {message}" in result.stderr, result.stderr
