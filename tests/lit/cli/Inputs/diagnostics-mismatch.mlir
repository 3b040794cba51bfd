func.func @unexpected() {
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @wrong_text() {
  // expected-error @+1 {{this text is not in the message}}
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @wrong_line() {
  // expected-warning @+2 {{greater than zero}}
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  return
}
