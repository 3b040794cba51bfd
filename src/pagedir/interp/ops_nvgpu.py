"""``nvgpu.ldmatrix``: NVIDIA's ``ldmatrix`` on a shared-memory memref, as the NVIDIA blockwise loop emits it
(``convert-nvgpu-to-nvvm`` makes it ``nvvm.ldmatrix`` in the backend).

``nvgpu.ldmatrix %tile[%row, %col] {numTiles = N, transpose = T}``: each lane's indices name the start of the
16-byte row it gives; the semantics are ``nvvm.ldmatrix``'s (:mod:`pagedir.interp.ops_nvvm`, the PTX table of
:mod:`pagedir.targets.nvidia_mma`): row r of matrix j comes from lane 8 j + r, register j of each lane holds
two elements of matrix j (``transpose``: of its columns). The result is ``vector<N x 2 x element>``, row j
register j, the lower-numbered element first. The whole warp executes it; the rows are read as the giving
lane's reads (LDS race detection), a matrix per cycle of the bank model (``pagedir-run --lds-banks``).
"""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import InterpError, elem_named
from pagedir.interp.ops_arith import from_bits
from pagedir.interp.ops_memory import MemRef, byte_offsets
from pagedir.interp.ops_nvvm import WARP, count_banks, whole_warps
from pagedir.interp.simt import Program, elem_of, handles, widen
from pagedir.targets import nvidia_mma as nv


@handles("nvgpu.ldmatrix")
def compile_nvgpu_ldmatrix(p: Program, op: Any) -> Any:
    operation = op.operation
    num = ir.IntegerAttr(operation.attributes["numTiles"]).value
    trans = ir.BoolAttr(operation.attributes["transpose"]).value
    elem = elem_of(operation.results[0].type)
    if num not in nv.LDMATRIX_NUMS or elem.size != nv.LDMATRIX_ELEMENT_BYTES:
        raise InterpError(f"'nvgpu.ldmatrix' op: only 16-bit elements and 1, 2 or 4 tiles are modelled (numTiles = "
                          f"{num}, {elem.name})", operation.location)
    memref_slot = p.slot(operation.operands[0])
    index_slots = [p.slot(v) for v in operation.operands[1:]]
    result = p.slot(operation.results[0])
    op_id = p.op_id(op)
    address_lanes = nv.ldmatrix_address_lane(np.arange(num)[:, None], np.arange(8)[None, :]).reshape(-1)
    rows, cols = np.broadcast_arrays(*nv.ldmatrix_element(np.arange(WARP)[:, None], np.arange(2)[None, :], trans))
    u16 = elem_named("i16")
    row_elements = np.arange(nv.LDMATRIX_ROW_BYTES // nv.LDMATRIX_ELEMENT_BYTES, dtype=np.int64)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        warps = whole_warps(p, op_id, mask, "")
        m: MemRef = env[memref_slot]
        if getattr(m.space, "kind", None) != "lds":
            raise InterpError("'nvgpu.ldmatrix' op reads shared memory: its memref must be in workgroup memory",
                              p.op_location(op_id))
        # only the warps executing it (a warp the mask leaves out reads nothing)
        running = np.arange(warps) if mask is None else np.nonzero(mask.reshape(warps, WARP).any(axis=1))[0]
        givers = (running[:, None] * WARP + address_lanes[None, :]).reshape(-1)
        starts = widen(np.asarray(byte_offsets(m, [env[s] for s in index_slots]), dtype=np.int64), rt.lanes)[givers]
        relative = starts - m.space.lane_base[givers]
        if (relative % nv.LDMATRIX_ROW_BYTES).any():
            at = int(relative[relative % nv.LDMATRIX_ROW_BYTES != 0][0])
            raise InterpError(f"'nvgpu.ldmatrix' op: row address {at} of {m.space.name} is not 16-byte aligned",
                              p.op_location(op_id))
        if ((relative < 0) | (relative + nv.LDMATRIX_ROW_BYTES > m.space.nbytes)).any():
            raise InterpError(f"'nvgpu.ldmatrix' op reads past the {m.space.nbytes} bytes of {m.space.name}",
                              p.op_location(op_id))
        addresses = starts[:, None] + row_elements[None, :] * nv.LDMATRIX_ELEMENT_BYTES
        count_banks(p, op_id, m.space, addresses, givers, nv.LDMATRIX_ELEMENT_BYTES, "read")  # a matrix per cycle
        data = m.space.read(addresses, np.broadcast_to(givers[:, None], addresses.shape), u16, rt, op_id)
        matrices = np.ascontiguousarray(data).view(np.uint16).reshape(len(running), num, 8, 8)
        picked = np.stack([matrices[:, :, rows[:, e], cols[:, e]] for e in (0, 1)], axis=-1)  # warps x num x 32 x 2
        bits = np.zeros((warps, WARP, num, 2), dtype=np.uint16)
        bits[running] = picked.transpose(0, 2, 1, 3)
        env[result] = from_bits(np.ascontiguousarray(bits.reshape(rt.lanes, num, 2)).view(elem.storage), elem)

    return run
