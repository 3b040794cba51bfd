func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  return %b : i32
}
