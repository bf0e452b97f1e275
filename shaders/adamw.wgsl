// AdamW (Loshchilov & Hutter 2019) over ONE flat parameter buffer, with global-norm gradient clipping.
//   sumsq:   each workgroup writes Σ g² over a grid-strided slice of the gradients to partial[wg]
//   norm:    one workgroup adds the partials: norm[0] = √Σ g²
//   update:  g ← g·min(1, max_norm / (norm + 1e-6)) (max_norm ≤ 0: no clipping)
//            m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  m̂ = m / bc1;  v̂ = v / bc2
//            p ← p − lr·(m̂ / (√v̂ + eps) + wd·p),  wd applied only to elements below decay_end
// The layout puts every weight matrix first, so decoupled weight decay covers matrices and embeddings and
// skips biases and LayerNorm gains (as in nanoGPT).

struct Dims {
  n: u32,
  decay_end: u32,
  partials: u32,
  _p0: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  wd: f32,
  max_norm: f32,
  bc1: f32,
  bc2: f32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> grads: array<f32>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<f32>;
@group(0) @binding(4) var<storage, read_write> m: array<f32>;
@group(0) @binding(5) var<storage, read_write> v: array<f32>;

var<workgroup> scratch: array<f32, 256>;

@compute @workgroup_size(256)
fn sumsq(
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
) {
  let stride = nwg.x * 256u;
  var acc = 0.0;
  for (var i = wid.x * 256u + lid.x; i < dims.n; i = i + stride) {
    let g = grads[i];
    acc = acc + g * g;
  }
  scratch[lid.x] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (lid.x < s) {
      scratch[lid.x] = scratch[lid.x] + scratch[lid.x + s];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    partial[wid.x] = scratch[0];
  }
}

// partial[0 .. partials) holds the per-workgroup sums; the norm goes to partial[partials].
@compute @workgroup_size(256)
fn norm(@builtin(local_invocation_id) lid: vec3<u32>) {
  var acc = 0.0;
  for (var i = lid.x; i < dims.partials; i = i + 256u) {
    acc = acc + partial[i];
  }
  scratch[lid.x] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (lid.x < s) {
      scratch[lid.x] = scratch[lid.x] + scratch[lid.x + s];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    partial[dims.partials] = sqrt(scratch[0]);
  }
}

@compute @workgroup_size(64)
fn update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.y * nwg.x * 64u + gid.x;
  if (i >= dims.n) {
    return;
  }
  var scale = 1.0;
  if (dims.max_norm > 0.0) {
    scale = min(1.0, dims.max_norm / (partial[dims.partials] + 1e-6));
  }
  let g = grads[i] * scale;
  let mi = dims.beta1 * m[i] + (1.0 - dims.beta1) * g;
  let vi = dims.beta2 * v[i] + (1.0 - dims.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  let mhat = mi / dims.bc1;
  let vhat = vi / dims.bc2;
  var wd = 0.0;
  if (i < dims.decay_end) {
    wd = dims.wd;
  }
  let p = params[i];
  params[i] = p - dims.lr * (mhat / (sqrt(vhat) + dims.eps) + wd * p);
}
