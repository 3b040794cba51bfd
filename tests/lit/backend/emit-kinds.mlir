// Every --emit kind of pagedir-compile, from the same gfx942 paged-load kernel.
// RUN: pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 --emit=llvm-dialect -o %t.mlir
// RUN: FileCheck %s --check-prefix=DIALECT < %t.mlir
// RUN: pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 --emit=llvm-ir -o %t.ll
// RUN: FileCheck %s --check-prefix=IR < %t.ll
// RUN: pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 --emit=asm -o %t.s
// RUN: FileCheck %s --check-prefix=ASM < %t.s
// RUN: pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 --emit=obj -o %t.o
// RUN: %PYTHON -c "import sys; d=open(sys.argv[1],'rb').read(); print('magic', d[:4], 'class', d[4], 'machine', int.from_bytes(d[18:20], 'little'), 'type', int.from_bytes(d[16:18], 'little'))" %t.o | FileCheck %s --check-prefix=OBJ
// The linked code object comes from ld.lld (a stand-in here, checking it is asked for -shared).
// RUN: env PAGEDIR_LD_LLD=%S/Inputs/fake-ld-lld.py pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 --emit=hsaco -o %t.hsaco
// RUN: %PYTHON -c "import sys; d=open(sys.argv[1],'rb').read(); print('magic', d[:4], d.endswith(b'linked-by-fake-ld-lld'))" %t.hsaco | FileCheck %s --check-prefix=HSACO
// The real link: the zig ld.lld of the ziglang dependency, found in its package (not on PATH).
// RUN: env PATH=%t.nowhere pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 --emit=hsaco --no-cache -o %t.linked.hsaco
// RUN: %PYTHON -c "import sys; d=open(sys.argv[1],'rb').read(); print('magic', d[:4], 'osabi', d[7], 'machine', int.from_bytes(d[18:20], 'little'), 'type', int.from_bytes(d[16:18], 'little'), b'paged_load.kd' in d)" %t.linked.hsaco | FileCheck %s --check-prefix=LINKED
// Standard input and output.
// RUN: cat %S/Inputs/paged-load-gfx942.mlir | pagedir-compile - --arch gfx942 --emit=asm | FileCheck %s --check-prefix=ASM

// DIALECT: gpu.module @paged_load_module
// DIALECT: llvm.func @paged_load(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {{{.*}}rocdl.kernel
// DIALECT-SAME: rock.arch = "gfx942"
// DIALECT-SAME: rock.wave_size = 64 : i64
// DIALECT: rocdl.make.buffer.rsrc
// DIALECT: rocdl.raw.ptr.buffer.load {{.*}} : vector<8xf16>

// IR: target triple = "amdgcn-amd-amdhsa"
// IR: define amdgpu_kernel void @paged_load(ptr
// IR: call <8 x half> @llvm.amdgcn.raw.ptr.buffer.load.v8f16

// ASM: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// ASM: buffer_load_dwordx4

// ELF, 64-bit, EM_AMDGPU (224), relocatable (1).
// OBJ: magic b'\x7fELF' class 2 machine 224 type 1

// HSACO: magic b'\x7fELF' True

// ELF, AMDGPU HSA OS/ABI (64), EM_AMDGPU (224), shared object (3), with the kernel descriptor.
// LINKED: magic b'\x7fELF' osabi 64 machine 224 type 3 True
