// Causal multi-head self-attention (Vaswani et al. 2017), softmax(q·kᵀ·scale + causal mask)·v.
// qkv: rows of 3C values [q | k | v]; head h uses channels h·hs .. (h+1)·hs of each part; hs = C / H.
// The qkv buffer holds T rows per sequence; queries are rows t0 .. t0+nq−1 (t0 = 0, nq = T when training; a
// decode step with a KV cache has t0 = position, nq = 1). Query t attends to keys 0..t.
//   att: probabilities (B, H, nq, T) (zero above the diagonal); out: (B, nq, C)
// forward: one invocation per (b, h, query).

struct Dims {
  B: u32,
  T: u32,
  C: u32,
  H: u32,
  t0: u32,
  nq: u32,
  scale: f32,
  _p0: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> att: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = gid.x;
  if (idx >= dims.B * dims.H * dims.nq) {
    return;
  }
  let qi = idx % dims.nq;
  let bh = idx / dims.nq;
  let h = bh % dims.H;
  let b = bh / dims.H;
  let t = dims.t0 + qi;
  let C = dims.C;
  let hs = C / dims.H;
  let C3 = 3u * C;
  let q_base = (b * dims.T + t) * C3 + h * hs;
  let att_base = idx * dims.T;
  var mx = -3.0e38;
  for (var s = 0u; s <= t; s = s + 1u) {
    let k_base = (b * dims.T + s) * C3 + C + h * hs;
    var dot = 0.0;
    for (var d = 0u; d < hs; d = d + 1u) {
      dot = dot + qkv[q_base + d] * qkv[k_base + d];
    }
    dot = dot * dims.scale;
    att[att_base + s] = dot;
    mx = max(mx, dot);
  }
  var sum = 0.0;
  for (var s = 0u; s <= t; s = s + 1u) {
    let e = exp(att[att_base + s] - mx);
    att[att_base + s] = e;
    sum = sum + e;
  }
  let inv = 1.0 / sum;
  for (var s = 0u; s < dims.T; s = s + 1u) {
    if (s <= t) {
      att[att_base + s] = att[att_base + s] * inv;
    } else {
      att[att_base + s] = 0.0;
    }
  }
  let out_base = (b * dims.nq + qi) * C + h * hs;
  for (var d = 0u; d < hs; d = d + 1u) {
    var acc = 0.0;
    for (var s = 0u; s <= t; s = s + 1u) {
      acc = acc + att[att_base + s] * qkv[(b * dims.T + s) * C3 + 2u * C + h * hs + d];
    }
    out[out_base + d] = acc;
  }
}
