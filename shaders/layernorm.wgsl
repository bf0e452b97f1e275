// LayerNorm over the last dimension (Ba, Kiros, Hinton 2016): y = (x − μ)·rstd·w + b, rstd = 1/√(σ² + eps).
//   forward:          one invocation per row; also stores (μ, rstd) per row for the backward pass.
//   backward:         dx += rstd·(g − mean(g) − x̂·mean(g·x̂)),  g = dy·w  (accumulates: dx is the residual grad)
//   backward_params:  dw += Σ_rows dy·x̂,  db += Σ_rows dy   (one invocation per channel)

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
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.N) {
    return;
  }
  let base = n * dims.C;
  var mean = 0.0;
  for (var c = 0u; c < dims.C; c = c + 1u) {
    mean = mean + x[base + c];
  }
  mean = mean / f32(dims.C);
  var variance = 0.0;
  for (var c = 0u; c < dims.C; c = c + 1u) {
    let d = x[base + c] - mean;
    variance = variance + d * d;
  }
  variance = variance / f32(dims.C);
  let rstd = 1.0 / sqrt(variance + dims.eps);
  for (var c = 0u; c < dims.C; c = c + 1u) {
    y[base + c] = (x[base + c] - mean) * rstd * params[dims.w_off + c] + params[dims.b_off + c];
  }
  stats[2u * n] = mean;
  stats[2u * n + 1u] = rstd;
}
