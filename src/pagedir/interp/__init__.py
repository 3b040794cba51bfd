"""Execute pagedir IR on numpy data: L0 by the reference, lowered kernels SIMT-style.

* :class:`Device` is a simulated global memory; ``upload(array)`` returns a
  :class:`DeviceArray` with its byte ``address`` and ``read()``.
* :func:`run` runs a function (L0/L1 ``func.func``, rock kernel or ``gpu.func``)
  and returns every argument's contents after the run.
* :func:`check_pass` runs a module before and after a pass on the same random data
  and compares every output (see :mod:`pagedir.interp.check`).

Program errors (an unmapped address, an LDS race, an unsupported op) raise
:class:`InterpError`, which carries the op's location; arguments that do not fit the
function (dtype, shape, sizes that disagree: :mod:`pagedir.interp.inputs`) raise its
subclass :class:`InputError`, at the argument.
"""

from __future__ import annotations

from pagedir.interp.check import CheckCase, CheckFailure, CheckResult, check_pass
from pagedir.interp.inputs import InputError
from pagedir.interp.launch import run
from pagedir.interp.memory import Device, DeviceArray, InterpError

__all__ = sorted(["CheckCase", "CheckFailure", "CheckResult", "Device", "DeviceArray", "InputError", "InterpError", "check_pass",
                  "run"])
