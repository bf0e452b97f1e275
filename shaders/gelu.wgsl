// GELU, tanh approximation (Hendrycks & Gimpel 2016, as in GPT-2):
//   y = ½·x·(1 + tanh(u)),  u = √(2/π)·(x + 0.044715·x³)
//   dy/dx = ½·(1 + tanh u) + ½·x·(1 − tanh² u)·√(2/π)·(1 + 3·0.044715·x²)
// tanh's argument is clamped to ±15 (tanh is ±1 to f32 precision there) so no implementation overflows exp.

struct Dims {
  n: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const S: f32 = 0.7978845608028654;
const A: f32 = 0.044715;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.y * nwg.x * 64u + gid.x;
}

// out = gelu(x); dy unused
@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.n) {
    return;
  }
  let v = x[i];
  let th = tanh(clamp(S * (v + A * v * v * v), -15.0, 15.0));
  out[i] = 0.5 * v * (1.0 + th);
}

// out = dy · gelu'(x)
@compute @workgroup_size(64)
fn backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.n) {
    return;
  }
  let v = x[i];
  let th = tanh(clamp(S * (v + A * v * v * v), -15.0, 15.0));
  let d = 0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * S * (1.0 + 3.0 * A * v * v);
  out[i] = dy[i] * d;
}
