module attributes {gpu.container_module} {
  gpu.module @tiled_module {
    gpu.func @tiled(%out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.wave_size = 64} {
      %tid = gpu.thread_id x
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
}
