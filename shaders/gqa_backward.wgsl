// Backward of shaders/gqa.wgsl from dy, without atomics (δ_i = dy_i·y_i = Σ_j P_ij·(dy_i·v_j)):
//   backward_q:   one invocation per (b, h, i):   dq_i = scale·Σ_j P_ij·(dy_i·v_j − δ_i)·k_j
//   backward_kv:  one invocation per (b, g, j):   dv_j = Σ_{h in group g, i} P_ij·dy_i,
//                                                 dk_j = scale·Σ_{h, i} P_ij·(dy_i·v_j − δ_i)·q_i
// dk and dv share one buffer: dk at 0, dv at B·Tk·KV·D. Both are overwritten. D ≤ 256.

struct Dims {
  B: u32,
  Tq: u32,
  Tk: u32,
  H: u32,
  KV: u32,
  D: u32,
  offset: u32,
  has_mask: u32,
  scale: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> probs: array<f32>;
@group(0) @binding(5) var<storage, read> dy: array<f32>;
@group(0) @binding(6) var<storage, read> y: array<f32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

fn delta(qo: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < dims.D; d = d + 1u) {
    s = s + dy[qo + d] * y[qo + d];
  }
  return s;
}

fn dyv(qo: u32, vo: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < dims.D; d = d + 1u) {
    s = s + dy[qo + d] * v[vo + d];
  }
  return s;
}

@compute @workgroup_size(64)
fn backward_q(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = gid.y * nwg.x * 64u + gid.x;
  if (idx >= dims.B * dims.H * dims.Tq) {
    return;
  }
  let i = idx % dims.Tq;
  let h = (idx / dims.Tq) % dims.H;
  let b = idx / (dims.Tq * dims.H);
  let g = h / (dims.H / dims.KV);
  let qo = ((b * dims.Tq + i) * dims.H + h) * dims.D;
  let po = ((b * dims.H + h) * dims.Tq + i) * dims.Tk;
  let last = min(dims.offset + i, dims.Tk - 1u);
  let dl = delta(qo);
  var acc: array<f32, 256>;
  for (var d = 0u; d < dims.D; d = d + 1u) {
    acc[d] = 0.0;
  }
  for (var j = 0u; j <= last; j = j + 1u) {
    let p = probs[po + j];
    if (p == 0.0) {
      continue;
    }
    let ko = ((b * dims.Tk + j) * dims.KV + g) * dims.D;
    let ds = p * (dyv(qo, ko) - dl) * dims.scale;
    for (var d = 0u; d < dims.D; d = d + 1u) {
      acc[d] = acc[d] + ds * k[ko + d];
    }
  }
  for (var d = 0u; d < dims.D; d = d + 1u) {
    out[qo + d] = acc[d];
  }
}

@compute @workgroup_size(64)
fn backward_kv(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = gid.y * nwg.x * 64u + gid.x;
  if (idx >= dims.B * dims.KV * dims.Tk) {
    return;
  }
  let j = idx % dims.Tk;
  let g = (idx / dims.Tk) % dims.KV;
  let b = idx / (dims.Tk * dims.KV);
  let group = dims.H / dims.KV;
  let ko = ((b * dims.Tk + j) * dims.KV + g) * dims.D;
  let dvOff = dims.B * dims.Tk * dims.KV * dims.D;
  var dk: array<f32, 256>;
  var dv: array<f32, 256>;
  for (var d = 0u; d < dims.D; d = d + 1u) {
    dk[d] = 0.0;
    dv[d] = 0.0;
  }
  for (var hh = 0u; hh < group; hh = hh + 1u) {
    let h = g * group + hh;
    for (var i = 0u; i < dims.Tq; i = i + 1u) {
      if (dims.offset + i < j) {
        continue;
      }
      let p = probs[((b * dims.H + h) * dims.Tq + i) * dims.Tk + j];
      if (p == 0.0) {
        continue;
      }
      let qo = ((b * dims.Tq + i) * dims.H + h) * dims.D;
      let ds = p * (dyv(qo, ko) - delta(qo)) * dims.scale;
      for (var d = 0u; d < dims.D; d = d + 1u) {
        dv[d] = dv[d] + p * dy[qo + d];
        dk[d] = dk[d] + ds * q[qo + d];
      }
    }
  }
  for (var d = 0u; d < dims.D; d = d + 1u) {
    out[ko + d] = dk[d];
    out[dvOff + ko + d] = dv[d];
  }
}
