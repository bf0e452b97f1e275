// Column sums: out[out_off + j] (+)= Σ_i x[i·N + j] for x (M, N). The bias gradient is the column sum of the
// output gradient. One invocation per column, rows walked in order (deterministic, no atomics).

struct Dims {
  M: u32,
  N: u32,
  out_off: u32,
  accumulate: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn colsum(@builtin(global_invocation_id) gid: vec3<u32>) {
  let j = gid.x;
  if (j >= dims.N) {
    return;
  }
  var acc = 0.0;
  for (var i = 0u; i < dims.M; i = i + 1u) {
    acc = acc + x[i * dims.N + j];
  }
  let idx = dims.out_off + j;
  if (dims.accumulate != 0u) {
    acc = acc + out[idx];
  }
  out[idx] = acc;
}
