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
// 16×16 output tile per workgroup, K walked in 16-wide tiles through workgroup memory. The loop bound comes
// from the uniform buffer, so both barriers sit in uniform control flow.

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

const TILE: u32 = 16u;
var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

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
  if (row >= dims.M || k >= dims.K) {
    return 0.0;
  }
  if (mode == 2u) {
    return a[dims.a_off + k * dims.M + row];
  }
  return a[dims.a_off + row * dims.K + k];
}

fn load_b(mode: u32, k: u32, col: u32) -> f32 {
  if (k >= dims.K || col >= dims.N) {
    return 0.0;
  }
  if (mode == 1u) {
    return b_at(dims.b_off + col * dims.K + k);
  }
  return b_at(dims.b_off + k * dims.N + col);
}

fn tiled(mode: u32, lid: vec3<u32>, wid: vec3<u32>) {
  let row = wid.y * TILE + lid.y;
  let col = wid.x * TILE + lid.x;
  var acc = 0.0;
  let tiles = (dims.K + TILE - 1u) / TILE;
  for (var t = 0u; t < tiles; t = t + 1u) {
    tile_a[lid.y][lid.x] = load_a(mode, row, t * TILE + lid.x);
    tile_b[lid.y][lid.x] = load_b(mode, t * TILE + lid.y, col);
    workgroupBarrier();
    for (var k = 0u; k < TILE; k = k + 1u) {
      acc = acc + tile_a[lid.y][k] * tile_b[k][lid.x];
    }
    workgroupBarrier();
  }
  if (row < dims.M && col < dims.N) {
    acc = acc * dims.scale;
    if (dims.has_bias != 0u) {
      acc = acc + bias[dims.bias_off + col];
    }
    let idx = dims.c_off + row * dims.N + col;
    if (dims.accumulate != 0u) {
      acc = acc + c[idx];
    }
    c[idx] = acc;
  }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  tiled(0u, lid, wid);
}

@compute @workgroup_size(16, 16)
fn nt(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  tiled(1u, lid, wid);
}

@compute @workgroup_size(16, 16)
fn tn(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  tiled(2u, lid, wid);
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
