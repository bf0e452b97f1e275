// Causal grouped-query attention with a key padding mask (the CPU reference is src/engine/cpu/gqa.ts): query head
// h reads kv head h / (H / KV); query i of row b sits at key index offset + i and attends keys j ≤ offset + i
// whose mask is 1 (has_mask = 0: every key); a query with no key outputs zeros. Layouts: q (B·Tq, H·D), k and v
// (B·Tk, KV·D), y like q, probabilities (B, H, Tq, Tk). One invocation per (b, h, i); D ≤ 256.

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
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> probs: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;

fn attends(b: u32, j: u32) -> bool {
  return dims.has_mask == 0u || mask[b * dims.Tk + j] != 0.0;
}

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
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
  var mx = -3.0e38;
  var seen = false;
  for (var j = 0u; j <= last; j = j + 1u) {
    if (!attends(b, j)) {
      continue;
    }
    let ko = ((b * dims.Tk + j) * dims.KV + g) * dims.D;
    var dot = 0.0;
    for (var d = 0u; d < dims.D; d = d + 1u) {
      dot = dot + q[qo + d] * k[ko + d];
    }
    let s = dot * dims.scale;
    probs[po + j] = s;
    mx = max(mx, s);
    seen = true;
  }
  var sum = 0.0;
  for (var j = 0u; j < dims.Tk; j = j + 1u) {
    if (j <= last && seen && attends(b, j)) {
      let e = exp(probs[po + j] - mx);
      probs[po + j] = e;
      sum = sum + e;
    } else {
      probs[po + j] = 0.0;
    }
  }
  var acc: array<f32, 256>;
  for (var d = 0u; d < dims.D; d = d + 1u) {
    acc[d] = 0.0;
  }
  if (seen) {
    for (var j = 0u; j <= last; j = j + 1u) {
      let p = probs[po + j] / sum;
      probs[po + j] = p;
      if (p == 0.0) {
        continue;
      }
      let vo = ((b * dims.Tk + j) * dims.KV + g) * dims.D;
      for (var d = 0u; d < dims.D; d = d + 1u) {
        acc[d] = acc[d] + p * v[vo + d];
      }
    }
  }
  for (var d = 0u; d < dims.D; d = d + 1u) {
    y[qo + d] = acc[d];
  }
}
