// C = A · B for row-major f32 matrices.
//   A: (M, K)   B: (K, N)   C: (M, N)
// One invocation per output element; 16×16 workgroups. Deliberately untiled: it is the readable baseline that
// the CPU reference in src/engine/cpu/matmul.ts checks, and the shape of the later transposed variants.

struct Dims {
  M: u32,
  N: u32,
  K: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let row = gid.y;
  let col = gid.x;
  if (row >= dims.M || col >= dims.N) {
    return;
  }
  var acc = 0.0;
  for (var k = 0u; k < dims.K; k = k + 1u) {
    acc = acc + a[row * dims.K + k] * b[k * dims.N + col];
  }
  c[row * dims.N + col] = acc;
}
