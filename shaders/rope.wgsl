// Rotary position embeddings (Su et al. 2021) in the rotate-half layout, in place on x (N rows of `heads`
// heads of D values): the pair (i, i + D/2) of row n is rotated by the angle whose cos / sin are stored at
// pos[n]·D/2 + i. sign = −1 rotates backwards: the backward pass (the rotation is orthogonal). One invocation
// per (row, head, pair).

struct Dims {
  N: u32,
  heads: u32,
  D: u32,
  sin_off: u32,
  sign: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
@group(0) @binding(2) var<storage, read> cs: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(64)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = dims.D / 2u;
  let i = gid.y * nwg.x * 64u + gid.x;
  if (i >= dims.N * dims.heads * half) {
    return;
  }
  let k = i % half;
  let nh = i / half;
  let n = nh / dims.heads;
  let o = nh * dims.D;
  // cs holds the cos table (positions · D/2), and the sin table from sin_off
  let t = pos[n] * half + k;
  let c = cs[t];
  let s = dims.sign * cs[dims.sin_off + t];
  let a = x[o + k];
  let b = x[o + k + half];
  x[o + k] = a * c - b * s;
  x[o + k + half] = b * c + a * s;
}
