"""The interpreter runs linalg-attention payloads per the ops' semantics: they compute pagedir.reference's attention."""

from __future__ import annotations

import numpy as np
import pytest

from pagedir import reference
from pagedir.cli.gen import build_parser
from pagedir.errors import UserError
from pagedir.gen import linalg_attention
from pagedir.interp import Device, run
from pagedir.interp.check import make_case
from pagedir.interp.launch import as_module, find_function

CASES = [
    [],
    ["--causal", "--seq-lens", "--seq-len-q", "4", "--seq-len-k", "16"],
    ["--page-size", "16", "--seq-lens", "--mask", "additive", "--softmax", "linalg"],
    ["--matmul", "batch-matmul", "--seq-len-q", "8", "--seq-len-k", "32", "--causal", "--dtype", "f32"],
    ["--num-heads-kv", "8", "--dtype", "bf16", "--seq-lens"],
]


@pytest.mark.parametrize("flags", CASES, ids=lambda f: " ".join(f) or "default")
def test_payload_computes_attention(flags):
    args = build_parser().parse_args(["linalg-attention", "--head-dim", "32", *flags])
    module = as_module(linalg_attention.generate(args))
    func = find_function(module, "attention")
    device = Device()
    rng = np.random.default_rng(3)
    case = make_case(func, rng, device)
    outputs = run(module, "attention", case.args, device=device)
    q = case.args[0].astype(np.float32)
    # Redraw K/V as the case drew them (same seed, same order) to know the dense values behind the pages.
    again = np.random.default_rng(3)
    b, hq, sq, d = q.shape
    hkv = args.num_heads_kv
    sk = args.seq_len_k
    again.standard_normal((b, hq, sq, d))
    name = args.dtype
    from pagedir.interp.check import host_values

    k = host_values(again.standard_normal((b, hkv, sk, d)), name).astype(np.float32)
    v = host_values(again.standard_normal((b, hkv, sk, d)), name).astype(np.float32)
    seq_lens = case.args[3] if args.seq_lens else None
    expected = reference.attention(q, k, v, seq_lens=seq_lens, causal=args.causal, scale=args.scale)
    tolerance = 1e-5 if name == "f32" else 2e-2
    assert np.abs(outputs[-1].astype(np.float32) - expected).max() <= tolerance
    assert not np.isnan(outputs[-1]).any()


@pytest.mark.parametrize("flags", CASES, ids=lambda f: " ".join(f) or "default")
def test_raise_keeps_what_the_payload_computes(flags):
    """rock-raise-attention's output (rock.attention, run by the reference) computes what the payload does."""
    from pagedir.interp.check import check_pass
    from pagedir.passes.ir_utils import find_ops

    args = build_parser().parse_args(["linalg-attention", "--head-dim", "32", *flags])
    module = as_module(linalg_attention.generate(args))
    from pagedir.interp.check import apply_pass

    with module.context:  # the rock verifiers build types from the ambient context
        raised = apply_pass(module, "rock-raise-attention")
        assert find_ops(raised.operation, "rock.attention"), "the payload was not raised"
        assert not find_ops(raised.operation, "linalg.generic", "linalg.softmax", "linalg.batch_matmul")
        assert check_pass(module, "rock-raise-attention", seed=1).ok


# ----------------------------------------------------------------------------
# Cache pools gathered through a block table (vLLM) or a CSR table (FlashInfer)

SERVING_CASES = [
    ["--page-table", "blocks"],
    ["--page-table", "blocks", "--kv-layout", "hnd", "--causal", "--seq-len-q", "4"],
    ["--page-table", "csr"],
    ["--page-table", "blocks", "--kv-layout", "hnd", "--num-heads-q", "2"],  # no GQA: the gather's fold is not one
    ["--page-table", "csr", "--kv-layout", "hnd", "--causal", "--seq-len-q", "3", "--matmul", "batch-matmul",
     "--softmax", "linalg", "--mask", "additive"],
]
SERVING_SIZES = ["--batch", "3", "--num-heads-q", "4", "--num-heads-kv", "2", "--head-dim", "32", "--seq-len-k", "20",
                 "--page-size", "8"]


@pytest.mark.parametrize("flags", SERVING_CASES, ids=" ".join)
def test_pool_gather_payload_computes_attention(flags):
    """The payload gathers each sequence's blocks from the pools: it computes the reference attention of
    the dense K/V the table names (a capacity of 20 tokens in 8-token blocks: the last one partly used)."""
    args = build_parser().parse_args(["linalg-attention", *SERVING_SIZES, *flags])
    module = as_module(linalg_attention.generate(args))
    device = Device()
    case = make_case(find_function(module, "attention"), np.random.default_rng(5), device)
    out = run(module, "attention", case.args, device=device)[-1]
    q, k_pool, v_pool = case.args[:3]
    if args.page_table == "blocks":
        table, seq_lens = case.args[3], case.args[4]
    else:
        indptr, indices, last = case.args[3:6]
        table, seq_lens = reference.csr_block_table(indptr, indices, 3), reference.csr_seq_lens(indptr, last, 8)
    assert seq_lens.min() < 24 and (seq_lens % 8).any(), seq_lens  # some sequence ends inside a block
    k, v = (reference.blocks_dense(pool, table, layout=args.kv_layout).astype(np.float32) for pool in (k_pool, v_pool))
    expected = reference.attention(q.astype(np.float32), k, v, seq_lens=seq_lens, causal=args.causal)
    assert np.abs(out.astype(np.float32) - expected).max() <= 2e-2


@pytest.mark.parametrize("flags", SERVING_CASES, ids=" ".join)
def test_pool_gather_raised_kernel_passes_check(flags, tmp_path, capsys):
    """pagedir-run --check compiles the payload (raised to rock.block_table_view + rock.attention) and
    compares the kernel with the payload as the interpreter runs it."""
    from pagedir.cli import gen, run as run_cli

    path = tmp_path / "payload.mlir"
    assert gen.main(["linalg-attention", *SERVING_SIZES, *flags, "-o", str(path)]) == 0
    status = run_cli.main(["--check", str(path), "--seed", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "@attention: PASS (levels input -> L6, seed 2)" in out


def test_pool_gather_raises_to_block_table_views():
    """blocks: one view per pool over the block table, seq_lens to rock.attention; csr: views over
    (kv_indices, kv_indptr, kv_last_page_len), no seq_lens; the layout the gather's reshapes imply."""
    from pagedir.interp.check import apply_pass
    from pagedir.passes.ir_utils import find_ops

    for flags, layout, operands in ((["--page-table", "blocks", "--kv-layout", "hnd"], "hnd", 5),
                                    (["--page-table", "csr"], "nhd", 4)):
        args = build_parser().parse_args(["linalg-attention", *SERVING_SIZES, *flags])
        module = as_module(linalg_attention.generate(args))
        with module.context:
            raised = apply_pass(module, "rock-raise-attention")
        views = find_ops(raised.operation, "rock.block_table_view")
        assert [str(v.attributes["layout"]) for v in views] == [f'"{layout}"'] * 2
        (attention,) = find_ops(raised.operation, "rock.attention")
        assert len(attention.operands) == operands
        assert not find_ops(raised.operation, "linalg.generic", "tensor.extract")


def test_wrong_layout_fails_the_check(tmp_path, capsys, monkeypatch):
    """The check can tell the layouts apart: a raise that took an nhd pool for hnd (blocks of 2 tokens,
    2 heads: both verify) fails pagedir-run --check."""
    from pagedir.cli import gen, run as run_cli
    from pagedir.passes import raise_attention

    def swapped(value):
        source = raise_attention.block_gather(value)
        if source is not None:
            source.layout = "hnd" if source.layout == "nhd" else "nhd"
        return source

    monkeypatch.setattr(raise_attention, "GATHER_FORMS", (raise_attention.dense_source, swapped))
    path = tmp_path / "payload.mlir"
    assert gen.main(["linalg-attention", *SERVING_SIZES[:-1], "2", "--page-table", "csr", "-o", str(path)]) == 0
    assert run_cli.main(["--check", str(path)]) == 1
    assert "FAIL" in capsys.readouterr().out


# ----------------------------------------------------------------------------
# Variants written in the payload: sliding window (a select on j) and soft-cap (tanh)

VARIANT_CASES = [
    (["--window", "5", "--causal", "--seq-len-q", "4", "--seq-lens"], {"window_left": 5}),
    (["--window", "4", "--seq-len-q", "3"], {"window_left": 4}),
    (["--softcap", "2.5", "--page-table", "blocks", "--causal", "--seq-len-q", "2"], {"softcap": 2.5}),
    (["--window", "3", "--softcap", "30", "--page-table", "csr", "--kv-layout", "hnd", "--causal", "--seq-len-q", "4"],
     {"window_left": 3, "softcap": 30.0}),
]


def raised_payload(flags: list[str], path) -> tuple:
    """``pagedir-gen linalg-attention`` with SERVING_SIZES and ``flags`` into ``path``, raised by
    rock-raise-attention: (the raised module, its one rock.attention)."""
    from pagedir.cli import gen
    from pagedir.interp.check import apply_pass
    from pagedir.passes.ir_utils import find_ops

    assert gen.main(["linalg-attention", *SERVING_SIZES, *flags, "-o", str(path)]) == 0
    module = as_module(path.read_text())
    with module.context:
        raised = apply_pass(module, "rock-raise-attention")
        (attention,) = find_ops(raised.operation, "rock.attention")
    return raised, attention


@pytest.mark.parametrize("flags,attributes", VARIANT_CASES, ids=lambda f: " ".join(f) if isinstance(f, list) else "")
def test_variants_raise_to_attributes_and_pass_check(flags, attributes, tmp_path, capsys):
    """The window and the soft-cap the payload computes become rock.attention's window_left and softcap,
    and the kernel agrees with the payload (pagedir-run --check)."""
    from pagedir.cli import run as run_cli

    path = tmp_path / "payload.mlir"
    raised, attention = raised_payload(flags, path)  # raised kept: attention's ops live as long as it does
    for name, value in attributes.items():
        assert attention.attributes[name].value == value
    assert run_cli.main(["--check", str(path), "--seed", "4"]) == 0, capsys.readouterr().out


def test_payload_window_computes_reference(tmp_path):
    """The payload's window is the reference's window_left: keys j >= i + seq_len - Sq - W."""
    args = build_parser().parse_args(["linalg-attention", "--head-dim", "32", "--seq-len-q", "4", "--seq-len-k", "16",
                                      "--seq-lens", "--causal", "--window", "3", "--softcap", "2", "--dtype", "f32"])
    module = as_module(linalg_attention.generate(args))
    device = Device()
    case = make_case(find_function(module, "attention"), np.random.default_rng(3), device)
    out = run(module, "attention", case.args, device=device)[-1]
    q, k, v, seq_lens = case.args[:4]
    expected = reference.attention(q, k, v, seq_lens=seq_lens, causal=True, window_left=3, softcap=2.0)
    assert np.abs(out - expected).max() <= 1e-5
    wider = reference.attention(q, k, v, seq_lens=seq_lens, causal=True, window_left=4, softcap=2.0)
    assert np.abs(out - wider).max() > 1e-3  # the window matters on this data


def test_alibi_summary_reports_the_output(tmp_path, capsys):
    """A payload with f32 alibi_slopes compares them too (exactly equal, error 0 against 1e-5): the
    summary line shows the f16 output's error against its tolerance, not the untouched slopes'."""
    from pagedir.cli import gen, run as run_cli

    path = tmp_path / "alibi.mlir"
    assert gen.main(["linalg-attention", *SERVING_SIZES, "--page-table", "blocks", "--alibi", "-o", str(path)]) == 0
    assert run_cli.main(["--check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "L6 after rock-kernel-pipeline: max abs error" in out and "<= abs tolerance 0.02 " in out, out


@pytest.mark.parametrize("flags", [["--alibi", "--seq-lens", "--causal", "--seq-len-q", "3"],
                                   ["--alibi", "--page-table", "csr", "--kv-layout", "hnd", "--softcap", "20",
                                    "--window", "6", "--causal", "--seq-len-q", "4"]], ids=" ".join)
def test_alibi_bias_raises_to_slopes_and_passes_check(flags, tmp_path, capsys):
    """The bias tensor slopes[h] * (j - i_pos) added to the scores becomes rock.attention's alibi_slopes
    operand (the function's argument), and the kernel agrees with the payload."""
    from pagedir.cli import run as run_cli

    path = tmp_path / "payload.mlir"
    raised, attention = raised_payload(flags, path)  # raised kept: attention's ops live as long as it does
    slopes = attention.opview.alibi_slopes
    assert slopes is not None and str(slopes.type) == "memref<4xf32>"
    assert run_cli.main(["--check", str(path), "--seed", "6"]) == 0, capsys.readouterr().out


def test_payload_alibi_computes_reference():
    args = build_parser().parse_args(["linalg-attention", "--head-dim", "32", "--seq-len-q", "4", "--seq-len-k", "16",
                                      "--seq-lens", "--causal", "--alibi", "--dtype", "f32"])
    module = as_module(linalg_attention.generate(args))
    device = Device()
    case = make_case(find_function(module, "attention"), np.random.default_rng(3), device)
    out = run(module, "attention", case.args, device=device)[-1]
    q, k, v, seq_lens, slopes = case.args[:5]
    expected = reference.attention(q, k, v, seq_lens=seq_lens, causal=True, alibi_slopes=slopes)
    assert np.abs(out - expected).max() <= 1e-5
    assert np.abs(out - reference.attention(q, k, v, seq_lens=seq_lens, causal=True)).max() > 1e-3


@pytest.mark.parametrize("flags,message", [
    (["--page-table", "csr", "--seq-lens"], "--seq-lens: csr page tables carry the lengths"),
    (["--page-table", "blocks", "--num-blocks", "0"], "--num-blocks must be at least 1 (block ids are range-checked), got 0"),
    (["--page-table", "pointers"], "--page-table pointers takes --page-size"),
    (["--num-blocks", "8"], "--num-blocks sizes the cache pools of --page-table blocks or csr"),
    (["--kv-cache", "stacked0"], "--kv-cache stacked0 stacks the cache pools of --page-table blocks or csr"),
    (["--window", "-1"], "--window must be 0 or more"),
], ids=lambda f: " ".join(f) if isinstance(f, list) else "")
def test_gen_refuses_inconsistent_flags(flags, message, tmp_path, capsys):
    """Exit 1 with a message naming the flag; nothing written."""
    from pagedir.cli import gen

    path = tmp_path / "payload.mlir"
    assert gen.main(["linalg-attention", *flags, "-o", str(path)]) == 1
    assert message in capsys.readouterr().err
    assert not path.exists()


STACKED_CASES = [
    ["--page-table", "blocks", "--kv-cache", "stacked0"],
    ["--page-table", "blocks", "--kv-cache", "stacked1", "--kv-layout", "hnd", "--causal", "--seq-len-q", "4"],
    ["--page-table", "csr", "--kv-cache", "stacked1"],
    ["--page-table", "csr", "--kv-cache", "stacked0", "--kv-layout", "hnd", "--causal", "--seq-len-q", "3"],
]


@pytest.mark.parametrize("flags", STACKED_CASES, ids=" ".join)
def test_stacked_gather_raised_kernel_passes_check(flags, tmp_path, capsys):
    """K and V gathered from one kv_cache (decode and causal prefill, f16) raise to block_table_views of
    memref.subviews of it, at K's and V's index of the stacked axis, and the kernel agrees with the payload."""
    from pagedir.cli import gen, run as run_cli
    from pagedir.interp.check import apply_pass
    from pagedir.passes.ir_utils import find_ops

    path = tmp_path / "payload.mlir"
    assert gen.main(["linalg-attention", *SERVING_SIZES, *flags, "-o", str(path)]) == 0
    module = as_module(path.read_text())
    with module.context:
        raised = apply_pass(module, "rock-raise-attention")
    axis = 0 if "stacked0" in flags else 1
    views = find_ops(raised.operation, "memref.subview")
    assert [list(ir_ints(v.attributes["static_offsets"]))[axis] for v in views] == [0, 1]
    assert [v.result for v in views] == [b.operands[0] for b in find_ops(raised.operation, "rock.block_table_view")]
    assert run_cli.main(["--check", str(path), "--seed", "2"]) == 0, capsys.readouterr().out


def ir_ints(attribute):
    import mlir.ir as ir

    return ir.DenseI64ArrayAttr(attribute)


def test_stacked_halves_swapped_fails_the_check(tmp_path, capsys, monkeypatch):
    """The check tells K's half of a kv_cache from V's: a raise that viewed K at index 1 and V at 0 fails."""
    from pagedir.cli import gen, run as run_cli
    from pagedir.passes import raise_attention

    path = tmp_path / "payload.mlir"
    assert gen.main(["linalg-attention", *SERVING_SIZES, "--page-table", "blocks", "--kv-cache", "stacked1",
                     "-o", str(path)]) == 0
    viewed = raise_attention.block_table_view

    def swapped(source, batch, csr_lengths):
        source.stack = (source.stack[0], 1 - source.stack[1])
        return viewed(source, batch, csr_lengths)

    monkeypatch.setattr(raise_attention, "block_table_view", swapped)
    assert run_cli.main(["--check", str(path)]) == 1


def test_gen_refuses_a_layout_it_does_not_write():
    """A layout of the registry the generator has no gather for (vLLM's paged-attention cache) is refused
    with a message naming it, not written as an hnd pool."""
    args = build_parser().parse_args(["linalg-attention", *SERVING_SIZES, "--page-table", "blocks"])
    args.kv_layout = "vllm-pa"  # as --kv-layout vllm-pa parses once the registry has it
    with pytest.raises(UserError, match="--kv-layout vllm-pa: linalg-attention writes gathers from nhd and hnd pools"):
        linalg_attention.generate(args)


@pytest.mark.parametrize("form", ["blocks", "csr"])
def test_pool_smaller_than_the_table_passes_check(form, tmp_path, capsys):
    """--num-blocks below B x max_blocks (a pool sized by memory, as pagedir-gen attention takes): sequences
    share blocks, and the raised kernel agrees with the payload."""
    from pagedir.cli import gen, run as run_cli

    path = tmp_path / "payload.mlir"
    assert gen.main(["linalg-attention", *SERVING_SIZES, "--page-table", form, "--num-blocks", "2",
                     "-o", str(path)]) == 0
    assert "memref<2x8x2x32xf16>" in path.read_text()
    assert run_cli.main(["--check", str(path), "--seed", "2"]) == 0, capsys.readouterr().out


def test_blocks_payload_takes_attentions_arguments():
    """The same arguments, in the same order, as pagedir-gen attention's kernel for the same flags."""
    from pagedir.gen import attention

    common = ["--batch", "2", "--num-heads-q", "4", "--num-heads-kv", "2", "--head-dim", "32", "--seq-len-k", "40",
              "--page-size", "16", "--kv-layout", "hnd", "--num-blocks", "9"]
    for form in ("blocks", "csr"):
        payload = as_module(linalg_attention.generate(build_parser().parse_args(
            ["linalg-attention", *common, "--page-table", form, "--alibi"])))
        kernel = as_module(attention.generate(build_parser().parse_args(
            ["attention", *common, "--page-table", form, "--alibi"])))
        types = [[str(a.type) for a in find_function(m, name).regions[0].blocks[0].arguments]
                 for m, name in ((payload, "attention"), (kernel, "paged_attention"))]
        assert types[0] == types[1]


def test_compile_takes_the_payloads_chip_or_asks_for_one(tmp_path, capsys):
    """pagedir-compile raises a payload to a kernel first, so the chip rule reads the payload's function:
    its rock.arch without --arch; neither given is the rule's error at the function (exit 1, no output)."""
    from pagedir.cli import compile as compile_cli, gen

    path, asm = tmp_path / "payload.mlir", tmp_path / "payload.s"
    assert gen.main(["linalg-attention", "--head-dim", "32", "--arch", "gfx950", "-o", str(path)]) == 0
    assert compile_cli.main([str(path), "--no-cache", "-o", str(asm)]) == 0, capsys.readouterr().err
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx950' in asm.read_text()
    bare = tmp_path / "bare.mlir"
    bare.write_text(path.read_text().replace('rock.arch = "gfx950", ', ""))
    assert compile_cli.main([str(bare), "--no-cache", "-o", str(tmp_path / "bare.s")]) == 1
    err = capsys.readouterr().err
    assert f"{bare}:1:1: error: 'func.func' op @attention names no chip: set rock.arch on the kernel or give the " \
           "arch option (known chips: gfx908" in err, err
    assert "Traceback" not in err and not (tmp_path / "bare.s").exists()
