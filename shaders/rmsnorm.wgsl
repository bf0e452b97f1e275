// RMSNorm over the last dimension (Zhang & Sennrich 2019), the Llama family's norm:
//   y = x·rstd·w,  rstd = 1/√(mean(x²) + eps)
// forward: one invocation per row; stores rstd per row for the backward (shaders/rmsnorm_backward.wgsl).
// The weights are read at w_off in the flat parameter buffer.

struct Dims {
  N: u32,
  C: u32,
  w_off: u32,
  _p0: u32,
  eps: f32,
  _p1: u32,
  _p2: u32,
  _p3: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstd: array<f32>;

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.N) {
    return;
  }
  let base = n * dims.C;
  var ss = 0.0;
  for (var c = 0u; c < dims.C; c = c + 1u) {
    ss = ss + x[base + c] * x[base + c];
  }
  let r = 1.0 / sqrt(ss / f32(dims.C) + dims.eps);
  for (var c = 0u; c < dims.C; c = c + 1u) {
    y[base + c] = x[base + c] * r * params[dims.w_off + c];
  }
  rstd[n] = r;
}
