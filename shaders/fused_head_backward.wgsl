// Backward of shaders/fused_head.wgsl for L = −Σ_n w_n·logp_n, one vocabulary chunk at a time: the chunk's raw
// logits (N, width), recomputed by the matmul kernel, become ∂L/∂z in place (∂L/∂z_v = w·(p_v − δ_v,tgt)/τ with
// p from the saved lse; a row without a tgt contributes nothing); the matmul kernel then adds dz·W_chunk to dh and
// dzᵀ·h to the head's gradient. One invocation per element of the chunk.

struct Dims {
  N: u32,
  C: u32,
  V: u32,
  w_off: u32,
  inv_temp: f32,
  g_off: u32,
  w_dtype: u32,
  _p1: u32,
}

struct Chunk {
  v0: u32,
  width: u32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<uniform> chunk: Chunk;
@group(0) @binding(2) var<storage, read_write> logits: array<f32>;
@group(0) @binding(3) var<storage, read> targets: array<u32>;
@group(0) @binding(4) var<storage, read> weights: array<f32>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;

@compute @workgroup_size(64)
fn dz(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.y * nwg.x * 64u + gid.x;
  if (i >= dims.N * chunk.width) {
    return;
  }
  let n = i / chunk.width;
  let v = chunk.v0 + i % chunk.width;
  let tgt = targets[n];
  if (tgt >= dims.V) {
    logits[i] = 0.0;
    return;
  }
  let p = exp(logits[i] * dims.inv_temp - stats[3u * n + 2u]);
  var g = p;
  if (v == tgt) {
    g = p - 1.0;
  }
  logits[i] = weights[n] * g * dims.inv_temp;
}
