// Backward of shaders/swiglu.wgsl: dg = da·u·σ(g)(1 + g(1 − σ(g))), du = da·silu(g).

struct Dims {
  n: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read> da: array<f32>;
@group(0) @binding(4) var<storage, read_write> dg: array<f32>;
@group(0) @binding(5) var<storage, read_write> du: array<f32>;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.y * nwg.x * 64u + gid.x;
}

@compute @workgroup_size(64)
fn backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.n) {
    return;
  }
  let s = 1.0 / (1.0 + exp(-g[i]));
  du[i] = da[i] * g[i] * s;
  dg[i] = da[i] * u[i] * s * (1.0 + g[i] * (1.0 - s));
}
