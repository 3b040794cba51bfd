"""What fits 32 bits: the rule (pagedir.offset_width), the choices the compiler makes by it, and loads past 4 GiB.

The interpreter's device memory holds at most 256 MiB, so the loads past 4 GiB run
on :class:`SparseDevice`, whose memory holds only the bytes a test writes: a buffer
spans more than 4 GiB and a read of an unwritten byte is an error.
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest
from mlir.dialects import arith, memref

from pagedir import interp
from pagedir.arch import get_chip
from pagedir.backend.kernel_attrs import check_kernels
from pagedir.cli.args import UserError
from pagedir.context import make_context
from pagedir.gen.checks import tensor_fits
from pagedir.interp.memory import elem_named
from pagedir.interp.ops_memory import MemRef, row_major
from pagedir.interp.simt import Program
from pagedir.offset_width import fits_i32, fits_u32, offset_bits, records_limit
from pagedir.passes.buffer_load import BufferLoadPass, out_of_32_bits
from pagedir.page_sources.blocks import BlockRead, block_address

#: Bytes of a block of the pools below: 16 tokens x 2 heads x 128 x f16.
BLOCK_BYTES = 16 * 2 * 128 * 2
#: A pool of this many blocks is 4.9 GB: ids from 524288 = 4 GiB / BLOCK_BYTES on lie past 4 GiB.
POOL_4_9_GB = 600_000

# (what, the choice as the compiler makes it, expected)
CHOICES = [
    ("fits_u32(2^31 - 1)", lambda: fits_u32(2**31 - 1), True),
    ("fits_u32(2^31)", lambda: fits_u32(2**31), True),
    ("fits_u32(2^32 - 1)", lambda: fits_u32(2**32 - 1), True),
    ("fits_u32(2^32)", lambda: fits_u32(2**32), False),
    ("fits_i32(2^31 - 1)", lambda: fits_i32(2**31 - 1), True),
    ("fits_i32(2^31)", lambda: fits_i32(2**31), False),
    ("offset_bits(2^32 - 1)", lambda: offset_bits(2**32 - 1), 32),
    ("offset_bits(2^32)", lambda: offset_bits(2**32), 64),
    # The block-address product id x block bytes: the last byte of block 524287 is 2^32 - 1, block 524288 starts at 2^32.
    ("block 524287's last byte", lambda: offset_bits(524288 * BLOCK_BYTES - 1), 32),
    ("block 524288's first byte", lambda: offset_bits(524288 * BLOCK_BYTES), 64),
    ("a 4 GiB pool of 524288 blocks", lambda: block_product_bits(524288), 32),
    ("a pool one block over 4 GiB", lambda: block_product_bits(524289), 64),
    ("a 4.9 GB pool", lambda: block_product_bits(POOL_4_9_GB), 64),
    ("a 7.9 GiB pool", lambda: block_product_bits(1_030_000), 64),
    # num_records and a 16-byte load an invalid lane starts at num_records.
    ("records_limit(16)", lambda: records_limit(16), 2**32 - 16),
    ("a 2^32 - 16 byte page", lambda: out_of_32_bits("page", 2**32 - 16, 16) is None, True),
    ("a 2^32 - 15 byte page", lambda: out_of_32_bits("page", 2**32 - 15, 16) is None, False),
    ("a 2^31 byte row", lambda: out_of_32_bits("row", 2**31, 16) is None, True),
    # pagedir-gen's tensors: 32-bit linear indices and byte counts.
    ("a tensor of 2^31 - 1 f16 (2^32 - 2 bytes)", lambda: gen_accepts([2**31 - 1], "f16"), True),
    ("a tensor of 2^30 f16", lambda: gen_accepts([2**30], "f16"), True),
    ("a tensor of 2^31 f16", lambda: gen_accepts([2**31], "f16"), False),
    ("a tensor of 2^30 f32 (2^32 bytes)", lambda: gen_accepts([2**30], "f32"), False),
    ("a tensor of 2^30 - 1 f32", lambda: gen_accepts([2**30 - 1], "f32"), True),
    # Kernels compiled with 32-bit indices: a memref's linear index is a signed 32-bit value.
    ("index-bitwidth=32, 2^31 - 1 elements", lambda: index32_accepts(2**31 - 1), True),
    ("index-bitwidth=32, 2^31 elements", lambda: index32_accepts(2**31), False),
]

INDEX32_KERNEL = """
module attributes {{gpu.container_module}} {{
  gpu.module @m {{
    gpu.func @k(%a: memref<{elements}xi8>) kernel attributes {{rock.arch = "gfx942"}} {{
      gpu.return
    }}
  }}
}}
"""


def index32_accepts(elements: int) -> bool:
    with make_context():
        module = ir.Module.parse(INDEX32_KERNEL.format(elements=elements))
        refused = []
        handler = module.context.attach_diagnostic_handler(lambda diagnostic: refused.append(str(diagnostic)) or True)
        try:
            accepted = check_kernels(module.operation, get_chip("gfx942"), 32)
        finally:
            handler.detach()
        assert accepted == (not refused)
        return accepted


def gen_accepts(shape: list[int], dtype: str) -> bool:
    try:
        tensor_fits("q", shape, dtype)
    except UserError:
        return False
    return True



@pytest.mark.parametrize("what, choice, expected", CHOICES, ids=[c[0] for c in CHOICES])
def test_the_32_bit_choices_at_their_boundaries(what: str, choice, expected) -> None:
    assert choice() == expected


class SparseDevice(interp.Device):
    """Device memory of which only the bytes written exist (a dict): buffers may span more than 4 GiB."""

    def __init__(self) -> None:
        super().__init__()
        self.memory: dict[int, int] = {}

    def put(self, address: int, array: np.ndarray) -> None:
        for offset, byte in enumerate(np.ascontiguousarray(array).view(np.uint8).tolist()):
            self.memory[address + offset] = byte

    def get(self, address: int, count: int, dtype: np.dtype) -> np.ndarray:
        return np.array([self.memory[address + i] for i in range(count * np.dtype(dtype).itemsize)], np.uint8).view(dtype)

    def read(self, addresses, elem, what, location) -> np.ndarray:
        flat = np.asarray(addresses, dtype=np.int64).reshape(-1)
        missing = [int(a) for a in flat if int(a) not in self.memory]
        if missing:
            raise interp.InterpError(f"{what()} reads unwritten device address {missing[0]:#x}", location)
        return np.concatenate([self.get(int(a), 1, elem.storage) for a in flat]).reshape(np.shape(addresses))

    def write(self, addresses, values, elem, what, location) -> None:
        values = np.broadcast_to(np.asarray(values, dtype=elem.storage), np.shape(addresses))
        for address, value in zip(np.asarray(addresses).reshape(-1).tolist(), values.reshape(-1)):
            self.put(address, np.array([value], elem.storage))


def run_lowered(device: SparseDevice, text: str, entry_args: list, lower) -> None:
    """Parse ``text``, apply ``lower`` to the module and run its one function on 64 lanes of ``device``."""
    with make_context():
        module = ir.Module.parse(text)
        assert lower(module.operation)
        Program(module.body.operations[0].operation).execute(entry_args, device, 1, 64)


def memref_at(device: SparseDevice, address: int, shape: tuple, dtype: str) -> MemRef:
    base = np.array([address], dtype=np.int64)
    return MemRef(device, base, base, shape, row_major(shape), elem_named(dtype))


@pytest.fixture
def device() -> SparseDevice:
    return SparseDevice()


# ----------------------------------------------------------------------------
# Dense loads from a buffer with a dynamic leading dim, past 4 GiB

#: Elements of a row (f16): 2 MiB, so row 2048 starts at byte 2^32.
ROW = 1 << 20
ROW_BYTES = ROW * 2
BASE, OUT = 1 << 40, 1 << 44
#: Lane ``l`` reads 8 elements of row ``%r + (l floordiv %lanes_per_row) * %step`` at column ``(l mod
#: %lanes_per_row) * 8``: with 64 lanes per row every lane reads one row (a batch row of dense K/V); with
#: 32 the row varies across lanes (packed query rows).
ROWS_LOAD = """
func.func @rows(%kv: memref<?x1048576xf16>, %r: index, %lanes_per_row: index, %step: index, %out: memref<64x8xf16>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %ROW
  %lane = arith.remui %tid, %lanes_per_row : index
  %col = arith.muli %lane, %c8 : index
  %x = "rock.global_load"(%kv, %row, %col) {operandSegmentSizes = array<i32: 1, 2, 0, 0>} : (memref<?x1048576xf16>, index, index) -> vector<8xf16>
  vector.store %x, %out[%tid, %c0] : memref<64x8xf16>, vector<8xf16>
  return
}
"""
ONE_ROW = "%row = arith.addi %r, %c0 : index"
ROWS_ACROSS_LANES = """%which = arith.divui %tid, %lanes_per_row : index
  %apart = arith.muli %which, %step : index
  %row = arith.addi %r, %apart : index"""


def row_values(row: int) -> np.ndarray:
    return (np.arange(64 * 8) + row % 1000).astype(np.float16)


def load_rows(device: SparseDevice, rows: int, first_row: int, lanes_per_row: int, step: int = 1) -> np.ndarray:
    """What each lane of ROWS_LOAD lowered by rock-buffer-load reads from a buffer of ``rows`` rows, of which
    the rows read hold :func:`row_values` and the bytes their offsets would wrap to (modulo 2^32) hold -1."""
    read_rows = [first_row + i * step for i in range(64 // lanes_per_row)]
    for row in read_rows:  # at byte row * row_bytes mod 2^32 of the buffer: another row (sequence)
        device.put(BASE + (row * ROW_BYTES) % (1 << 32), np.full(64 * 8, -1, np.float16))
    for row in read_rows:
        device.put(BASE + row * ROW_BYTES, row_values(row))
    device.put(OUT, np.zeros(64 * 8, np.float16))
    text = ROWS_LOAD.replace("%ROW\n", (ONE_ROW if lanes_per_row == 64 else ROWS_ACROSS_LANES) + "\n")
    run_lowered(device, text, [memref_at(device, BASE, (rows, ROW), "f16"), np.array([first_row]), np.array([lanes_per_row]),
                               np.array([step]), memref_at(device, OUT, (64, 8), "f16")], BufferLoadPass().run)
    return device.get(OUT, 64 * 8, np.float16).reshape(64, 8)


@pytest.mark.parametrize("rows, first_row, lanes_per_row", [
    (2049, 2048, 64),  # the row at 4 GiB, the same for every lane: the descriptor starts there
    (2100, 2099, 64),  # 4 GiB + 102 MiB
    (2049, 2047, 32),  # rows varying across lanes, on both sides of 4 GiB
    (4200, 4197, 32),  # past 8 GiB
])
def test_dense_rows_past_4_gib_read_their_own_bytes(device: SparseDevice, rows: int, first_row: int,
                                                    lanes_per_row: int) -> None:
    got = load_rows(device, rows, first_row, lanes_per_row)
    for lane in range(64):
        row, column = first_row + lane // lanes_per_row, (lane % lanes_per_row) * 8
        np.testing.assert_array_equal(got[lane], row_values(row)[column:column + 8], err_msg=f"lane {lane} reads row {row}")


def test_lanes_more_than_2_gib_from_the_waves_first_read_zero_not_another_row(device: SparseDevice) -> None:
    # Lanes 0-31 read row 2048 (at 4 GiB), lanes 32-63 row 3148, 2.15 GiB further: outside the 4 GiB window
    # that starts 2 GiB below lane 0, where a 32-bit offset from the window would wrap to row 1100.
    got = load_rows(device, 3200, 2048, 32, step=1100)
    np.testing.assert_array_equal(got[:32], row_values(2048)[:256].reshape(32, 8))
    np.testing.assert_array_equal(got[32:], np.zeros((32, 8), np.float16))


# ----------------------------------------------------------------------------
# The block-address product of a pool between 4 and 8 GiB

POOL_VIEW = """
func.func @address(%pool: memref<{blocks}x16x2x128xf16>, %table: memref<1x4xi32>, %id: i32, %head: i32, %out: memref<1xi64>)
    attributes {{rock.kernel, rock.arch = "gfx942"}} {{
  %pages = "rock.block_table_view"(%pool, %table) {{layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}}
      : (memref<{blocks}x16x2x128xf16>, memref<1x4xi32>) -> memref<1x8x2048xf16>
  return
}}
"""


def block_product_bits(blocks: int) -> int:
    """The width in which block_address multiplies a block id by the block bytes, for a static pool of ``blocks``."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(POOL_VIEW.format(blocks=blocks))
        func = module.body.operations[0]
        body = func.regions[0].blocks[0]
        with ir.InsertionPoint(body.operations[1]):
            block_address(body.operations[0].results[0], BlockRead(body.arguments[3], body.arguments[2], None))
        (width,) = {ir.IntegerType(op.results[0].type).width for op in body.operations if op.name == "arith.muli"
                    and any(o.owner.name == "arith.constant" and ir.IntegerAttr(o.owner.attributes["value"]).value == BLOCK_BYTES
                            for o in op.operands if not isinstance(o.owner, ir.Block))}
        return width


@pytest.mark.parametrize("block_id", [524287, 524288, POOL_4_9_GB - 1])
def test_block_addresses_of_a_4_9_gb_pool_do_not_wrap(device: SparseDevice, block_id: int) -> None:
    device.put(OUT, np.zeros(1, np.int64))

    def store_address(module: ir.Operation) -> bool:
        body = module.regions[0].blocks[0].operations[0].regions[0].blocks[0]
        *_, block_id_arg, head, out = body.arguments
        with ir.InsertionPoint(body.operations[1]), ir.Location.unknown():
            address = block_address(body.operations[0].results[0], BlockRead(head, block_id_arg, None))
            memref.store(address, out, [arith.constant(ir.IndexType.get(), 0)])
        return True

    run_lowered(device, POOL_VIEW.format(blocks=POOL_4_9_GB),
                [memref_at(device, BASE, (POOL_4_9_GB, 16, 2, 128), "f16"), memref_at(device, 1 << 43, (1, 4), "i32"),
                 np.array([block_id], np.int32), np.array([1], np.int32), memref_at(device, OUT, (1,), "i64")], store_address)
    # block id x 8192 bytes, plus head 1 of the block's first token: 128 x 2 bytes further
    assert device.get(OUT, 1, np.int64)[0] == BASE + block_id * BLOCK_BYTES + 128 * 2
