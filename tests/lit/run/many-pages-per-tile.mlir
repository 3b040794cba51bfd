// Tiles that touch more pages than the workgroup has threads: every thread
// stages several page pointers (slots t, t + block_size, ...) before the tile is
// read. Checked end to end on shuffled pages against the reference.

// Two 8-token pages per 16-token tile, one thread.
// RUN: pagedir-gen copy-kv --batch 1 --num-heads-kv 1 --seq-len 32 --head-dim 16 --page-size 8 --block-size 1 | pagedir-run --check - | FileCheck %s --check-prefix=COPY
// 1-token pages (SGLang's layout), 100 pages per tile for 32 threads, ragged sequences with null pages.
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 2 --seq-len 200 --head-dim 8 --page-size 1 --tile-tokens 100 --block-size 32 --layout v --seq-lens | pagedir-run --check - --seed 2 | FileCheck %s --check-prefix=COPY-RAGGED
// Paged attention over 1-token pages, KV tiles of 128 pages for 32 threads.
// RUN: pagedir-gen attention --batch 2 --num-heads-q 2 --num-heads-kv 1 --seq-len-k 256 --head-dim 16 --page-size 1 --ragged \
// RUN:   | pagedir-opt --rock-attention-to-gridwise='block-size=32 n-per-block=128' | pagedir-run --check - | FileCheck %s --check-prefix=ATTN

// COPY: @copy_kv: PASS (levels L2 -> L6, seed 0)
// COPY-NEXT: L2 as written: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS
// COPY-NEXT: L6 after rock-kernel-pipeline: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS

// COPY-RAGGED: @copy_kv: PASS (levels L2 -> L6, seed 2)
// COPY-RAGGED-NEXT: L2 as written: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS
// COPY-RAGGED-NEXT: L6 after rock-kernel-pipeline: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS

// ATTN: @paged_attention: PASS (levels L1 -> L6, seed 0)
// ATTN-NEXT: L1 as written: max abs error {{.*}} <= abs tolerance 0.02 ({{.*}}): PASS
// ATTN-NEXT: L6 after rock-kernel-pipeline: max abs error {{.*}} <= abs tolerance 0.02 ({{.*}}): PASS
