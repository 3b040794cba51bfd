"""The cases ``pagedir-run --check`` draws for the kernels of ``pagedir-gen``, one module per generator
(named by the kernel's ``rock.check``), each with ``check_case(func_op, rng, device) -> CheckCase``."""
