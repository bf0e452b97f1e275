// Fused log-softmax + target gather: per-token log-prob and entropy without sending (rows, V) probabilities
// to the host. Logits row n = b·T + t predicts token t+1 of sequence b; z = logits / temperature.
//   forward:   logp[b, t+1] = z_y − lse(z),  entropy[b, t+1] = lse − Σ p·z,  both 0 where mask[b, t+1] = 0;
//              position 0 of each sequence has no prediction (0). lse per row is kept for the backward.
//   backward:  for the loss L = −Σ w·logp:  dlogits[n, v] = w[b, t+1]·(p_v − 1[v = y]) / temperature
// forward runs one invocation per row; backward one per (row, v).

struct Dims {
  B: u32,
  T: u32,
  V: u32,
  _p0: u32,
  inv_temp: f32,
  _p1: u32,
  _p2: u32,
  _p3: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;
@group(0) @binding(3) var<storage, read> mask: array<f32>;   // forward: mask; backward: weights
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_a: array<f32>; // forward: logp; backward: dlogits
@group(0) @binding(6) var<storage, read_write> out_b: array<f32>; // forward: entropy

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.B * dims.T) {
    return;
  }
  let t = n % dims.T;
  let b = n / dims.T;
  if (t == 0u) {
    out_a[n] = 0.0;
    out_b[n] = 0.0;
  }
  let base = n * dims.V;
  var mx = -3.0e38;
  for (var v = 0u; v < dims.V; v = v + 1u) {
    mx = max(mx, logits[base + v] * dims.inv_temp);
  }
  var sum = 0.0;
  var pz = 0.0;
  for (var v = 0u; v < dims.V; v = v + 1u) {
    let z = logits[base + v] * dims.inv_temp;
    let e = exp(z - mx);
    sum = sum + e;
    pz = pz + e * z;
  }
  let l = mx + log(sum);
  lse[n] = l;
  if (t + 1u < dims.T) {
    let target_pos = b * dims.T + t + 1u;
    let y = min(tokens[target_pos], dims.V - 1u);
    // select, not a product: a masked position must be exactly +0, never -0 or NaN.
    let keep = mask[target_pos] != 0.0;
    out_a[target_pos] = select(0.0, logits[base + y] * dims.inv_temp - l, keep);
    out_b[target_pos] = select(0.0, l - pz / sum, keep);
  }
}

@compute @workgroup_size(64)
fn backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.y * nwg.x * 64u + gid.x;
  if (i >= dims.B * dims.T * dims.V) {
    return;
  }
  let v = i % dims.V;
  let n = i / dims.V;
  let t = n % dims.T;
  if (t + 1u >= dims.T) {
    out_a[i] = 0.0;
    return;
  }
  let target_pos = n + 1u;
  let w = mask[target_pos];
  let p = exp(logits[i] * dims.inv_temp - lse[n]);
  var g = p;
  if (v == tokens[target_pos]) {
    g = g - 1.0;
  }
  out_a[i] = w * g * dims.inv_temp;
}
