"""``make gpu-artefacts``: compile the GPU run's kernels on the CPU, into the folder that is carried.

    python benchmarks/gpu/build_artefacts.py --arch sm_90 --emit ptx --out benchmarks/gpu/artefacts

For each kernel of :mod:`cases` (the correctness matrix and the timed shapes) it writes
``<name>.<emit>`` and ``<name>.plan.json`` and lists it in ``manifest.json`` with its generator
options and argument names; a kernel that does not compile is listed with its error (the GPU run
reports it) and the others go on. It also copies vLLM's Triton unified-attention module and the
helpers it imports from the installed vllm package (``--vllm-python``: the interpreter of the
environment holding it, by default ``.venv-peers``), when there is one, into ``vllm/``.
The GPU machine gets only this folder and the repository (64 MiB at most), so the folder's size
is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402

CARRY_LIMIT = 48 * 2**20  # of the 64 MiB a run carries; the repository takes the rest
#: vLLM's module the GPU run times; the modules of ``vllm/v1/attention/ops`` it imports come with it.
VLLM_KERNEL = "vllm/v1/attention/ops/triton_unified_attention.py"
VLLM_OPS = "vllm/v1/attention/ops/"
#: vLLM modules the GPU run answers with small stand-ins (run_gpu.load_vllm) instead of carrying them.
VLLM_STUBBED = ("vllm.envs", "vllm.logger", "vllm.platforms", "vllm.triton_utils", "vllm.v1.kv_cache_interface")
#: The backend constants the serving path launches the kernel with (read from vllm's source).
VLLM_CONSTANTS = ("MIN_LAUNCH_GRID_SIZE_2D", "NUM_PAR_SOFTMAX_SEGMENTS")


def build_kernel(kernel: cases.Kernel, arch: str, emit: str, out: str) -> dict:
    """Generate and compile one kernel; the compile runs as ``pagedir-compile`` in a process of its own
    (a kernel that crashes the code generator is an error of that kernel, and the others go on)."""
    from pagedir.runtime.attention import PagedAttention

    entry = kernel.to_json()
    started = time.perf_counter()
    try:
        attn = PagedAttention(**{**kernel.options, "arch": arch})
    except Exception as err:  # options this build cannot generate for the target
        entry["error"] = f"{type(err).__name__}: {err}"
        return entry
    source = os.path.join(out, f"{kernel.name}.mlir")
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(attn.source)
    artefact, plan = f"{kernel.name}.{emit}", f"{kernel.name}.plan.json"
    done = subprocess.run([sys.executable, "-m", "pagedir.cli.compile", source, "--arch", arch, f"--emit={emit}",
                           "-o", os.path.join(out, artefact), f"--plan={os.path.join(out, plan)}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        entry["error"] = f"pagedir-compile exit {done.returncode}: {done.stderr.strip()[-600:]}"
        return entry
    entry.update(artefact=artefact, plan=plan, names=attn.names, compile_seconds=round(time.perf_counter() - started, 2))
    return entry


def copy_vllm(python: str, out: str) -> dict:
    """vLLM's unified-attention source from the installed package (not imported: only located)."""
    if not python or not os.path.exists(python):
        return {"error": f"no vllm environment ({python or 'none given'}): make bench-peers sets one up"}
    probe = ("import importlib.util, importlib.metadata, json; s = importlib.util.find_spec('vllm'); "
             "print(json.dumps([s.submodule_search_locations[0] if s else None, importlib.metadata.version('vllm') if s else None]))")
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if found.returncode != 0:
        return {"error": f"probing vllm failed: {found.stderr.strip()[-300:]}"}
    package, version = json.loads(found.stdout)
    if package is None:
        return {"error": "vllm is not installed there"}
    root = os.path.dirname(package)
    if not os.path.exists(os.path.join(root, VLLM_KERNEL)):
        return {"error": f"vllm {version} has no {VLLM_KERNEL}"}
    copied, unstubbed = vllm_modules(root, VLLM_KERNEL)
    for relative in copied:
        os.makedirs(os.path.join(out, "vllm", os.path.dirname(relative)), exist_ok=True)
        shutil.copyfile(os.path.join(root, relative), os.path.join(out, "vllm", relative))
    if unstubbed:
        return {"error": f"vllm {version}'s kernel imports {', '.join(unstubbed)}, which the GPU run has no stand-in for"}
    backend = os.path.join(root, "vllm/v1/attention/backends/triton_attn.py")
    constants = constants_of(backend) if os.path.exists(backend) else {}  # else the GPU run's defaults, said there
    return {"version": version, "files": copied, "constants": constants}


def vllm_modules(root: str, start: str) -> tuple[list[str], list[str]]:
    """The files of ``vllm/v1/attention/ops`` that ``start`` needs, dependencies first (``start`` last), and
    the other vllm modules they import at module level that have no stand-in. Read with ast, never imported."""
    import ast

    ordered: list[str] = []
    unstubbed: set[str] = set()

    def visit(relative: str) -> None:
        if relative in ordered:
            return
        with open(os.path.join(root, relative), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:  # module level: the imports a function makes run only when it is called
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
            for name in names:
                if not name.startswith("vllm.") or name in VLLM_STUBBED:
                    continue
                path = name.replace(".", "/") + ".py"
                if path.startswith(VLLM_OPS) and os.path.exists(os.path.join(root, path)):
                    visit(path)
                else:
                    unstubbed.add(name)
        ordered.append(relative)

    visit(start)
    return ordered, sorted(unstubbed)


def constants_of(path: str) -> dict:
    """Integer module-level constants of a Python file, read with ast (never imported)."""
    import ast

    found = {}
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        for name in set(targets) & set(VLLM_CONSTANTS):
            found[name] = ast.literal_eval(node.value)
    return found


def folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--emit", default="ptx", help="ptx or cubin (needs ptxas) for NVIDIA; hsaco for AMD")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "artefacts"))
    parser.add_argument("--quick", action="store_true", help="one timed shape of each kind (a smoke run)")
    parser.add_argument("--only", default="", help="build only kernels whose name contains this")
    parser.add_argument("--vllm-python", default=".venv-peers/bin/python")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    kernels = [k for k in cases.CHECKS + cases.bench_kernels(args.quick) if args.only in k.name]
    built = []
    for kernel in kernels:
        entry = build_kernel(kernel, args.arch, args.emit, args.out)
        print(f"{kernel.name}: {entry.get('error') or entry['artefact']}", file=sys.stderr)
        built.append(entry)
    manifest = {"arch": args.arch, "emit": args.emit, "quick": args.quick, "kernels": built,
                "vllm": copy_vllm(args.vllm_python, args.out)}
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1)
    size = folder_bytes(args.out)
    failed = sum(1 for k in built if "error" in k)
    print(f"{len(built) - failed} of {len(built)} kernels built for {args.arch}, {size / 2**20:.1f} MiB in {args.out}"
          f"; vllm: {manifest['vllm'].get('version') or manifest['vllm'].get('error')}", file=sys.stderr)
    if size > CARRY_LIMIT:
        print(f"error: {size} bytes exceed the {CARRY_LIMIT} a run may carry", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
