//! Host-side code shared by the zoo benches: input builders and the host references that
//! the correctness checks compare with.
//!
//! Each kernel lives in `kernels/<name>.cu` and is compiled at run time by NVRTC (see
//! `kprof-harness`); its header comment says what limits it. The references here mirror the
//! kernels' arithmetic in the same order (an `fmaf` is `mul_add`), so most checks compare
//! bit for bit; where the device uses approximate hardware functions the check says so and
//! uses a tolerance. What every kernel is expected to show under ncu is in `EXPECTED.md`.
#![warn(missing_docs)]

use kprof_harness::half::f16;
use kprof_harness::{random_cycle, random_vec};

/// Words per node of the linked lists the `list_walk_*` kernels follow (128 bytes).
pub const NODE_WORDS: usize = 32;

/// A list of `num_nodes` 128-byte nodes for the `list_walk_*` kernels: word 0 of node `i`
/// is the index of the next node (one random cycle through all nodes), words 1..32 are
/// random payload.
pub fn list_nodes(num_nodes: usize, seed: u64) -> kprof_harness::anyhow::Result<Vec<u32>> {
    let next = random_cycle(num_nodes, seed)?;
    let mut nodes: Vec<u32> = random_vec(num_nodes * NODE_WORDS, seed ^ 0x5eed_0f11);
    for (i, &n) in next.iter().enumerate() {
        nodes[i * NODE_WORDS] = n;
    }
    Ok(nodes)
}

/// The start node of warp `warp` (mirrors `walk_start` in `kernels/list_walk.cu`).
pub fn walk_start(warp: u32, num_nodes: u32) -> u32 {
    ((warp as u64 * 2_654_435_761u64) % num_nodes as u64) as u32
}

/// The payloads lane `lane` of warp `warp` sees during `steps` steps of its walk, as the
/// kernels turn them into floats (mirrors `walk_step`).
pub fn walk_payloads(nodes: &[u32], num_nodes: u32, warp: u32, lane: u32, steps: usize) -> Vec<f32> {
    let mut at = walk_start(warp, num_nodes);
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        let base = at as usize * NODE_WORDS;
        let v = nodes[base + lane as usize];
        at = nodes[base];
        out.push((v & 0xffff) as f32 * (1.0 / 65536.0));
    }
    out
}

/// `list_walk_regtile`: per thread, the 8 x 14 register tile sum.
pub fn list_walk_regtile_reference(nodes: &[u32], num_nodes: u32, threads: u32, steps: usize) -> Vec<f32> {
    const ROWS: usize = 8;
    const COLS: usize = 14;
    (0..threads)
        .map(|tid| {
            let f = walk_payloads(nodes, num_nodes, tid / 32, tid % 32, steps);
            let mut acc = [[0f32; COLS]; ROWS];
            for (s, &v) in f.iter().enumerate() {
                for (c, a) in acc[s % ROWS].iter_mut().enumerate() {
                    *a = v.mul_add(1.0 + 0.125 * c as f32, *a);
                }
            }
            let mut sum = 0f32;
            for (r, row) in acc.iter().enumerate() {
                for (c, &a) in row.iter().enumerate() {
                    sum = a.mul_add((1 + ((r * COLS + c) & 3)) as f32, sum);
                }
            }
            sum
        })
        .collect()
}

/// `list_walk_smem`: per thread, the weighted sum of its ring of `ring_rows` rows.
pub fn list_walk_smem_reference(
    nodes: &[u32],
    num_nodes: u32,
    threads: u32,
    steps: usize,
    ring_rows: usize,
) -> Vec<f32> {
    (0..threads)
        .map(|tid| {
            let f = walk_payloads(nodes, num_nodes, tid / 32, tid % 32, steps);
            let mut ring = vec![0f32; ring_rows];
            for (s, &v) in f.iter().enumerate() {
                ring[s % ring_rows] += v;
            }
            ring.iter().enumerate().fold(0f32, |sum, (r, &x)| x.mul_add((1 + (r & 3)) as f32, sum))
        })
        .collect()
}

/// `list_walk_warp_blocks`: per thread, the weighted sum of its payloads.
pub fn list_walk_warp_blocks_reference(
    nodes: &[u32],
    num_nodes: u32,
    threads: u32,
    steps: usize,
) -> Vec<f32> {
    (0..threads)
        .map(|tid| {
            let f = walk_payloads(nodes, num_nodes, tid / 32, tid % 32, steps);
            f.iter().enumerate().fold(0f32, |sum, (s, &v)| v.mul_add(1.0 + 0.125 * (s & 7) as f32, sum))
        })
        .collect()
}

/// `l2_reread_cg`: per thread of `blocks` x `threads`, the sum over `passes` passes of its
/// float4s (as four floats each) of the table, in the kernel's order.
pub fn l2_reread_reference(table: &[f32], blocks: u32, threads: u32, passes: u32) -> Vec<f32> {
    let n4 = (table.len() / 4) as u32;
    let mut out = Vec::with_capacity((blocks * threads) as usize);
    for b in 0..blocks {
        let rot = b.wrapping_mul(8192) % n4;
        for t in 0..threads {
            let mut acc = 0f32;
            for _ in 0..passes {
                let mut j = t;
                while j < n4 {
                    let mut k = j + rot;
                    if k >= n4 {
                        k -= n4;
                    }
                    let v = &table[4 * k as usize..4 * k as usize + 4];
                    acc += (v[0] + v[1]) + (v[2] + v[3]);
                    j += threads;
                }
            }
            out.push(acc);
        }
    }
    out
}

/// `smem_read_f4`: per thread (256 per block, every block reads the same 1024-float4 tile).
pub fn smem_read_f4_reference(tile: &[f32], blocks: u32, iters: i32, shift: i32) -> Vec<f32> {
    let mut per_thread = Vec::with_capacity(256);
    for t in 0..256i32 {
        let mut acc = [0f32; 4];
        for it in 0..iters {
            let base = t + (it.wrapping_mul(shift) & 255);
            for k in 0..4 {
                let i = (base + k * 160) as usize;
                for (a, v) in acc.iter_mut().zip(&tile[4 * i..4 * i + 4]) {
                    *a += v;
                }
            }
        }
        per_thread.push((acc[0] + acc[1]) + (acc[2] + acc[3]));
    }
    per_thread.repeat(blocks as usize)
}

/// `smem_column_read`: per thread (256 per block, every block reads the same 32 x 32 tile).
pub fn smem_column_read_reference(tile: &[f32], blocks: u32, iters: i32, shift: i32) -> Vec<f32> {
    let mut per_thread = Vec::with_capacity(256);
    for t in 0..256i32 {
        let lane = (t & 31) as usize;
        let mut acc = 0f32;
        for it in 0..iters {
            let c0 = it.wrapping_mul(shift);
            for c in 0..8 {
                acc += tile[lane * 32 + ((c0 + c) & 31) as usize];
            }
        }
        per_thread.push(acc);
    }
    per_thread.repeat(blocks as usize)
}

/// `smem_byte_sum`: per thread (256 per block, every block reads the same 8 KiB of bytes,
/// given as little-endian words).
pub fn smem_byte_sum_reference(words: &[u32], blocks: u32, iters: i32, shift: i32) -> Vec<u32> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut per_thread = Vec::with_capacity(256);
    for t in 0..256i32 {
        let mut acc = 0u32;
        for it in 0..iters {
            let base = t + (it.wrapping_mul(shift) & 255);
            for k in 0..8 {
                acc = acc.wrapping_add(bytes[(base + k * 1024) as usize] as u32);
            }
        }
        per_thread.push(acc);
    }
    per_thread.repeat(blocks as usize)
}

/// `local_histogram`: the per-thread 64-bin counts of the top 6 bits, bin-major
/// (`partial[bin * threads + tid]`), for a grid-stride split over `threads` threads.
pub fn local_histogram_reference(data: &[u32], threads: usize) -> Vec<u32> {
    let mut partial = vec![0u32; 64 * threads];
    for (i, &v) in data.iter().enumerate() {
        partial[(v >> 26) as usize * threads + i % threads] += 1;
    }
    partial
}

/// `fp32_fma_chains` and `fixed_blocks_fma`: the 8 chains of thread `tid` after `iters` steps.
pub fn fma_chains(tid: u32, a: f32, b: f32, iters: i32) -> [f32; 8] {
    let mut x = [0f32; 8];
    for (c, v) in x.iter_mut().enumerate() {
        *v = tid.wrapping_add(c as u32) as f32 * 1.0e-6;
        for _ in 0..iters {
            *v = v.mul_add(a, b);
        }
    }
    x
}

/// `fp64_dfma_chains`: the sum of the 8 double chains of thread `tid` after `iters` steps.
pub fn dfma_chains_sum(tid: u32, a: f64, b: f64, iters: i32) -> f64 {
    let mut sum = 0f64;
    for c in 0..8u32 {
        let mut v = tid.wrapping_add(c) as f64 * 1.0e-6;
        for _ in 0..iters {
            v = v.mul_add(a, b);
        }
        sum += v;
    }
    sum
}

/// `chacha_rounds`: the output word of thread `tid` with key `k`.
pub fn chacha_reference(tid: u32, k: u32, double_rounds: i32) -> u32 {
    let mut x: [u32; 16] = [
        0x6170_7865,
        0x3320_646e,
        0x7962_2d32,
        0x6b20_6574,
        k,
        k ^ 0x9e37_79b9,
        k.wrapping_add(0x7f4a_7c15),
        k.wrapping_mul(3),
        !k,
        k ^ 0x85eb_ca6b,
        k.wrapping_add(0xc2b2_ae35),
        k.wrapping_mul(5),
        tid,
        0,
        k >> 3,
        k << 3,
    ];
    fn qr(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(16);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(12);
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(8);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(7);
    }
    for _ in 0..double_rounds {
        qr(&mut x, 0, 4, 8, 12);
        qr(&mut x, 1, 5, 9, 13);
        qr(&mut x, 2, 6, 10, 14);
        qr(&mut x, 3, 7, 11, 15);
        qr(&mut x, 0, 5, 10, 15);
        qr(&mut x, 1, 6, 11, 12);
        qr(&mut x, 2, 7, 8, 13);
        qr(&mut x, 3, 4, 9, 14);
    }
    (x[0] ^ x[1] ^ x[2] ^ x[3])
        .wrapping_add(x[4] ^ x[5] ^ x[6] ^ x[7])
        .wrapping_add(x[8] ^ x[9] ^ x[10] ^ x[11])
        .wrapping_add(x[12] ^ x[13] ^ x[14] ^ x[15])
}

/// `sfu_chains` with exact functions (the kernel uses approximate MUFU ones).
pub fn sfu_chains_reference(x0: f32, iters: i32) -> f32 {
    let mut x = [0f32; 4];
    for (c, v) in x.iter_mut().enumerate() {
        *v = x0 + 0.25 * c as f32;
        for _ in 0..iters {
            let s = v.sin() + 1.5;
            *v = (1.0 / s.sqrt()).exp();
        }
    }
    (x[0] + x[1]) + (x[2] + x[3])
}

/// C = A * B for 16 x 16 row-major half matrices, accumulated in f32.
pub fn matmul16(a: &[f16], b: &[f16]) -> Vec<f32> {
    let mut c = vec![0f32; 256];
    for i in 0..16 {
        for j in 0..16 {
            c[i * 16 + j] = (0..16).map(|k| a[i * 16 + k].to_f32() * b[k * 16 + j].to_f32()).sum();
        }
    }
    c
}

/// `lane_switch`: the value of a thread in branch `branch` (0..8) after `iters` steps.
pub fn lane_switch_reference(x0: f32, branch: u32, iters: i32) -> f32 {
    let mut x = x0;
    for _ in 0..iters {
        x = match branch {
            0 => x.mul_add(0.999, 0.001),
            1 => x.mul_add(x, -0.25),
            2 => (x * 0.5).max(-x) + 0.1,
            3 => x.mul_add(1.01, 0.003).min(0.9),
            4 => (x - 0.3).abs() * 0.95,
            5 => x.mul_add(-0.5, 0.75),
            6 => (-x).mul_add(0.0625, x.min(0.5).mul_add(0.75, 0.125)),
            _ => x.mul_add(0.875, -0.0625).max(-0.5),
        };
    }
    x
}

/// `leader_warp_steps` for one block of `threads` threads starting from `x0`.
pub fn leader_warp_reference(x0: &[f32], steps: i32, leader_work: i32) -> Vec<f32> {
    let mut x = x0.to_vec();
    for _ in 0..steps {
        let mut published = 0f32;
        for (t, v) in x.iter_mut().enumerate() {
            if t < 32 {
                let mut y = *v;
                for _ in 0..leader_work {
                    y = y.mul_add(0.999, 0.001);
                }
                if t == 0 {
                    published = y;
                }
                *v = y;
            } else {
                *v = v.mul_add(0.5, 0.25);
            }
        }
        for v in x.iter_mut() {
            *v = published.mul_add(0.125, *v);
        }
    }
    x
}

/// `logistic_map` from input `x_in` after `iters` steps.
pub fn logistic_reference(x_in: f32, r: f32, iters: i32) -> f32 {
    let mut x = 0.5f32.mul_add(x_in.abs(), 0.25);
    for _ in 0..iters {
        x = (r * x) * (1.0 - x);
    }
    x
}

/// The multiplier of FFMA `i` of chain `chain` (0..4) in code block `n` of
/// `code_switch_64` (mirrors `code_block<N>`).
fn code_multiplier(n: u32, i: u32, chain: u32) -> f32 {
    let offset = [0, 3, 5, 7][chain as usize];
    0.5 + ((n * 37 + i * 11 + offset) & 255) as f32 * (1.0 / 1024.0)
}

/// `code_switch_64`: the output of thread `tid` with input `x` after `steps` steps.
pub fn code_switch_reference(tid: u32, x: f32, k: f32, steps: i32) -> f32 {
    let warp = tid / 32;
    let mut v = [x, -x, 0.5 * x, -0.5 * x];
    for s in 0..steps as u32 {
        let n = warp.wrapping_mul(0x9E37_79B1).wrapping_add(s.wrapping_mul(0x85EB_CA77)) >> 26;
        for i in 0..64 {
            for (chain, value) in v.iter_mut().enumerate() {
                *value = value.mul_add(code_multiplier(n, i, chain as u32), k);
            }
        }
    }
    (v[0] + v[1]) + (v[2] + v[3])
}

/// `transpose_tile32`: the transpose of a row-major `width` x `height` matrix.
pub fn transpose_reference(m: &[f32], width: usize, height: usize) -> Vec<f32> {
    let mut t = vec![0f32; m.len()];
    for y in 0..height {
        for x in 0..width {
            t[x * height + y] = m[y * width + x];
        }
    }
    t
}

/// `median5x5`: the median filter of radius `r` with clamped edges.
pub fn median_reference(img: &[f32], width: usize, height: usize, r: i64) -> Vec<f32> {
    let mut out = vec![0f32; img.len()];
    let mut win = Vec::new();
    for y in 0..height as i64 {
        for x in 0..width as i64 {
            win.clear();
            for dy in -r..=r {
                let yy = (y + dy).clamp(0, height as i64 - 1) as usize;
                for dx in -r..=r {
                    let xx = (x + dx).clamp(0, width as i64 - 1) as usize;
                    win.push(img[yy * width + xx]);
                }
            }
            win.sort_by(f32::total_cmp);
            out[y as usize * width + x as usize] = win[win.len() / 2];
        }
    }
    out
}

/// `nbody_fp64`: accelerations of every body from bodies `(x, y, z, mass)`, laid out
/// `[chunk][body][xyz]` for the j range split into `chunks` equal parts.
pub fn nbody_reference(bodies: &[f64], chunks: usize, eps2: f64) -> Vec<f64> {
    let n = bodies.len() / 4;
    let chunk = n / chunks;
    let mut acc = vec![0f64; chunks * n * 3];
    for ch in 0..chunks {
        for i in 0..n {
            let me = &bodies[4 * i..4 * i + 4];
            let (mut ax, mut ay, mut az) = (0f64, 0f64, 0f64);
            for j in ch * chunk..(ch + 1) * chunk {
                let o = &bodies[4 * j..4 * j + 4];
                let (dx, dy, dz) = (o[0] - me[0], o[1] - me[1], o[2] - me[2]);
                let r2 = dx.mul_add(dx, dy.mul_add(dy, dz.mul_add(dz, eps2)));
                let inv = 1.0 / r2.sqrt();
                let s = o[3] * (inv * inv * inv);
                ax = dx.mul_add(s, ax);
                ay = dy.mul_add(s, ay);
                az = dz.mul_add(s, az);
            }
            let at = (ch * n + i) * 3;
            acc[at..at + 3].copy_from_slice(&[ax, ay, az]);
        }
    }
    acc
}

/// The standard normal cumulative distribution function (Abramowitz and Stegun 26.2.17,
/// absolute error below 7.5e-8).
pub fn normal_cdf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.231_641_9 * x.abs());
    let poly = t
        * (0.319_381_530
            + t * (-0.356_563_782 + t * (1.781_477_937 + t * (-1.821_255_978 + t * 1.330_274_429))));
    let tail = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt() * poly;
    if x >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The undiscounted expected payoff E[max(S_T - K, 0)] of a call under geometric Brownian
/// motion with drift `mu` and volatility `sigma` over time `t` (Black-Scholes).
pub fn gbm_call_expectation(s0: f64, strike: f64, mu: f64, sigma: f64, t: f64) -> f64 {
    let sd = sigma * t.sqrt();
    let d1 = ((s0 / strike).ln() + (mu + 0.5 * sigma * sigma) * t) / sd;
    let d2 = d1 - sd;
    s0 * (mu * t).exp() * normal_cdf(d1) - strike * normal_cdf(d2)
}

/// The GBM parameters of the `gbm_paths` bench: (s0, strike, mu, sigma, horizon).
pub const GBM_MODEL: (f32, f32, f32, f32, f32) = (1.0, 1.0, 0.05, 0.2, 1.0);

/// `drift_dt` and `vol_sqrt_dt` of the `gbm_paths` kernel for `steps` steps of
/// [`GBM_MODEL`].
pub fn gbm_step_parameters(steps: i32) -> (f32, f32) {
    let (_, _, mu, sigma, t) = GBM_MODEL;
    let dt = t / steps as f32;
    ((mu - 0.5 * sigma * sigma) * dt, sigma * dt.sqrt())
}

/// `gbm_paths` on the host with exact functions: the payoff of one path from `seed`.
pub fn gbm_path_reference(seed: u32, steps: i32) -> f32 {
    let (s0, strike, ..) = GBM_MODEL;
    let (drift_dt, vol_sqrt_dt) = gbm_step_parameters(steps);
    let lcg = |s: u32| s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    let uniform = |s: u32| f32::from_bits(0x3f80_0000 | (s >> 9)) - 1.0;
    let mut st = seed;
    let mut s = s0;
    for _ in (0..steps).step_by(2) {
        st = lcg(st);
        let u1 = 1.0 - uniform(st);
        st = lcg(st);
        let u2 = uniform(st);
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f32::consts::TAU * u2;
        s *= (drift_dt + vol_sqrt_dt * radius * angle.cos()).exp();
        s *= (drift_dt + vol_sqrt_dt * radius * angle.sin()).exp();
    }
    (s - strike).max(0.0)
}

/// Word `i` of the `__constant__` table of `const_table_divergent` (mirrors `TABLE_WORD`).
pub fn const_table_word(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761) ^ (i >> 3)
}

/// `const_table_divergent` and its fixes: the output word of thread `tid` (two lookup
/// chains of `iters` steps through the 1024-word table, combined by xor).
pub fn const_table_reference(tid: u32, iters: i32) -> u32 {
    let mut acc = 0u32;
    for c in 0..2u32 {
        let mut x = tid.wrapping_mul(0x9E37_79B9).wrapping_add(c.wrapping_mul(0x85EB_CA77));
        for _ in 0..iters {
            let word = const_table_word(x & 1023);
            x = (x >> 7).wrapping_add(x << 3).wrapping_add(word);
        }
        acc ^= x;
    }
    acc
}

/// `smem_atomics_hot` and its fixes: the 4 counters of each block (`out[block * 4 + bin]`)
/// for blocks of `threads` threads seeded by `seeds` (one per thread).
pub fn smem_atomics_reference(seeds: &[u32], threads: usize, iters: i32) -> Vec<u32> {
    let mut out = vec![0u32; seeds.len() / threads * 4];
    for (t, &seed) in seeds.iter().enumerate() {
        let mut x = seed;
        for _ in 0..iters {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let bin = (t / threads) * 4 + (x >> 30) as usize;
            out[bin] = out[bin].wrapping_add((x >> 8) & 255);
        }
    }
    out
}

/// `pointer_chase_smem200k` and its fixes: the output of every thread of `blocks` blocks of
/// `threads` threads chasing `next` (each thread writes the sum of thread
/// `threads - 1 - t` of its block).
pub fn pointer_chase_reference(next: &[u32], blocks: u32, threads: u32, steps: i32) -> Vec<u32> {
    let n = next.len() as u64;
    let sum_of = |tid: u32| {
        let mut sum = 0u32;
        for c in 0..2u64 {
            let mut at = ((tid as u64 * 2_654_435_761 + c * 40503) % n) as u32;
            for _ in 0..steps {
                at = next[at as usize];
                sum = sum.wrapping_add(at);
            }
        }
        sum
    };
    (0..blocks * threads).map(|tid| sum_of(tid - tid % threads + (threads - 1 - tid % threads))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_matches_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841_344_746).abs() < 1e-7);
        assert!((normal_cdf(-1.96) - 0.024_997_895).abs() < 1e-7);
    }

    #[test]
    fn black_scholes_matches_a_textbook_value() {
        // S = K = 100, r = 5 %, sigma = 20 %, T = 1: discounted call 10.4506.
        let undiscounted = gbm_call_expectation(100.0, 100.0, 0.05, 0.2, 1.0);
        assert!((undiscounted * (-0.05f64).exp() - 10.4506).abs() < 1e-3, "{undiscounted}");
    }

    #[test]
    fn the_gbm_check_tolerance_holds_on_the_host_simulation() {
        // The bench's check: the mean payoff of 65536 paths of 64 steps within 3 % of the
        // analytic value. Box-Muller on LCG pairs is crude; make sure it is good enough.
        let seeds: Vec<u32> = random_vec(65536, 42);
        let mean = seeds.iter().map(|&s| gbm_path_reference(s, 64) as f64).sum::<f64>() / 65536.0;
        let (s0, strike, mu, sigma, t) = GBM_MODEL;
        let want = gbm_call_expectation(s0 as f64, strike as f64, mu as f64, sigma as f64, t as f64);
        println!("host simulation: mean payoff {mean}, analytic {want}");
        assert!((mean / want - 1.0).abs() < 0.03, "mean {mean}, expected {want}");
    }

    #[test]
    fn list_nodes_form_one_cycle_with_payload() {
        let nodes = list_nodes(1000, 3).unwrap();
        let mut at = 0usize;
        for _ in 0..1000 {
            at = nodes[at * NODE_WORDS] as usize;
        }
        assert_eq!(at, 0);
        assert!(nodes.iter().skip(1).take(31).any(|&w| w != 0));
    }

    #[test]
    fn transpose_and_median_references() {
        let m: Vec<f32> = (0..6).map(|v| v as f32).collect();
        assert_eq!(transpose_reference(&m, 3, 2), [0., 3., 1., 4., 2., 5.]);
        let img = [5., 1., 9., 3., 7., 2., 8., 4., 6.];
        // 3 x 3 image, radius 1: the centre sees all nine values.
        assert_eq!(median_reference(&img, 3, 3, 1)[4], 5.0);
    }

    #[test]
    fn const_table_words_and_chains() {
        assert_eq!(const_table_word(0), 0);
        assert_eq!(const_table_word(8), 8u32.wrapping_mul(2_654_435_761) ^ 1);
        assert_ne!(const_table_reference(1, 3), const_table_reference(2, 3));
    }

    #[test]
    fn smem_atomics_and_pointer_chase_references() {
        let seeds: Vec<u32> = random_vec(512, 5);
        let bins = smem_atomics_reference(&seeds, 256, 3);
        assert_eq!(bins.len(), 8);
        let draws: u64 = bins.iter().map(|&b| b as u64).sum();
        assert!(draws > 0 && draws <= 512 * 3 * 255);
        let next = random_cycle(64, 1).unwrap();
        let out = pointer_chase_reference(&next, 2, 4, 64);
        // 64 steps of a 64-cycle walk visit every node once: each chain sums 0..64.
        assert!(out.iter().all(|&v| v == 2 * (0..64).sum::<u32>()), "{out:?}");
    }

    #[test]
    fn local_histogram_counts_every_element_once() {
        let data: Vec<u32> = random_vec(1000, 9);
        let partial = local_histogram_reference(&data, 7);
        assert_eq!(partial.iter().sum::<u32>(), 1000);
    }
}
