func.func @host(%x: memref<4xf32>) {
  return
}
