// RUN: pagedir-opt %s --rock-pipeline --split-input-file --verify-diagnostics

func.func @depth_three(%n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' op rock.pipeline_depth must be 1 or 2, got 3 : i64}}
  scf.for %t = %c0 to %n step %c1 {
  } {rock.pipeline_depth = 3 : i64}
  return
}

// -----

func.func @not_an_integer(%n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' op rock.pipeline_depth must be 1 or 2, got "two"}}
  scf.for %t = %c0 to %n step %c1 {
  } {rock.pipeline_depth = "two"}
  return
}

// -----

func.func @step_two(%n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{'scf.for' op with rock.pipeline_depth = 2 must step by 1 (one tile per iteration), got step %c2}}
  scf.for %t = %c0 to %n step %c2 {
  } {rock.pipeline_depth = 2 : i64}
  return
}
