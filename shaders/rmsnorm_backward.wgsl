// Backward of shaders/rmsnorm.wgsl:
//   backward:         one invocation per row, dx (=|+=) rstd·(dy·w) − x·rstd³/C·Σ(dy·w·x)  (binding 4 is dx;
//                     accumulate = 1 adds, for a residual stream's gradient)
//   backward_params:  one invocation per channel, grads[g_off + c] += Σ_rows dy·x·rstd  (binding 4 is grads)

struct Dims {
  N: u32,
  C: u32,
  w_off: u32,
  g_off: u32,
  accumulate: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> rstd: array<f32>;
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
  let r = rstd[n];
  var dot = 0.0;
  for (var c = 0u; c < dims.C; c = c + 1u) {
    dot = dot + dy[base + c] * params[dims.w_off + c] * x[base + c];
  }
  let k = dot * r * r * r / f32(dims.C);
  for (var c = 0u; c < dims.C; c = c + 1u) {
    let g = r * dy[base + c] * params[dims.w_off + c] - x[base + c] * k;
    if (dims.accumulate == 1u) {
      out[base + c] = out[base + c] + g;
    } else {
      out[base + c] = g;
    }
  }
}

@compute @workgroup_size(64)
fn backward_params(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= dims.C) {
    return;
  }
  var acc = 0.0;
  for (var n = 0u; n < dims.N; n = n + 1u) {
    acc = acc + dy[n * dims.C + c] * x[n * dims.C + c] * rstd[n];
  }
  out[dims.g_off + c] = out[dims.g_off + c] + acc;
}
