// The SwiGLU gate (Shazeer 2020), elementwise: a = silu(g)·u, silu(g) = g·σ(g). The backward is
// shaders/swiglu_backward.wgsl.

struct Dims {
  n: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read_write> a: array<f32>;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.y * nwg.x * 64u + gid.x;
}

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.n) {
    return;
  }
  let s = 1.0 / (1.0 + exp(-g[i]));
  a[i] = g[i] * s * u[i];
}
