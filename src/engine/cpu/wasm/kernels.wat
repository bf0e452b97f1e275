;; The CPU engine's WebAssembly SIMD kernels (assembled by tests/tools/build-wasm.mjs into kernels.wasm.ts):
;; the matmul `gemm` (with `transpose` for packing), and the exp-based row and element kernels of
;; logprobFast.ts and geluFast.ts (`softmax_stats`, `softmax_grad`, `gelu_forward`, `gelu_backward`).
;;
;; gemm:
;;   c (M, 8P) = a (M, K) · b (K, 8P)        gemm(M, P, K, a, ars, aks, bp, ps, ks, c, rowsOuter), bytes
;;
;; a: element (i, k) at a + ars·i + aks·k (bytes): row-major (M, K) has ars = 4K, aks = 4; a stored (K, M) is
;;    read in place with ars = 4, aks = 4M. Rows run in blocks of 4, then one at a time.
;; b: P panels of 8 columns; panel p holds b[k, 8p + j] at bp + ps·p + ks·k + 4j (bytes): packed panels have
;;    ps = 32K, ks = 32; a row-major (K, 8P) b is read in place with ps = 32, ks = 32P.
;; c: row-major f32 with row stride 8P (the caller pads N up to a multiple of 8 with zero columns).
;; `transpose(src, R, C, dst, ldd)` writes dst[c·ldd + r] = src[r·C + c] (f32, byte pointers) in 8 × 8 tiles:
;; the caller's packing of an 'nt' b into panels (ldd = 8) and of a large 'tn' a into rows.
;; Loop order: panels outer (a streamed once per panel; for a small a) or, with rowsOuter ≠ 0, row blocks outer
;; (b streamed once per row block; for an a larger than b, which then stays in cache).
;; The micro-kernel keeps a 4 × 8 block of c in eight f32x4 registers: per k it loads one panel row (two
;; vectors), broadcasts a[i..i+3, k] (v128.load32_splat) and does eight multiply-adds. Each sum runs over
;; k = 0 .. K-1 in order, so results are deterministic. `MADD` is replaced by the build script: a separate
;; multiply and add (f32x4.add ACC (f32x4.mul X B)), or f32x4.relaxed_madd where relaxed SIMD is present.
(module
  (memory (export "memory") 1)
  (global $K (mut i32) (i32.const 0))
  (global $ars (mut i32) (i32.const 0))
  (global $aks (mut i32) (i32.const 0))
  (global $ks (mut i32) (i32.const 0))
  (global $ldc (mut i32) (i32.const 0))

  ;; c[i .. i+3, 8p .. 8p+7] = a[i .. i+3, :] · panel; a0 = address of a[i, 0], cp = address of c[i, 8p]
  (func $tile4 (param $a0 i32) (param $panel i32) (param $cp i32)
    (local $a1 i32) (local $a2 i32) (local $a3 i32) (local $bk i32) (local $bend i32) (local $aks i32)
    (local $ks i32) (local $b0 v128) (local $b1 v128) (local $x v128)
    (local $s00 v128) (local $s01 v128) (local $s10 v128) (local $s11 v128)
    (local $s20 v128) (local $s21 v128) (local $s30 v128) (local $s31 v128)
    (local.set $aks (global.get $aks))
    (local.set $ks (global.get $ks))
    (local.set $a1 (i32.add (local.get $a0) (global.get $ars)))
    (local.set $a2 (i32.add (local.get $a1) (global.get $ars)))
    (local.set $a3 (i32.add (local.get $a2) (global.get $ars)))
    (local.set $bk (local.get $panel))
    (local.set $bend (i32.add (local.get $panel) (i32.mul (global.get $K) (local.get $ks))))
    (block $kDone
      (loop $kLoop
        (br_if $kDone (i32.ge_u (local.get $bk) (local.get $bend)))
        (local.set $b0 (v128.load offset=0 (local.get $bk)))
        (local.set $b1 (v128.load offset=16 (local.get $bk)))
        (local.set $x (v128.load32_splat (local.get $a0)))
        (local.set $s00 (MADD (local.get $x) (local.get $b0) (local.get $s00)))
        (local.set $s01 (MADD (local.get $x) (local.get $b1) (local.get $s01)))
        (local.set $x (v128.load32_splat (local.get $a1)))
        (local.set $s10 (MADD (local.get $x) (local.get $b0) (local.get $s10)))
        (local.set $s11 (MADD (local.get $x) (local.get $b1) (local.get $s11)))
        (local.set $x (v128.load32_splat (local.get $a2)))
        (local.set $s20 (MADD (local.get $x) (local.get $b0) (local.get $s20)))
        (local.set $s21 (MADD (local.get $x) (local.get $b1) (local.get $s21)))
        (local.set $x (v128.load32_splat (local.get $a3)))
        (local.set $s30 (MADD (local.get $x) (local.get $b0) (local.get $s30)))
        (local.set $s31 (MADD (local.get $x) (local.get $b1) (local.get $s31)))
        (local.set $a0 (i32.add (local.get $a0) (local.get $aks)))
        (local.set $a1 (i32.add (local.get $a1) (local.get $aks)))
        (local.set $a2 (i32.add (local.get $a2) (local.get $aks)))
        (local.set $a3 (i32.add (local.get $a3) (local.get $aks)))
        (local.set $bk (i32.add (local.get $bk) (local.get $ks)))
        (br $kLoop)))
    (v128.store offset=0 (local.get $cp) (local.get $s00))
    (v128.store offset=16 (local.get $cp) (local.get $s01))
    (local.set $cp (i32.add (local.get $cp) (global.get $ldc)))
    (v128.store offset=0 (local.get $cp) (local.get $s10))
    (v128.store offset=16 (local.get $cp) (local.get $s11))
    (local.set $cp (i32.add (local.get $cp) (global.get $ldc)))
    (v128.store offset=0 (local.get $cp) (local.get $s20))
    (v128.store offset=16 (local.get $cp) (local.get $s21))
    (local.set $cp (i32.add (local.get $cp) (global.get $ldc)))
    (v128.store offset=0 (local.get $cp) (local.get $s30))
    (v128.store offset=16 (local.get $cp) (local.get $s31)))

  ;; one row: c[i, 8p .. 8p+7] = a[i, :] · panel
  (func $tile1 (param $a0 i32) (param $panel i32) (param $cp i32)
    (local $bk i32) (local $bend i32) (local $b0 v128) (local $b1 v128) (local $x v128)
    (local $s00 v128) (local $s01 v128)
    (local.set $bk (local.get $panel))
    (local.set $bend (i32.add (local.get $panel) (i32.mul (global.get $K) (global.get $ks))))
    (block $kDone
      (loop $kLoop
        (br_if $kDone (i32.ge_u (local.get $bk) (local.get $bend)))
        (local.set $x (v128.load32_splat (local.get $a0)))
        (local.set $b0 (v128.load offset=0 (local.get $bk)))
        (local.set $b1 (v128.load offset=16 (local.get $bk)))
        (local.set $s00 (MADD (local.get $x) (local.get $b0) (local.get $s00)))
        (local.set $s01 (MADD (local.get $x) (local.get $b1) (local.get $s01)))
        (local.set $a0 (i32.add (local.get $a0) (global.get $aks)))
        (local.set $bk (i32.add (local.get $bk) (global.get $ks)))
        (br $kLoop)))
    (v128.store offset=0 (local.get $cp) (local.get $s00))
    (v128.store offset=16 (local.get $cp) (local.get $s01)))

  ;; rows i .. i+n−1 (n = 4 or 1) against panel p
  (func $tile (param $i i32) (param $n i32) (param $p i32) (param $a i32) (param $bp i32) (param $ps i32)
    (param $c i32)
    (local $a0 i32) (local $panel i32) (local $cp i32)
    (local.set $a0 (i32.add (local.get $a) (i32.mul (local.get $i) (global.get $ars))))
    (local.set $panel (i32.add (local.get $bp) (i32.mul (local.get $p) (local.get $ps))))
    (local.set $cp
      (i32.add (local.get $c) (i32.add (i32.mul (local.get $i) (global.get $ldc)) (i32.shl (local.get $p) (i32.const 5)))))
    (if (i32.eq (local.get $n) (i32.const 4))
      (then (call $tile4 (local.get $a0) (local.get $panel) (local.get $cp)))
      (else (call $tile1 (local.get $a0) (local.get $panel) (local.get $cp)))))

  (func (export "gemm")
    (param $M i32) (param $P i32) (param $K i32) (param $a i32) (param $ars i32) (param $aks i32)
    (param $bp i32) (param $ps i32) (param $ks i32) (param $c i32) (param $rowsOuter i32)
    (local $p i32) (local $i i32) (local $n i32)
    (global.set $K (local.get $K))
    (global.set $ars (local.get $ars))
    (global.set $aks (local.get $aks))
    (global.set $ks (local.get $ks))
    (global.set $ldc (i32.shl (local.get $P) (i32.const 5)))
    (if (local.get $rowsOuter)
      (then
        (local.set $i (i32.const 0))
        (block $iDone
          (loop $iLoop
            (br_if $iDone (i32.ge_u (local.get $i) (local.get $M)))
            (local.set $n (select (i32.const 4) (i32.const 1) (i32.le_u (i32.add (local.get $i) (i32.const 4)) (local.get $M))))
            (local.set $p (i32.const 0))
            (block $pDone
              (loop $pLoop
                (br_if $pDone (i32.ge_u (local.get $p) (local.get $P)))
                (call $tile (local.get $i) (local.get $n) (local.get $p) (local.get $a) (local.get $bp) (local.get $ps) (local.get $c))
                (local.set $p (i32.add (local.get $p) (i32.const 1)))
                (br $pLoop)))
            (local.set $i (i32.add (local.get $i) (local.get $n)))
            (br $iLoop))))
      (else
        (local.set $p (i32.const 0))
        (block $pDone
          (loop $pLoop
            (br_if $pDone (i32.ge_u (local.get $p) (local.get $P)))
            (local.set $i (i32.const 0))
            (block $iDone
              (loop $iLoop
                (br_if $iDone (i32.ge_u (local.get $i) (local.get $M)))
                (local.set $n (select (i32.const 4) (i32.const 1) (i32.le_u (i32.add (local.get $i) (i32.const 4)) (local.get $M))))
                (call $tile (local.get $i) (local.get $n) (local.get $p) (local.get $a) (local.get $bp) (local.get $ps) (local.get $c))
                (local.set $i (i32.add (local.get $i) (local.get $n)))
                (br $iLoop)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $pLoop))))))
  (func (export "transpose") (param $src i32) (param $R i32) (param $C i32) (param $dst i32) (param $ldd i32)
    (local $r0 i32) (local $r1 i32) (local $c0 i32) (local $c1 i32) (local $r i32) (local $c i32)
    (block $r0Done
      (loop $r0Loop
        (br_if $r0Done (i32.ge_u (local.get $r0) (local.get $R)))
        (local.set $r1 (select (i32.add (local.get $r0) (i32.const 8)) (local.get $R)
          (i32.lt_u (i32.add (local.get $r0) (i32.const 8)) (local.get $R))))
        (local.set $c0 (i32.const 0))
        (block $c0Done
          (loop $c0Loop
            (br_if $c0Done (i32.ge_u (local.get $c0) (local.get $C)))
            (local.set $c1 (select (i32.add (local.get $c0) (i32.const 8)) (local.get $C)
              (i32.lt_u (i32.add (local.get $c0) (i32.const 8)) (local.get $C))))
            (local.set $r (local.get $r0))
            (block $rDone
              (loop $rLoop
                (br_if $rDone (i32.ge_u (local.get $r) (local.get $r1)))
                (local.set $c (local.get $c0))
                (block $cDone
                  (loop $cLoop
                    (br_if $cDone (i32.ge_u (local.get $c) (local.get $c1)))
                    (f32.store
                      (i32.add (local.get $dst)
                        (i32.shl (i32.add (i32.mul (local.get $c) (local.get $ldd)) (local.get $r)) (i32.const 2)))
                      (f32.load
                        (i32.add (local.get $src)
                          (i32.shl (i32.add (i32.mul (local.get $r) (local.get $C)) (local.get $c)) (i32.const 2)))))
                    (local.set $c (i32.add (local.get $c) (i32.const 1)))
                    (br $cLoop)))
                (local.set $r (i32.add (local.get $r) (i32.const 1)))
                (br $rLoop)))
            (local.set $c0 (i32.add (local.get $c0) (i32.const 8)))
            (br $c0Loop)))
        (local.set $r0 (i32.add (local.get $r0) (i32.const 8)))
        (br $r0Loop))))

  ;; gemm_nt(M, N, K, a, lda, b, ldb, c, ldc): c[i, j] = Σ_k a[i, k]·b[j, k] for a (M, K) and b (N, K), each
  ;; row-major with its own row stride (bytes; rows of a head inside a wider row are read in place), c too.
  ;; Vectorised over k: a 2 × 4 block of c keeps eight f32x4 partial sums (lane l sums k ≡ l mod 4, in k
  ;; order), reduced across lanes at the end, then the K mod 4 tail is added in k order. Columns run in blocks
  ;; of 4 (outer: the four b rows stay in L1 while a streams), rows in pairs; a short block repeats its last
  ;; row or column and stores only the real ones.
  (func $ntTile (param $a0 i32) (param $a1 i32) (param $b0 i32) (param $ldb i32) (param $nb i32)
    (param $c0 i32) (param $c1 i32) (param $two i32)
    (local $b1 i32) (local $b2 i32) (local $b3 i32) (local $o i32) (local $end4 i32) (local $end i32)
    (local $x0 v128) (local $x1 v128) (local $y v128)
    (local $s00 v128) (local $s01 v128) (local $s02 v128) (local $s03 v128)
    (local $s10 v128) (local $s11 v128) (local $s12 v128) (local $s13 v128)
    (local $t00 f32) (local $t01 f32) (local $t02 f32) (local $t03 f32)
    (local $t10 f32) (local $t11 f32) (local $t12 f32) (local $t13 f32) (local $u0 f32) (local $u1 f32)
    (local.set $b1 (select (i32.add (local.get $b0) (local.get $ldb)) (local.get $b0) (i32.gt_u (local.get $nb) (i32.const 1))))
    (local.set $b2 (select (i32.add (local.get $b1) (local.get $ldb)) (local.get $b1) (i32.gt_u (local.get $nb) (i32.const 2))))
    (local.set $b3 (select (i32.add (local.get $b2) (local.get $ldb)) (local.get $b2) (i32.gt_u (local.get $nb) (i32.const 3))))
    (local.set $end (i32.shl (global.get $K) (i32.const 2)))
    (local.set $end4 (i32.and (local.get $end) (i32.const -16)))
    (block $kDone
      (loop $kLoop
        (br_if $kDone (i32.ge_u (local.get $o) (local.get $end4)))
        (local.set $x0 (v128.load (i32.add (local.get $a0) (local.get $o))))
        (local.set $x1 (v128.load (i32.add (local.get $a1) (local.get $o))))
        (local.set $y (v128.load (i32.add (local.get $b0) (local.get $o))))
        (local.set $s00 (MADD (local.get $x0) (local.get $y) (local.get $s00)))
        (local.set $s10 (MADD (local.get $x1) (local.get $y) (local.get $s10)))
        (local.set $y (v128.load (i32.add (local.get $b1) (local.get $o))))
        (local.set $s01 (MADD (local.get $x0) (local.get $y) (local.get $s01)))
        (local.set $s11 (MADD (local.get $x1) (local.get $y) (local.get $s11)))
        (local.set $y (v128.load (i32.add (local.get $b2) (local.get $o))))
        (local.set $s02 (MADD (local.get $x0) (local.get $y) (local.get $s02)))
        (local.set $s12 (MADD (local.get $x1) (local.get $y) (local.get $s12)))
        (local.set $y (v128.load (i32.add (local.get $b3) (local.get $o))))
        (local.set $s03 (MADD (local.get $x0) (local.get $y) (local.get $s03)))
        (local.set $s13 (MADD (local.get $x1) (local.get $y) (local.get $s13)))
        (local.set $o (i32.add (local.get $o) (i32.const 16)))
        (br $kLoop)))
    (local.set $t00 (call $hsum (local.get $s00)))
    (local.set $t01 (call $hsum (local.get $s01)))
    (local.set $t02 (call $hsum (local.get $s02)))
    (local.set $t03 (call $hsum (local.get $s03)))
    (local.set $t10 (call $hsum (local.get $s10)))
    (local.set $t11 (call $hsum (local.get $s11)))
    (local.set $t12 (call $hsum (local.get $s12)))
    (local.set $t13 (call $hsum (local.get $s13)))
    (block $tDone
      (loop $tLoop
        (br_if $tDone (i32.ge_u (local.get $o) (local.get $end)))
        (local.set $u0 (f32.load (i32.add (local.get $a0) (local.get $o))))
        (local.set $u1 (f32.load (i32.add (local.get $a1) (local.get $o))))
        (local.set $t00 (f32.add (local.get $t00) (f32.mul (local.get $u0) (f32.load (i32.add (local.get $b0) (local.get $o))))))
        (local.set $t01 (f32.add (local.get $t01) (f32.mul (local.get $u0) (f32.load (i32.add (local.get $b1) (local.get $o))))))
        (local.set $t02 (f32.add (local.get $t02) (f32.mul (local.get $u0) (f32.load (i32.add (local.get $b2) (local.get $o))))))
        (local.set $t03 (f32.add (local.get $t03) (f32.mul (local.get $u0) (f32.load (i32.add (local.get $b3) (local.get $o))))))
        (local.set $t10 (f32.add (local.get $t10) (f32.mul (local.get $u1) (f32.load (i32.add (local.get $b0) (local.get $o))))))
        (local.set $t11 (f32.add (local.get $t11) (f32.mul (local.get $u1) (f32.load (i32.add (local.get $b1) (local.get $o))))))
        (local.set $t12 (f32.add (local.get $t12) (f32.mul (local.get $u1) (f32.load (i32.add (local.get $b2) (local.get $o))))))
        (local.set $t13 (f32.add (local.get $t13) (f32.mul (local.get $u1) (f32.load (i32.add (local.get $b3) (local.get $o))))))
        (local.set $o (i32.add (local.get $o) (i32.const 4)))
        (br $tLoop)))
    (f32.store offset=0 (local.get $c0) (local.get $t00))
    (if (i32.gt_u (local.get $nb) (i32.const 1)) (then (f32.store offset=4 (local.get $c0) (local.get $t01))))
    (if (i32.gt_u (local.get $nb) (i32.const 2)) (then (f32.store offset=8 (local.get $c0) (local.get $t02))))
    (if (i32.gt_u (local.get $nb) (i32.const 3)) (then (f32.store offset=12 (local.get $c0) (local.get $t03))))
    (if (local.get $two)
      (then
        (f32.store offset=0 (local.get $c1) (local.get $t10))
        (if (i32.gt_u (local.get $nb) (i32.const 1)) (then (f32.store offset=4 (local.get $c1) (local.get $t11))))
        (if (i32.gt_u (local.get $nb) (i32.const 2)) (then (f32.store offset=8 (local.get $c1) (local.get $t12))))
        (if (i32.gt_u (local.get $nb) (i32.const 3)) (then (f32.store offset=12 (local.get $c1) (local.get $t13)))))))

  (func (export "gemm_nt")
    (param $M i32) (param $N i32) (param $K i32) (param $a i32) (param $lda i32) (param $b i32) (param $ldb i32)
    (param $c i32) (param $ldc i32)
    (local $j i32) (local $i i32) (local $nb i32) (local $two i32) (local $a0 i32) (local $c0 i32)
    (global.set $K (local.get $K))
    (block $jDone
      (loop $jLoop
        (br_if $jDone (i32.ge_u (local.get $j) (local.get $N)))
        (local.set $nb (select (i32.const 4) (i32.sub (local.get $N) (local.get $j))
          (i32.le_u (i32.add (local.get $j) (i32.const 4)) (local.get $N))))
        (local.set $i (i32.const 0))
        (block $iDone
          (loop $iLoop
            (br_if $iDone (i32.ge_u (local.get $i) (local.get $M)))
            (local.set $two (i32.lt_u (i32.add (local.get $i) (i32.const 1)) (local.get $M)))
            (local.set $a0 (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $lda))))
            (local.set $c0 (i32.add (i32.add (local.get $c) (i32.mul (local.get $i) (local.get $ldc)))
              (i32.shl (local.get $j) (i32.const 2))))
            (call $ntTile
              (local.get $a0)
              (select (i32.add (local.get $a0) (local.get $lda)) (local.get $a0) (local.get $two))
              (i32.add (local.get $b) (i32.mul (local.get $j) (local.get $ldb)))
              (local.get $ldb) (local.get $nb)
              (local.get $c0) (i32.add (local.get $c0) (local.get $ldc)) (local.get $two))
            (local.set $i (i32.add (local.get $i) (i32.const 2)))
            (br $iLoop)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $jLoop))))

  ;; ── exp and the kernels built on it ─────────────────────────────────────────────────────────────────────
  ;; exp(x) per lane, Cephes expf (S. Moshier): x clamped to [−87.34, 88.38], n = round(x·log2 e),
  ;; r = x − n·ln 2 (in two parts), exp r by a degree-7 polynomial, times 2^n through the exponent bits.
  ;; Relative error ~2 ulp on the clamped range; below it the result is ~1e−38 instead of the true tiny value.
  (func $exp (param $x v128) (result v128)
    (local $n v128) (local $r v128) (local $p v128)
    (local.set $x (f32x4.max (f32x4.min (local.get $x) (v128.const f32x4 88.3762626647949 88.3762626647949 88.3762626647949 88.3762626647949))
      (v128.const f32x4 -87.3365447504019 -87.3365447504019 -87.3365447504019 -87.3365447504019)))
    (local.set $n (f32x4.nearest (f32x4.mul (local.get $x) (v128.const f32x4 1.44269504088896341 1.44269504088896341 1.44269504088896341 1.44269504088896341))))
    (local.set $r (f32x4.sub (local.get $x) (f32x4.mul (local.get $n) (v128.const f32x4 0.693359375 0.693359375 0.693359375 0.693359375))))
    (local.set $r (f32x4.add (local.get $r) (f32x4.mul (local.get $n) (v128.const f32x4 2.12194440e-4 2.12194440e-4 2.12194440e-4 2.12194440e-4))))
    (local.set $p (v128.const f32x4 1.9875691500e-4 1.9875691500e-4 1.9875691500e-4 1.9875691500e-4))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (v128.const f32x4 1.3981999507e-3 1.3981999507e-3 1.3981999507e-3 1.3981999507e-3)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (v128.const f32x4 8.3334519073e-3 8.3334519073e-3 8.3334519073e-3 8.3334519073e-3)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (v128.const f32x4 4.1665795894e-2 4.1665795894e-2 4.1665795894e-2 4.1665795894e-2)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (v128.const f32x4 1.6666665459e-1 1.6666665459e-1 1.6666665459e-1 1.6666665459e-1)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (v128.const f32x4 5.0000001201e-1 5.0000001201e-1 5.0000001201e-1 5.0000001201e-1)))
    (local.set $p (f32x4.add (f32x4.add (f32x4.mul (local.get $p) (f32x4.mul (local.get $r) (local.get $r))) (local.get $r))
      (v128.const f32x4 1 1 1 1)))
    (i32x4.add (local.get $p) (i32x4.shl (i32x4.trunc_sat_f32x4_s (local.get $n)) (i32.const 23))))

  (func $hsum (param $v v128) (result f32)
    (f32.add (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; Per row r of z (R, V): out[3r .. 3r+2] = (m, Σ e, Σ e·y) with y = z·inv, m = max y, e = exp(y − m).
  (func (export "softmax_stats") (param $z i32) (param $R i32) (param $V i32) (param $inv f32) (param $out i32)
    (local $r i32) (local $row i32) (local $end i32) (local $end4 i32) (local $q i32) (local $mx f32)
    (local $vm v128) (local $vinv v128) (local $y v128) (local $e v128) (local $vs v128) (local $vp v128)
    (local $s f32) (local $pz f32) (local $t f32) (local $et f32)
    (local.set $vinv (f32x4.splat (local.get $inv)))
    (block $rDone
      (loop $rLoop
        (br_if $rDone (i32.ge_u (local.get $r) (local.get $R)))
        (local.set $row (i32.add (local.get $z) (i32.shl (i32.mul (local.get $r) (local.get $V)) (i32.const 2))))
        (local.set $end (i32.add (local.get $row) (i32.shl (local.get $V) (i32.const 2))))
        (local.set $end4 (i32.add (local.get $row) (i32.shl (i32.and (local.get $V) (i32.const -4)) (i32.const 2))))
        ;; max
        (local.set $vm (v128.const f32x4 -inf -inf -inf -inf))
        (local.set $q (local.get $row))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $q) (local.get $end4)))
          (local.set $vm (f32x4.max (local.get $vm) (v128.load (local.get $q))))
          (local.set $q (i32.add (local.get $q) (i32.const 16)))
          (br $l)))
        (local.set $mx (f32.max (f32.max (f32x4.extract_lane 0 (local.get $vm)) (f32x4.extract_lane 1 (local.get $vm)))
          (f32.max (f32x4.extract_lane 2 (local.get $vm)) (f32x4.extract_lane 3 (local.get $vm)))))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $q) (local.get $end)))
          (local.set $mx (f32.max (local.get $mx) (f32.load (local.get $q))))
          (local.set $q (i32.add (local.get $q) (i32.const 4)))
          (br $l)))
        (local.set $mx (f32.mul (local.get $mx) (local.get $inv)))
        (local.set $vm (f32x4.splat (local.get $mx)))
        ;; Σ e and Σ e·y
        (local.set $vs (v128.const i32x4 0 0 0 0))
        (local.set $vp (v128.const i32x4 0 0 0 0))
        (local.set $q (local.get $row))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $q) (local.get $end4)))
          (local.set $y (f32x4.mul (v128.load (local.get $q)) (local.get $vinv)))
          (local.set $e (call $exp (f32x4.sub (local.get $y) (local.get $vm))))
          (local.set $vs (f32x4.add (local.get $vs) (local.get $e)))
          (local.set $vp (f32x4.add (local.get $vp) (f32x4.mul (local.get $e) (local.get $y))))
          (local.set $q (i32.add (local.get $q) (i32.const 16)))
          (br $l)))
        (local.set $s (call $hsum (local.get $vs)))
        (local.set $pz (call $hsum (local.get $vp)))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $q) (local.get $end)))
          (local.set $t (f32.mul (f32.load (local.get $q)) (local.get $inv)))
          (local.set $et (f32x4.extract_lane 0 (call $exp (f32x4.splat (f32.sub (local.get $t) (local.get $mx))))))
          (local.set $s (f32.add (local.get $s) (local.get $et)))
          (local.set $pz (f32.add (local.get $pz) (f32.mul (local.get $et) (local.get $t))))
          (local.set $q (i32.add (local.get $q) (i32.const 4)))
          (br $l)))
        (f32.store offset=0 (local.get $out) (local.get $mx))
        (f32.store offset=4 (local.get $out) (local.get $s))
        (f32.store offset=8 (local.get $out) (local.get $pz))
        (local.set $out (i32.add (local.get $out) (i32.const 12)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rLoop))))

  ;; Per row r of z (R, V): d[r, v] = coef[r] · exp(z[r, v]·inv − shift[r]) (in place allowed: d = z).
  (func (export "softmax_grad") (param $z i32) (param $d i32) (param $R i32) (param $V i32) (param $inv f32)
    (param $shift i32) (param $coef i32)
    (local $r i32) (local $q i32) (local $o i32) (local $end i32) (local $end4 i32) (local $vinv v128)
    (local $vsh v128) (local $vc v128)
    (local.set $vinv (f32x4.splat (local.get $inv)))
    (local.set $q (local.get $z))
    (local.set $o (local.get $d))
    (block $rDone
      (loop $rLoop
        (br_if $rDone (i32.ge_u (local.get $r) (local.get $R)))
        (local.set $end (i32.add (local.get $q) (i32.shl (local.get $V) (i32.const 2))))
        (local.set $end4 (i32.add (local.get $q) (i32.shl (i32.and (local.get $V) (i32.const -4)) (i32.const 2))))
        (local.set $vsh (v128.load32_splat (i32.add (local.get $shift) (i32.shl (local.get $r) (i32.const 2)))))
        (local.set $vc (v128.load32_splat (i32.add (local.get $coef) (i32.shl (local.get $r) (i32.const 2)))))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $q) (local.get $end4)))
          (v128.store (local.get $o) (f32x4.mul (local.get $vc)
            (call $exp (f32x4.sub (f32x4.mul (v128.load (local.get $q)) (local.get $vinv)) (local.get $vsh)))))
          (local.set $q (i32.add (local.get $q) (i32.const 16)))
          (local.set $o (i32.add (local.get $o) (i32.const 16)))
          (br $l)))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $q) (local.get $end)))
          (f32.store (local.get $o) (f32x4.extract_lane 0 (f32x4.mul (local.get $vc)
            (call $exp (f32x4.sub (f32x4.mul (v128.load32_splat (local.get $q)) (local.get $vinv)) (local.get $vsh))))))
          (local.set $q (i32.add (local.get $q) (i32.const 4)))
          (local.set $o (i32.add (local.get $o) (i32.const 4)))
          (br $l)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rLoop))))

  ;; tanh(S·(x + A·x³)) per lane, S = √(2/π), A = 0.044715, as 1 − 2/(exp(2u) + 1)
  (func $geluTanh (param $x v128) (result v128)
    (local $u v128)
    (local.set $u (f32x4.mul (v128.const f32x4 0.7978845608028654 0.7978845608028654 0.7978845608028654 0.7978845608028654)
      (f32x4.add (local.get $x) (f32x4.mul (v128.const f32x4 0.044715 0.044715 0.044715 0.044715)
        (f32x4.mul (local.get $x) (f32x4.mul (local.get $x) (local.get $x)))))))
    (f32x4.sub (v128.const f32x4 1 1 1 1)
      (f32x4.div (v128.const f32x4 2 2 2 2)
        (f32x4.add (call $exp (f32x4.add (local.get $u) (local.get $u))) (v128.const f32x4 1 1 1 1)))))

  ;; y = 0.5·x·(1 + tanh(S·(x + A·x³))), n values (the tail of n mod 4 too: the caller pads to a multiple of 4)
  (func (export "gelu_forward") (param $x i32) (param $y i32) (param $n i32)
    (local $end i32) (local $v v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $v (v128.load (local.get $x)))
      (v128.store (local.get $y) (f32x4.mul (f32x4.mul (v128.const f32x4 0.5 0.5 0.5 0.5) (local.get $v))
        (f32x4.add (v128.const f32x4 1 1 1 1) (call $geluTanh (local.get $v)))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (br $l))))

  ;; dx = dy · (0.5·(1 + th) + 0.5·x·(1 − th²)·S·(1 + 3A·x²)), th = tanh(S·(x + A·x³))
  (func (export "gelu_backward") (param $x i32) (param $dy i32) (param $dx i32) (param $n i32)
    (local $end i32) (local $v v128) (local $th v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $v (v128.load (local.get $x)))
      (local.set $th (call $geluTanh (local.get $v)))
      (v128.store (local.get $dx) (f32x4.mul (v128.load (local.get $dy))
        (f32x4.add
          (f32x4.mul (v128.const f32x4 0.5 0.5 0.5 0.5) (f32x4.add (v128.const f32x4 1 1 1 1) (local.get $th)))
          (f32x4.mul
            (f32x4.mul (f32x4.mul (v128.const f32x4 0.5 0.5 0.5 0.5) (local.get $v))
              (f32x4.sub (v128.const f32x4 1 1 1 1) (f32x4.mul (local.get $th) (local.get $th))))
            (f32x4.mul (v128.const f32x4 0.7978845608028654 0.7978845608028654 0.7978845608028654 0.7978845608028654)
              (f32x4.add (v128.const f32x4 1 1 1 1)
                (f32x4.mul (v128.const f32x4 0.134145 0.134145 0.134145 0.134145) (f32x4.mul (local.get $v) (local.get $v)))))))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $dy (i32.add (local.get $dy) (i32.const 16)))
      (local.set $dx (i32.add (local.get $dx) (i32.const 16)))
      (br $l))))
)
