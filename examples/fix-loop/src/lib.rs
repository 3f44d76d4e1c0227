//! Host references for the fix-loop benches: each mirrors its kernel's arithmetic, so the
//! checks compare bit for bit where the order of operations is fixed, and with a tolerance
//! where a fix sums in another order. What each kernel and fix should show under ncu, and
//! what the fix should save, is in `EXPECTED.md`.
#![warn(missing_docs)]

/// Global index of the first element of the `index64_*` slices: 2^34, past what 32 bits hold.
pub const INDEX_BASE: u64 = 1 << 34;

/// The sum of `x` in f64, and the sum of its magnitudes (for a tolerance).
pub fn sum_f64(x: &[f32]) -> (f64, f64) {
    x.iter().fold((0.0, 0.0), |(s, a), &v| (s + f64::from(v), a + f64::from(v).abs()))
}

/// Four Horner steps per iteration, each float product added to a double literal in FP64
/// and rounded back to float: what the `*_promoted` kernels compute.
fn promoted_steps(x: f32, iters: i32, literals: [f64; 4]) -> f32 {
    let mut acc = 0f32;
    for _ in 0..iters {
        for c in literals {
            acc = (f64::from(acc * x) + c) as f32;
        }
    }
    acc
}

/// The same steps as one fused multiply-add each in float: what their fixes compute.
fn fused_steps(x: f32, iters: i32, literals: [f32; 4]) -> f32 {
    let mut acc = 0f32;
    for _ in 0..iters {
        for c in literals {
            acc = acc.mul_add(x, c);
        }
    }
    acc
}

/// `horner_promoted`: literals exact in float.
pub fn horner_promoted_reference(x: f32, iters: i32) -> f32 {
    promoted_steps(x, iters, [0.5, -0.25, 0.125, -0.0625])
}

/// `horner_promoted__fix`.
pub fn horner_fixed_reference(x: f32, iters: i32) -> f32 {
    fused_steps(x, iters, [0.5, -0.25, 0.125, -0.0625])
}

/// `poly_promoted`: literals float cannot hold.
pub fn poly_promoted_reference(x: f32, iters: i32) -> f32 {
    promoted_steps(x, iters, [0.1, -0.3, 0.7, -0.9])
}

/// `poly_promoted__fix`.
pub fn poly_fixed_reference(x: f32, iters: i32) -> f32 {
    fused_steps(x, iters, [0.1, -0.3, 0.7, -0.9])
}

/// The bin `hist_global_skewed` counts `v` in (mirrors `skewed_bin`).
pub fn skewed_bin(v: u32) -> usize {
    if v & 3 != 0 {
        0
    } else {
        ((v >> 2) & 255) as usize
    }
}

/// A 256-bin histogram of `v` by `bin`.
pub fn histogram(v: &[u32], bin: impl Fn(u32) -> usize) -> Vec<u32> {
    let mut bins = vec![0u32; 256];
    for &x in v {
        bins[bin(x)] += 1;
    }
    bins
}

/// `index64_div2d`: `out[i] = in[i] * row_scale[row - row0] + col_bias[col]` for the
/// element of global index `INDEX_BASE + i`.
pub fn index64_2d_reference(input: &[f32], row_scale: &[f32], col_bias: &[f32], width: u64) -> Vec<f32> {
    let row0 = INDEX_BASE / width;
    (0..input.len())
        .map(|i| {
            let g = INDEX_BASE + i as u64;
            let (row, col) = (g / width, g % width);
            input[i].mul_add(row_scale[(row - row0) as usize], col_bias[col as usize])
        })
        .collect()
}

/// `index64_div3d`: `out[i] = in[i] * wz[z - z0] + wy[y] + wx[x]`.
pub fn index64_3d_reference(input: &[f32], wz: &[f32], wy: &[f32], wx: &[f32], nx: u64, ny: u64) -> Vec<f32> {
    let z0 = INDEX_BASE / (nx * ny);
    (0..input.len())
        .map(|i| {
            let g = INDEX_BASE + i as u64;
            let q = g / nx;
            let (x, z) = (g % nx, q / ny);
            let y = q % ny;
            input[i].mul_add(wz[(z - z0) as usize], wy[y as usize]) + wx[x as usize]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_promoted_and_the_fixed_horner_differ_only_by_rounding() {
        for x in [-0.9f32, -0.3, 0.1, 0.7] {
            let (a, b) = (horner_promoted_reference(x, 64), horner_fixed_reference(x, 64));
            assert!((a - b).abs() < 1e-5, "{x}: {a} {b}");
        }
    }

    #[test]
    fn three_in_four_elements_fall_in_bin_0() {
        let v: Vec<u32> = (0..4096).collect();
        let bins = histogram(&v, skewed_bin);
        assert_eq!(bins[0], 3072 + 4);
        assert_eq!(bins.iter().sum::<u32>(), 4096);
    }

    #[test]
    fn the_slices_start_past_32_bits() {
        assert!(INDEX_BASE / 1000 > u64::from(u32::MAX) / 1000);
        let out = index64_2d_reference(&[1.0, 2.0], &[3.0, 5.0], &vec![0.5; 1000], 1000);
        // INDEX_BASE % 1000 = 184: both elements are in row0.
        assert_eq!(out, [3.5, 6.5]);
    }
}
