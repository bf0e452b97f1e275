// Backward of shaders/layernorm.wgsl (see the formulas there).
//   backward:         one invocation per row, dx += ... (binding 4 is dx)
//   backward_params:  one invocation per channel, grads[w_off + c] += Σ dy·x̂, grads[b_off + c] += Σ dy

struct Dims {
  N: u32,
  C: u32,
  w_off: u32,
  b_off: u32,
  eps: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> stats: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> params: array<f32>;

@compute @workgroup_size(64)
fn backward(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.N) {
    return;
  }
  let base = n * dims.C;
  let mean = stats[2u * n];
  let rstd = stats[2u * n + 1u];
  var g_mean = 0.0;
  var gx_mean = 0.0;
  for (var c = 0u; c < dims.C; c = c + 1u) {
    let g = dy[base + c] * params[dims.w_off + c];
    let xh = (x[base + c] - mean) * rstd;
    g_mean = g_mean + g;
    gx_mean = gx_mean + g * xh;
  }
  g_mean = g_mean / f32(dims.C);
  gx_mean = gx_mean / f32(dims.C);
  for (var c = 0u; c < dims.C; c = c + 1u) {
    let g = dy[base + c] * params[dims.w_off + c];
    let xh = (x[base + c] - mean) * rstd;
    out[base + c] = out[base + c] + rstd * (g - g_mean - xh * gx_mean);
  }
}

@compute @workgroup_size(64)
fn backward_params(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= dims.C) {
    return;
  }
  var dw = 0.0;
  var db = 0.0;
  for (var n = 0u; n < dims.N; n = n + 1u) {
    let g = dy[n * dims.C + c];
    let xh = (x[n * dims.C + c] - stats[2u * n]) * stats[2u * n + 1u];
    dw = dw + g * xh;
    db = db + g;
  }
  out[dims.w_off + c] = out[dims.w_off + c] + dw;
  out[dims.b_off + c] = out[dims.b_off + c] + db;
}
