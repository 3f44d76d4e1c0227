//! Host-side reference code shared by the demo benches.
//!
//! The kernels live in `kernels/*.cu` and are compiled at run time with NVRTC by the
//! harness; the benches in `benches/` register one case per kernel configuration. What
//! each kernel is expected to be limited by is in the README and at the top of its `.cu`.
#![warn(missing_docs)]

use kprof_harness::half::f16;

/// C = A * B on the host: A is m x k, B is k x n, both row-major half; C is m x n float,
/// accumulated in f32 in the same order as the kernels.
pub fn hgemm_reference(a: &[f16], b: &[f16], m: usize, n: usize, k: usize) -> Vec<f32> {
    let a: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
    let b: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
    let mut c = vec![0f32; m * n];
    for row in 0..m {
        for i in 0..k {
            let av = a[row * k + i];
            let b_row = &b[i * n..(i + 1) * n];
            for (cv, &bv) in c[row * n..(row + 1) * n].iter_mut().zip(b_row) {
                *cv += av * bv;
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_matches_a_hand_computed_product() {
        let h = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
        // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]
        let c = hgemm_reference(&h(&[1., 2., 3., 4.]), &h(&[5., 6., 7., 8.]), 2, 2, 2);
        assert_eq!(c, [19., 22., 43., 50.]);
        // 1x3 * 3x1
        let c = hgemm_reference(&h(&[1., 2., 3.]), &h(&[4., 5., 6.]), 1, 1, 3);
        assert_eq!(c, [32.]);
    }
}
