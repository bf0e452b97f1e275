// Token + position embedding and its gradient.
//   forward:       out[n, c] = wte[tokens[n], c] + wpe[pos0 + n mod T, c]        n = b·T + t
//   backward_wte:  dwte[v, c] += Σ_{n : tokens[n] = v} dout[n, c]   (one invocation per (v, c): no atomics)
//   backward_wpe:  dwpe[t, c] += Σ_b dout[b·T + t, c]
//   gather:        out[n, c] = wte[tokens[n], c]   (token embedding only: models whose positions are rotary)
// wte and wpe live in the flat parameter (or gradient) buffer at wte_off / wpe_off. forward and gather read the
// table as raw words: f32 (dtype 0, exact) or packed 16-bit halves, f16 (1) or bf16 (2), as matmul.wgsl's B.

struct Dims {
  N: u32,
  T: u32,
  C: u32,
  V: u32,
  wte_off: u32,
  wpe_off: u32,
  pos0: u32,
  dtype: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

fn src_at(i: u32) -> f32 {
  if (dims.dtype == 0u) {
    return bitcast<f32>(src[i]);
  }
  let w = src[i >> 1u];
  if (dims.dtype == 1u) {
    return unpack2x16float(w)[i & 1u];
  }
  return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));
}

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return gid.y * nwg.x * 64u + gid.x;
}

// src = params, dst = out (N, C)
@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.N * dims.C) {
    return;
  }
  let n = i / dims.C;
  let c = i % dims.C;
  let tok = min(tokens[n], dims.V - 1u);
  let t = dims.pos0 + n % dims.T;
  dst[i] = src_at(dims.wte_off + tok * dims.C + c) + src_at(dims.wpe_off + t * dims.C + c);
}

// src = params, dst = out (N, C)
@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.N * dims.C) {
    return;
  }
  let n = i / dims.C;
  let c = i % dims.C;
  let tok = min(tokens[n], dims.V - 1u);
  dst[i] = src_at(dims.wte_off + tok * dims.C + c);
}

// src = dout (N, C), dst = grads
@compute @workgroup_size(64)
fn backward_wte(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.V * dims.C) {
    return;
  }
  let v = i / dims.C;
  let c = i % dims.C;
  var acc = 0.0;
  for (var n = 0u; n < dims.N; n = n + 1u) {
    if (tokens[n] == v) {
      acc = acc + bitcast<f32>(src[n * dims.C + c]);
    }
  }
  dst[dims.wte_off + i] = dst[dims.wte_off + i] + acc;
}

// src = dout (N, C), dst = grads
@compute @workgroup_size(64)
fn backward_wpe(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = flat(gid, nwg);
  if (i >= dims.T * dims.C) {
    return;
  }
  let t = i / dims.C;
  let c = i % dims.C;
  let B = dims.N / dims.T;
  var acc = 0.0;
  for (var b = 0u; b < B; b = b + 1u) {
    acc = acc + bitcast<f32>(src[(b * dims.T + t) * dims.C + c]);
  }
  dst[dims.wpe_off + i] = dst[dims.wpe_off + i] + acc;
}
