// The output head fused with the log-softmax (CPU reference: src/engine/cpu/fusedLogprob.ts), one vocabulary
// chunk at a time: the chunk's raw logits h_n·W_v (N, width) come from the matmul kernel into a small workspace,
// and `chunk` folds them into each row's running online log-sum-exp (max m, Σe^(z−m), Σe^(z−m)·z, the target's z;
// z = dot / τ), so no (N·V) logits exist. The last chunk writes stats (3 per row): logp of the tgt (0 when the tgt
// is 0xFFFFFFFF: none), entropy, lse. One invocation per row; the vocabulary is walked in order.

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

struct Chunk {
  v0: u32,
  width: u32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<uniform> chunk: Chunk;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<storage, read> targets: array<u32>;
@group(0) @binding(4) var<storage, read_write> state: array<f32>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

@compute @workgroup_size(64)
fn chunk_stats(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.N) {
    return;
  }
  var m = -3.0e38;
  var s = 0.0;
  var sz = 0.0;
  var zt = 0.0;
  if (chunk.v0 > 0u) {
    m = state[4u * n];
    s = state[4u * n + 1u];
    sz = state[4u * n + 2u];
    zt = state[4u * n + 3u];
  }
  let tgt = targets[n];
  for (var j = 0u; j < chunk.width; j = j + 1u) {
    let z = logits[n * chunk.width + j] * dims.inv_temp;
    if (z > m) {
      let r = exp(m - z);
      s = s * r;
      sz = sz * r;
      m = z;
    }
    let e = exp(z - m);
    s = s + e;
    sz = sz + e * z;
    if (chunk.v0 + j == tgt) {
      zt = z;
    }
  }
  if (chunk.v0 + chunk.width < dims.V) {
    state[4u * n] = m;
    state[4u * n + 1u] = s;
    state[4u * n + 2u] = sz;
    state[4u * n + 3u] = zt;
    return;
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
