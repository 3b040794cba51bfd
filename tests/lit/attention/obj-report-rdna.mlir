// An object and the report from one compile (the report needs the assembly too): both
// artefacts come from the optimized IR, on a wave32 chip with the RDNA descriptor flags.
// RUN: pagedir-gen attention --arch gfx1100 --ragged -o %t.mlir
// RUN: pagedir-compile %t.mlir --arch gfx1100 --emit=obj -o %t.o --report 2>&1 | FileCheck %s
// RUN: %PYTHON -c "import sys; sys.exit(open(sys.argv[1], 'rb').read(4) != b'\x7fELF')" %t.o
// RUN: pagedir-compile %t.mlir --arch gfx1100 --emit=llvm-dialect -o - | FileCheck %s --check-prefix=FLAGS

// CHECK: kernel paged_attention (gfx1100)
// CHECK: spills           0 VGPR, 0 SGPR
// CHECK: wave size        32
// CHECK: buffer loads     {{[0-9]+}} x dwordx4{{$}}
// CHECK: waterfall loads  0

// FLAGS: llvm.mlir.constant(822243328 : i32)
