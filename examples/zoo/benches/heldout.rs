//! Held-out kernels: ordinary-looking code, each with one limiter from the zoo's list, kept
//! out of tuning the verdict rules so that they test them. What each should show under
//! ncu is in EXPECTED.md; the kernel sources do not say.
use kprof_harness::prelude::*;
use kprof_zoo::*;

const SIDE: i32 = 16384;
const ROWS: i32 = 262_144;
const COLS: i32 = 1024;
const IMG_W: i32 = 2048;
const IMG_H: i32 = 2048;
const RADIUS: i32 = 2;
const PATHS: u32 = 1 << 20;
const GBM_STEPS: i32 = 1024;
const BODIES: i32 = 32768;
const CHUNKS: u32 = 4;
const EPS2: f64 = 1e-4;
const PARTIALS: u32 = 1 << 21;

fn transpose_config(width: i32, height: i32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((width as u32).div_ceil(32), (height as u32).div_ceil(32), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    }
}

fn median_config(width: i32, height: i32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((width as u32).div_ceil(16), (height as u32).div_ceil(16), 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    }
}

fn nbody_config(n: i32, chunks: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (n as u32 / 128, chunks, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 }
}

fn gbm_source() -> CudaSource {
    cuda_source!("kernels/gbm_paths.cu").option("--use_fast_math")
}

fn main() {
    let mut bench = Bench::new();

    let side = SIDE as u64;
    bench
        .case("transpose_tile32/width=16384,height=16384", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/transpose_tile32.cu"))?.function("transpose_tile32")?;
            let n = (SIDE as usize) * (SIDE as usize);
            let m = gpu.random::<f32>(n)?;
            let mut t = gpu.zeros::<f32>(n)?;
            let cfg = transpose_config(SIDE, SIDE);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&m).arg(&mut t).arg(&SIDE).arg(&SIDE).launch(cfg)
            })
        })
        .bytes(2 * 4 * side * side)
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/transpose_tile32.cu"))?.function("transpose_tile32")?;
            // Not multiples of 32, to cover the edges.
            let (w, h) = (100i32, 70i32);
            let m: Vec<f32> = gpu.random_host((w * h) as usize);
            let dm = gpu.upload(&m)?;
            let mut dt = gpu.zeros::<f32>(m.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dm)
                    .arg(&mut dt)
                    .arg(&w)
                    .arg(&h)
                    .launch(transpose_config(w, h))?;
            }
            let want = transpose_reference(&m, w as usize, h as usize);
            assert_close("transpose_tile32", &gpu.download(&dt)?, &want, 0.0, 0.0)
        });

    bench
        .case("rowsum_per_thread/rows=262144,cols=1024", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/rowsum_per_thread.cu"))?.function("rowsum_per_thread")?;
            let m = gpu.random::<f32>(ROWS as usize * COLS as usize)?;
            let mut sums = gpu.zeros::<f32>(ROWS as usize)?;
            let cfg = grid_1d((ROWS as u32).div_ceil(256), 256);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&m).arg(&mut sums).arg(&ROWS).arg(&COLS).launch(cfg)
            })
        })
        .bytes(4 * ROWS as u64 * COLS as u64 + 4 * ROWS as u64)
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/rowsum_per_thread.cu"))?.function("rowsum_per_thread")?;
            let (rows, cols) = (300i32, 77i32);
            let m: Vec<f32> = gpu.random_host((rows * cols) as usize);
            let dm = gpu.upload(&m)?;
            let mut ds = gpu.zeros::<f32>(rows as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dm)
                    .arg(&mut ds)
                    .arg(&rows)
                    .arg(&cols)
                    .launch(grid_1d((rows as u32).div_ceil(256), 256))?;
            }
            let want: Vec<f32> = m.chunks(cols as usize).map(|r| r.iter().fold(0.0, |s, v| s + v)).collect();
            assert_close("rowsum_per_thread", &gpu.download(&ds)?, &want, 0.0, 0.0)
        });

    bench
        .case("median5x5/width=2048,height=2048,radius=2", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/median5x5.cu"))?.function("median5x5")?;
            let n = (IMG_W * IMG_H) as usize;
            let img = gpu.random::<f32>(n)?;
            let mut out = gpu.zeros::<f32>(n)?;
            let cfg = median_config(IMG_W, IMG_H);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&img).arg(&mut out).arg(&IMG_W).arg(&IMG_H).arg(&RADIUS).launch(cfg)
            })
        })
        .bytes(2 * 4 * (IMG_W * IMG_H) as u64)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/median5x5.cu"))?.function("median5x5")?;
            let (w, h) = (45i32, 29i32);
            let img: Vec<f32> = gpu.random_host((w * h) as usize);
            let d_img = gpu.upload(&img)?;
            let mut d_out = gpu.zeros::<f32>(img.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_img)
                    .arg(&mut d_out)
                    .arg(&w)
                    .arg(&h)
                    .arg(&RADIUS)
                    .launch(median_config(w, h))?;
            }
            let want = median_reference(&img, w as usize, h as usize, RADIUS as i64);
            assert_close("median5x5", &gpu.download(&d_out)?, &want, 0.0, 0.0)
        });

    bench
        .case("gbm_paths/paths=1048576,steps=1024", |gpu| {
            let f = gpu.compile(&gbm_source())?.function("gbm_paths")?;
            let seeds = gpu.random::<u32>(PATHS as usize)?;
            let mut payoff = gpu.zeros::<f32>(PATHS as usize)?;
            let (s0, strike, ..) = GBM_MODEL;
            let (drift_dt, vol_sqrt_dt) = gbm_step_parameters(GBM_STEPS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&seeds)
                    .arg(&mut payoff)
                    .arg(&GBM_STEPS)
                    .arg(&s0)
                    .arg(&drift_dt)
                    .arg(&vol_sqrt_dt)
                    .arg(&strike)
                    .launch(grid_1d(PATHS / 256, 256))
            })
        })
        .check(|gpu| {
            // A statistical check: the mean payoff of 65536 paths against Black-Scholes.
            let f = gpu.compile(&gbm_source())?.function("gbm_paths")?;
            let (paths, steps) = (65_536usize, 64i32);
            let seeds = gpu.random::<u32>(paths)?;
            let mut payoff = gpu.zeros::<f32>(paths)?;
            let (s0, strike, mu, sigma, t) = GBM_MODEL;
            let (drift_dt, vol_sqrt_dt) = gbm_step_parameters(steps);
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&seeds)
                    .arg(&mut payoff)
                    .arg(&steps)
                    .arg(&s0)
                    .arg(&drift_dt)
                    .arg(&vol_sqrt_dt)
                    .arg(&strike)
                    .launch(grid_1d(paths as u32 / 256, 256))?;
            }
            let got = gpu.download(&payoff)?;
            let mean = got.iter().map(|&v| v as f64).sum::<f64>() / paths as f64;
            let want = gbm_call_expectation(s0 as f64, strike as f64, mu as f64, sigma as f64, t as f64);
            ensure!(
                (mean / want - 1.0).abs() < 0.03,
                "gbm_paths: mean payoff {mean}, expected {want} within 3 %"
            );
            Ok(())
        });

    bench
        .case("nbody_fp64/bodies=32768,chunks=4", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/nbody_fp64.cu"))?.function("nbody_fp64")?;
            let bodies = gpu.random::<f64>(4 * BODIES as usize)?;
            let mut acc = gpu.zeros::<f64>(CHUNKS as usize * BODIES as usize * 3)?;
            let cfg = nbody_config(BODIES, CHUNKS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&bodies).arg(&mut acc).arg(&BODIES).arg(&EPS2).launch(cfg)
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/nbody_fp64.cu"))?.function("nbody_fp64")?;
            let (n, chunks) = (512i32, 2u32);
            let bodies: Vec<f64> = gpu.random_host(4 * n as usize);
            let d_bodies = gpu.upload(&bodies)?;
            let mut d_acc = gpu.zeros::<f64>(chunks as usize * n as usize * 3)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_bodies)
                    .arg(&mut d_acc)
                    .arg(&n)
                    .arg(&EPS2)
                    .launch(nbody_config(n, chunks))?;
            }
            let got = gpu.download(&d_acc)?;
            let want = nbody_reference(&bodies, chunks as usize, EPS2);
            // rsqrt and 1/sqrt differ in the last bit; sums of terms of either sign cancel,
            // so bound the error by the largest value rather than by each one.
            let scale = want.iter().fold(0f64, |m, w| m.max(w.abs()));
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                ensure!(
                    (g - w).abs() <= 1e-9 * (w.abs() + scale),
                    "nbody_fp64: value {i} is {g}, expected {w}"
                );
            }
            Ok(())
        });

    bench
        .case("reduce_single_block/n=2097152,threads=1024", |gpu| {
            let f = gpu
                .compile(&cuda_source!("kernels/reduce_single_block.cu"))?
                .function("reduce_single_block")?;
            let partials = gpu.random::<f32>(PARTIALS as usize)?;
            let mut total = gpu.zeros::<f32>(1)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&partials).arg(&mut total).arg(&PARTIALS).launch(grid_1d(1, 1024))
            })
        })
        .bytes(4 * PARTIALS as u64)
        .check(|gpu| {
            let f = gpu
                .compile(&cuda_source!("kernels/reduce_single_block.cu"))?
                .function("reduce_single_block")?;
            let n = 1_000_003u32;
            let x: Vec<f32> = gpu.random_host(n as usize);
            let dx = gpu.upload(&x)?;
            let mut d_total = gpu.zeros::<f32>(1)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut d_total)
                    .arg(&n)
                    .launch(grid_1d(1, 1024))?;
            }
            let want = x.iter().map(|&v| v as f64).sum::<f64>() as f32;
            // A different summation order: allow float rounding over a million terms.
            assert_close("reduce_single_block", &gpu.download(&d_total)?, &[want], 1e-4, 0.05)
        });

    fix_cases(&mut bench);
    kprof_harness::main(bench);
}

/// The fix variants of FIXES.md (`<kernel>__fix1`, `__fix2`, in kernels/fixes/): the same
/// work and the same host reference as their original (sums in another order are compared
/// with a tolerance).
fn fix_cases(bench: &mut Bench) {
    // __fix1: a warp per row (32 threads a row); __fix2: a thread per row, float4 loads.
    for (kernel, per_row) in [("rowsum_per_thread__fix1", 32u32), ("rowsum_per_thread__fix2", 1)] {
        let source = || cuda_source!("kernels/fixes/rowsum_per_thread.cu");
        bench
            .case(format!("{kernel}/rows=262144,cols=1024"), move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let m = gpu.random::<f32>(ROWS as usize * COLS as usize)?;
                let mut sums = gpu.zeros::<f32>(ROWS as usize)?;
                let cfg = grid_1d((ROWS as u32 * per_row).div_ceil(256), 256);
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f).arg(&m).arg(&mut sums).arg(&ROWS).arg(&COLS).launch(cfg)
                })
            })
            .bytes(4 * ROWS as u64 * COLS as u64 + 4 * ROWS as u64)
            .check(move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                // cols a multiple of 4 (float4 loads of __fix2).
                let (rows, cols) = (300i32, 76i32);
                let m: Vec<f32> = gpu.random_host((rows * cols) as usize);
                let dm = gpu.upload(&m)?;
                let mut ds = gpu.zeros::<f32>(rows as usize)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dm)
                        .arg(&mut ds)
                        .arg(&rows)
                        .arg(&cols)
                        .launch(grid_1d((rows as u32 * per_row).div_ceil(256), 256))?;
                }
                let want: Vec<f32> =
                    m.chunks(cols as usize).map(|r| r.iter().fold(0.0, |s, v| s + v)).collect();
                assert_close(kernel, &gpu.download(&ds)?, &want, 1e-5, 1e-5)
            });
    }
    reduce_fix1_case(bench);
    let source = || cuda_source!("kernels/fixes/reduce_single_block.cu");
    let kernel = "reduce_single_block__fix2";
    bench
        .case(format!("{kernel}/n=2097152,threads=1024"), move |gpu| {
            let f = gpu.compile(&source())?.function(kernel)?;
            let partials = gpu.random::<f32>(PARTIALS as usize)?;
            let mut total = gpu.zeros::<f32>(1)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&partials).arg(&mut total).arg(&PARTIALS).launch(grid_1d(1, 1024))
            })
        })
        .bytes(4 * PARTIALS as u64)
        .check(move |gpu| {
            let f = gpu.compile(&source())?.function(kernel)?;
            let n = 1_000_003u32;
            let x: Vec<f32> = gpu.random_host(n as usize);
            let dx = gpu.upload(&x)?;
            let mut d_total = gpu.zeros::<f32>(1)?;
            unsafe {
                gpu.stream().launch_builder(&f).arg(&dx).arg(&mut d_total).arg(&n).launch(grid_1d(1, 1024))?;
            }
            let want = x.iter().map(|&v| v as f64).sum::<f64>() as f32;
            assert_close(kernel, &gpu.download(&d_total)?, &[want], 1e-4, 0.05)
        });
}

/// `reduce_single_block__fix1`: 8 blocks of 1024 threads per SM's worth of the GPU (1056),
/// the last block adding the partial sums.
fn reduce_fix1_case(bench: &mut Bench) {
    const BLOCKS: u32 = 1056;
    let source = || cuda_source!("kernels/fixes/reduce_single_block.cu");
    let kernel = "reduce_single_block__fix1";
    bench
        .case(format!("{kernel}/n=2097152,threads=1024,blocks=1056"), move |gpu| {
            let f = gpu.compile(&source())?.function(kernel)?;
            let partials = gpu.random::<f32>(PARTIALS as usize)?;
            let mut total = gpu.zeros::<f32>(1)?;
            let mut block_sums = gpu.zeros::<f32>(BLOCKS as usize)?;
            let mut done = gpu.zeros::<u32>(1)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&partials)
                    .arg(&mut total)
                    .arg(&PARTIALS)
                    .arg(&mut block_sums)
                    .arg(&mut done)
                    .launch(grid_1d(BLOCKS, 1024))
            })
        })
        .bytes(4 * PARTIALS as u64)
        .check(move |gpu| {
            let f = gpu.compile(&source())?.function(kernel)?;
            let (n, blocks) = (1_000_003u32, 7u32);
            let x: Vec<f32> = gpu.random_host(n as usize);
            let dx = gpu.upload(&x)?;
            let mut d_total = gpu.zeros::<f32>(1)?;
            let mut d_sums = gpu.zeros::<f32>(blocks as usize)?;
            let mut d_done = gpu.zeros::<u32>(1)?;
            let want = x.iter().map(|&v| v as f64).sum::<f64>() as f32;
            // Twice: the counter must be back at 0 after a launch.
            for _ in 0..2 {
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dx)
                        .arg(&mut d_total)
                        .arg(&n)
                        .arg(&mut d_sums)
                        .arg(&mut d_done)
                        .launch(grid_1d(blocks, 1024))?;
                }
                assert_close(kernel, &gpu.download(&d_total)?, &[want], 1e-4, 0.05)?;
            }
            Ok(())
        });
}
