// The output head fused with the log-softmax (CPU reference: src/engine/cpu/fusedLogprob.ts): per hidden row n,
// z_v = h_n·W_v / τ over the vocabulary with an online log-sum-exp (running max, Σe^(z−m), Σe^(z−m)·z), so no
// logits are stored. Writes stats (3 per row): logp of the tgt (0 when the tgt is 0xFFFFFFFF: none),
// entropy, lse. W (V, C) is read at w_off in the parameter buffer. One invocation per row.

struct Dims {
  N: u32,
  C: u32,
  V: u32,
  w_off: u32,
  inv_temp: f32,
  g_off: u32,
  w_dtype: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> h: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<u32>;
@group(0) @binding(3) var<storage, read> targets: array<u32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;

// element i of the parameter buffer: an f32 word (w_dtype 0, exact) or a packed 16-bit half, f16 (1) or bf16 (2)
fn w_at(i: u32) -> f32 {
  if (dims.w_dtype == 0u) {
    return bitcast<f32>(params[i]);
  }
  let w = params[i >> 1u];
  if (dims.w_dtype == 1u) {
    return unpack2x16float(w)[i & 1u];
  }
  return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));
}

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.N) {
    return;
  }
  var m = -3.0e38;
  var s = 0.0;
  var sz = 0.0;
  var zt = 0.0;
  let tgt = targets[n];
  for (var v = 0u; v < dims.V; v = v + 1u) {
    var dot = 0.0;
    for (var c = 0u; c < dims.C; c = c + 1u) {
      dot = dot + h[n * dims.C + c] * w_at(dims.w_off + v * dims.C + c);
    }
    let z = dot * dims.inv_temp;
    if (z > m) {
      let r = exp(m - z);
      s = s * r;
      sz = sz * r;
      m = z;
    }
    let e = exp(z - m);
    s = s + e;
    sz = sz + e * z;
    if (v == tgt) {
      zt = z;
    }
  }
  let lse = m + log(s);
  if (tgt < dims.V) {
    stats[3u * n] = zt - lse;
  } else {
    stats[3u * n] = 0.0;
  }
  stats[3u * n + 1u] = lse - sz / s;
  stats[3u * n + 2u] = lse;
}
