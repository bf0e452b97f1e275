// C (=|+=) scale · op(A) · op(B) (+ bias) for row-major f32 matrices, with the transposed forms the backward pass
// needs. `scale` is 1 for a plain product (exact: 1·x = x); LoRA's alpha / r uses it.
//   main / nn: A (M, K),  B (K, N)          y  = x · W          (forward linear layer)
//   nt:        A (M, K),  B stored (N, K)   dx = dy · Wᵀ        (input gradient; tied LM head forward)
//   tn:        A stored (K, M), B (K, N)    dW = xᵀ · dy        (weight gradient)
//   row_nn / row_nt: the same products for M = 1 (a decode step): one invocation per output column, no
//                    workgroup memory, so a single row does not leave 15 of every 16 invocations idle.
// Element offsets let A, B, C and the bias live inside larger buffers (the flat parameter / gradient buffers).
// B is read as raw words: f32 (b_dtype 0, a bitcast: exact) or two 16-bit halves per word, f16 (1) or bf16 (2),
// widened to f32 (a frozen base stored at half the size; the product still accumulates in f32).
// Each invocation computes a 4×4 block of C in registers (64 invocations: a 64-column × 16-row tile per
// workgroup), with no workgroup memory and no barrier: on a software adapter (SwiftShader) barriers and shared
// tiles cost more than the loads they save, and each output is still one sequential sum over k.

struct Dims {
  M: u32,
  N: u32,
  K: u32,
  accumulate: u32,
  a_off: u32,
  b_off: u32,
  c_off: u32,
  bias_off: u32,
  has_bias: u32,
  scale: f32,
  b_dtype: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

// element i of B: an f32 word, or the low (even i) / high (odd i) half of word i / 2
fn b_at(i: u32) -> f32 {
  if (dims.b_dtype == 0u) {
    return bitcast<f32>(b[i]);
  }
  let w = b[i >> 1u];
  if (dims.b_dtype == 1u) {
    return unpack2x16float(w)[i & 1u];
  }
  return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));
}

fn load_a(mode: u32, row: u32, k: u32) -> f32 {
  if (row >= dims.M) {
    return 0.0;
  }
  if (mode == 2u) {
    return a[dims.a_off + k * dims.M + row];
  }
  return a[dims.a_off + row * dims.K + k];
}

fn load_b(mode: u32, k: u32, col: u32) -> f32 {
  if (col >= dims.N) {
    return 0.0;
  }
  if (mode == 1u) {
    return b_at(dims.b_off + col * dims.K + k);
  }
  return b_at(dims.b_off + k * dims.N + col);
}

// One invocation computes a 4×4 block of C: rows 4·gid.y .. +3, columns 4·gid.x .. +3, each a sequential sum
// over k (the order of the CPU reference), with 8 loads per 16 multiply-adds and no workgroup memory or barrier.
fn blocked(mode: u32, gid: vec3<u32>) {
  let row0 = gid.y * 4u;
  let col0 = gid.x * 4u;
  if (row0 >= dims.M || col0 >= dims.N) {
    return;
  }
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  for (var k = 0u; k < dims.K; k = k + 1u) {
    let bv = vec4<f32>(load_b(mode, k, col0), load_b(mode, k, col0 + 1u), load_b(mode, k, col0 + 2u), load_b(mode, k, col0 + 3u));
    acc0 = acc0 + load_a(mode, row0, k) * bv;
    acc1 = acc1 + load_a(mode, row0 + 1u, k) * bv;
    acc2 = acc2 + load_a(mode, row0 + 2u, k) * bv;
    acc3 = acc3 + load_a(mode, row0 + 3u, k) * bv;
  }
  store_block(row0, col0, acc0);
  store_block(row0 + 1u, col0, acc1);
  store_block(row0 + 2u, col0, acc2);
  store_block(row0 + 3u, col0, acc3);
}

fn store_block(row: u32, col0: u32, acc: vec4<f32>) {
  if (row >= dims.M) {
    return;
  }
  for (var j = 0u; j < 4u; j = j + 1u) {
    if (col0 + j < dims.N) {
      finish(row, col0 + j, acc[j]);
    }
  }
}

@compute @workgroup_size(16, 4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  blocked(0u, gid);
}

@compute @workgroup_size(16, 4)
fn nt(@builtin(global_invocation_id) gid: vec3<u32>) {
  blocked(1u, gid);
}

@compute @workgroup_size(16, 4)
fn tn(@builtin(global_invocation_id) gid: vec3<u32>) {
  blocked(2u, gid);
}

fn finish(row: u32, col: u32, acc_in: f32) {
  var acc = acc_in * dims.scale;
  if (dims.has_bias != 0u) {
    acc = acc + bias[dims.bias_off + col];
  }
  let idx = dims.c_off + row * dims.N + col;
  if (dims.accumulate != 0u) {
    acc = acc + c[idx];
  }
  c[idx] = acc;
}

@compute @workgroup_size(64)
fn row_nn(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col = gid.x;
  if (col >= dims.N) {
    return;
  }
  var acc = 0.0;
  for (var k = 0u; k < dims.K; k = k + 1u) {
    acc = acc + a[dims.a_off + k] * b_at(dims.b_off + k * dims.N + col);
  }
  finish(0u, col, acc);
}

@compute @workgroup_size(64)
fn row_nt(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col = gid.x;
  if (col >= dims.N) {
    return;
  }
  var acc = 0.0;
  for (var k = 0u; k < dims.K; k = k + 1u) {
    acc = acc + a[dims.a_off + k] * b_at(dims.b_off + col * dims.K + k);
  }
  finish(0u, col, acc);
}
