// Backward of shaders/attention.wgsl for the training case (t0 = 0, nq = T).
//   backward_q:   per (b, h, t): dp_s = dout_t·v_s;  dz_s = p_s·(dp_s − Σ_r p_r·dp_r)  (softmax backward)
//                 stores dz in datt (B, H, T, T) and writes dq_t = scale·Σ_s dz_s·k_s
//   backward_kv:  per (b, h, s): dk_s = scale·Σ_{t≥s} dz_{t,s}·q_t,  dv_s = Σ_{t≥s} p_{t,s}·dout_t
// Each invocation owns the gradient rows it writes, so there are no atomics and the result is deterministic.

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
@group(0) @binding(2) var<storage, read> att: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read_write> datt: array<f32>;
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;

@compute @workgroup_size(64)
fn backward_q(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = gid.x;
  if (idx >= dims.B * dims.H * dims.T) {
    return;
  }
  let t = idx % dims.T;
  let bh = idx / dims.T;
  let h = bh % dims.H;
  let b = bh / dims.H;
  let C = dims.C;
  let hs = C / dims.H;
  let C3 = 3u * C;
  let row = idx * dims.T;
  let do_base = (b * dims.T + t) * C + h * hs;
  var dsum = 0.0;
  for (var s = 0u; s <= t; s = s + 1u) {
    let v_base = (b * dims.T + s) * C3 + 2u * C + h * hs;
    var dp = 0.0;
    for (var d = 0u; d < hs; d = d + 1u) {
      dp = dp + dout[do_base + d] * qkv[v_base + d];
    }
    datt[row + s] = dp;
    dsum = dsum + att[row + s] * dp;
  }
  for (var s = 0u; s < dims.T; s = s + 1u) {
    if (s <= t) {
      datt[row + s] = att[row + s] * (datt[row + s] - dsum);
    } else {
      datt[row + s] = 0.0;
    }
  }
  let q_base = (b * dims.T + t) * C3 + h * hs;
  for (var d = 0u; d < hs; d = d + 1u) {
    var acc = 0.0;
    for (var s = 0u; s <= t; s = s + 1u) {
      acc = acc + datt[row + s] * qkv[(b * dims.T + s) * C3 + C + h * hs + d];
    }
    dqkv[q_base + d] = acc * dims.scale;
  }
}

@compute @workgroup_size(64)
fn backward_kv(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = gid.x;
  if (idx >= dims.B * dims.H * dims.T) {
    return;
  }
  let s = idx % dims.T;
  let bh = idx / dims.T;
  let h = bh % dims.H;
  let b = bh / dims.H;
  let C = dims.C;
  let hs = C / dims.H;
  let C3 = 3u * C;
  let k_base = (b * dims.T + s) * C3 + C + h * hs;
  for (var d = 0u; d < hs; d = d + 1u) {
    var dk = 0.0;
    var dv = 0.0;
    for (var t = s; t < dims.T; t = t + 1u) {
      let a = (bh * dims.T + t) * dims.T + s;
      dk = dk + datt[a] * qkv[(b * dims.T + t) * C3 + h * hs + d];
      dv = dv + att[a] * dout[(b * dims.T + t) * C + h * hs + d];
    }
    dqkv[k_base + d] = dk * dims.scale;
    dqkv[k_base + C + d] = dv;
  }
}
