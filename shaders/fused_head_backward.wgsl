// Backward of shaders/fused_head.wgsl for L = −Σ_n w_n·logp_n, recomputing each logit from the saved lse
// (∂L/∂z_v = w·(p_v − δ_v,tgt)/τ; a row without a tgt contributes nothing):
//   backward_h:  one invocation per row,         dh_n = Σ_v ∂L/∂z_nv·W_v               (binding 6 is dh, overwritten)
//   backward_w:  one invocation per vocab id v,  grads[g_off + v·C ..] += Σ_n ∂L/∂z_nv·h_n  (binding 6 is grads)

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
@group(0) @binding(4) var<storage, read> weights: array<f32>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

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

fn dz(n: u32, v: u32) -> f32 {
  let tgt = targets[n];
  if (tgt >= dims.V) {
    return 0.0;
  }
  var dot = 0.0;
  for (var c = 0u; c < dims.C; c = c + 1u) {
    dot = dot + h[n * dims.C + c] * w_at(dims.w_off + v * dims.C + c);
  }
  let p = exp(dot * dims.inv_temp - stats[3u * n + 2u]);
  var g = p;
  if (v == tgt) {
    g = p - 1.0;
  }
  return weights[n] * g * dims.inv_temp;
}

@compute @workgroup_size(64)
fn backward_h(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = gid.x;
  if (n >= dims.N) {
    return;
  }
  for (var c = 0u; c < dims.C; c = c + 1u) {
    out[n * dims.C + c] = 0.0;
  }
  for (var v = 0u; v < dims.V; v = v + 1u) {
    let g = dz(n, v);
    for (var c = 0u; c < dims.C; c = c + 1u) {
      out[n * dims.C + c] = out[n * dims.C + c] + g * w_at(dims.w_off + v * dims.C + c);
    }
  }
}

@compute @workgroup_size(64)
fn backward_w(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let v = gid.y * nwg.x * 64u + gid.x;
  if (v >= dims.V) {
    return;
  }
  for (var n = 0u; n < dims.N; n = n + 1u) {
    let g = dz(n, v);
    for (var c = 0u; c < dims.C; c = c + 1u) {
      out[dims.g_off + v * dims.C + c] = out[dims.g_off + v * dims.C + c] + g * h[n * dims.C + c];
    }
  }
}
