//! Compute-side limiters: the FP32 FMA, integer ALU, FP64, special-function (XU), tensor
//! and LSU pipes, and warp divergence. One case per kernel; what each should show under
//! ncu is in EXPECTED.md.
use kprof_harness::prelude::*;
use kprof_zoo::*;

/// 4096 blocks of 256 threads: 1 Mi threads, ~4 waves of 8 blocks per SM on an H200.
const BIG_BLOCKS: u32 = 4096;
/// Blocks that fill an H200 exactly once at 8 blocks per SM.
const FULL_WAVE_BLOCKS: u32 = 8 * 132;
const THREADS: u32 = 256;

const FMA_ITERS: i32 = 4096;
const CHACHA_DOUBLE_ROUNDS: i32 = 256;
const DFMA_ITERS: i32 = 2048;
const SFU_ITERS: i32 = 384;
const HMMA_THREADS: u32 = 128;
const HMMA_ITERS: i32 = 4096;
const BYTE_SUM_ITERS: i32 = 4096;
const BYTE_SUM_SHIFT: i32 = 32;
const LANE_SWITCH_ITERS: i32 = 4096;

/// Launches `f(out, a, b, iters)` on `blocks` x `threads` (the FMA-chain signature).
fn chains_check<T>(
    gpu: &Gpu,
    f: &CudaFunction,
    out: &mut CudaSlice<T>,
    a: T,
    b: T,
    iters: i32,
    blocks: u32,
) -> Result<()>
where
    T: kprof_harness::cudarc::driver::DeviceRepr,
{
    unsafe {
        gpu.stream()
            .launch_builder(f)
            .arg(out)
            .arg(&a)
            .arg(&b)
            .arg(&iters)
            .launch(grid_1d(blocks, THREADS))?;
    }
    Ok(())
}

fn main() {
    let mut bench = Bench::new();
    let big_threads = (BIG_BLOCKS * THREADS) as u64;

    bench
        .case("fp32_fma_chains/threads=1048576,iters=4096,chains=8", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/fp32_fma_chains.cu"))?.function("fp32_fma_chains")?;
            let mut out = gpu.zeros::<f32>((BIG_BLOCKS * THREADS) as usize)?;
            // Converges to b / (1 - a) = 1: no overflow, no denormals.
            let (a, b) = (0.999f32, 0.001f32);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&mut out)
                    .arg(&a)
                    .arg(&b)
                    .arg(&FMA_ITERS)
                    .launch(grid_1d(BIG_BLOCKS, THREADS))
            })
        })
        .flops(big_threads * FMA_ITERS as u64 * 8 * 2)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/fp32_fma_chains.cu"))?.function("fp32_fma_chains")?;
            let (blocks, iters, a, b) = (2u32, 13i32, 0.999f32, 0.001f32);
            let mut out = gpu.zeros::<f32>((blocks * THREADS) as usize)?;
            chains_check(gpu, &f, &mut out, a, b, iters, blocks)?;
            let want: Vec<f32> = (0..blocks * THREADS)
                .map(|t| fma_chains(t, a, b, iters).iter().fold(0.0, |s, v| s + v))
                .collect();
            assert_close("fp32_fma_chains", &gpu.download(&out)?, &want, 0.0, 0.0)
        });

    bench
        .case("chacha_rounds/threads=1048576,double_rounds=256", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/chacha_rounds.cu"))?.function("chacha_rounds")?;
            let keys = gpu.random::<u32>((BIG_BLOCKS * THREADS) as usize)?;
            let mut out = gpu.zeros::<u32>((BIG_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&keys)
                    .arg(&mut out)
                    .arg(&CHACHA_DOUBLE_ROUNDS)
                    .launch(grid_1d(BIG_BLOCKS, THREADS))
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/chacha_rounds.cu"))?.function("chacha_rounds")?;
            let (blocks, rounds) = (2u32, 5i32);
            let keys: Vec<u32> = gpu.random_host((blocks * THREADS) as usize);
            let d_keys = gpu.upload(&keys)?;
            let mut d_out = gpu.zeros::<u32>(keys.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_keys)
                    .arg(&mut d_out)
                    .arg(&rounds)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let got = gpu.download(&d_out)?;
            for (t, (&g, &k)) in got.iter().zip(&keys).enumerate() {
                let want = chacha_reference(t as u32, k, rounds);
                ensure!(g == want, "chacha_rounds: thread {t} computed {g:#010x}, expected {want:#010x}");
            }
            Ok(())
        });

    bench
        .case("fp64_dfma_chains/threads=1048576,iters=2048,chains=8", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/fp64_dfma_chains.cu"))?.function("fp64_dfma_chains")?;
            let mut out = gpu.zeros::<f64>((BIG_BLOCKS * THREADS) as usize)?;
            let (a, b) = (0.999f64, 0.001f64);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&mut out)
                    .arg(&a)
                    .arg(&b)
                    .arg(&DFMA_ITERS)
                    .launch(grid_1d(BIG_BLOCKS, THREADS))
            })
        })
        // FP64 operations; the harness relates them to the FP32 peak (FP64 peak is half).
        .flops(big_threads * DFMA_ITERS as u64 * 8 * 2)
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/fp64_dfma_chains.cu"))?.function("fp64_dfma_chains")?;
            let (blocks, iters, a, b) = (2u32, 11i32, 0.999f64, 0.001f64);
            let mut out = gpu.zeros::<f64>((blocks * THREADS) as usize)?;
            chains_check(gpu, &f, &mut out, a, b, iters, blocks)?;
            let got = gpu.download(&out)?;
            for (t, &g) in got.iter().enumerate() {
                let want = dfma_chains_sum(t as u32, a, b, iters);
                ensure!(g == want, "fp64_dfma_chains: thread {t} computed {g}, expected {want}");
            }
            Ok(())
        });

    bench
        .case("sfu_chains/threads=1048576,iters=384,chains=4", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/sfu_chains.cu"))?.function("sfu_chains")?;
            let x = gpu.random::<f32>((BIG_BLOCKS * THREADS) as usize)?;
            let mut out = gpu.zeros::<f32>((BIG_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&x)
                    .arg(&mut out)
                    .arg(&SFU_ITERS)
                    .launch(grid_1d(BIG_BLOCKS, THREADS))
            })
        })
        .check(|gpu| {
            // __sinf, rsqrtf and __expf are approximate: compare with exact functions loosely.
            let f = gpu.compile(&cuda_source!("kernels/sfu_chains.cu"))?.function("sfu_chains")?;
            let (blocks, iters) = (2u32, 4i32);
            let x: Vec<f32> = gpu.random_host((blocks * THREADS) as usize);
            let dx = gpu.upload(&x)?;
            let mut d_out = gpu.zeros::<f32>(x.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want: Vec<f32> = x.iter().map(|&v| sfu_chains_reference(v, iters)).collect();
            assert_close("sfu_chains", &gpu.download(&d_out)?, &want, 1e-2, 1e-3)
        });

    bench
        .case("hmma_loop/blocks=1056,threads=128,iters=4096,accumulators=4", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/hmma_loop.cu"))?.function("hmma_loop")?;
            let a = gpu.random::<f16>(256)?;
            let b = gpu.random::<f16>(256)?;
            let warps = (FULL_WAVE_BLOCKS * HMMA_THREADS / 32) as usize;
            let mut out = gpu.zeros::<f32>(warps * 256)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&a)
                    .arg(&b)
                    .arg(&mut out)
                    .arg(&HMMA_ITERS)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, HMMA_THREADS))
            })
        })
        // 4 mma_sync of 16 x 16 x 16 per iteration per warp.
        .flops((FULL_WAVE_BLOCKS * HMMA_THREADS / 32) as u64 * HMMA_ITERS as u64 * 4 * 2 * 16 * 16 * 16)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/hmma_loop.cu"))?.function("hmma_loop")?;
            let (blocks, iters) = (2u32, 3i32);
            let a: Vec<f16> = gpu.random_host(256);
            let b: Vec<f16> = gpu.random_host(256);
            let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
            let warps = (blocks * HMMA_THREADS / 32) as usize;
            let mut d_out = gpu.zeros::<f32>(warps * 256)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&da)
                    .arg(&db)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .launch(grid_1d(blocks, HMMA_THREADS))?;
            }
            let scale = (4 * iters) as f32;
            let want: Vec<f32> = matmul16(&a, &b).iter().map(|v| v * scale).collect::<Vec<_>>().repeat(warps);
            assert_close("hmma_loop", &gpu.download(&d_out)?, &want, 1e-3, 1e-3)
        });

    bench
        .case("smem_byte_sum/blocks=1056,threads=256,iters=4096", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/smem_byte_sum.cu"))?.function("smem_byte_sum")?;
            let words = gpu.random::<u32>(8192 / 4)?;
            let mut out = gpu.zeros::<u32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&words)
                    .arg(&mut out)
                    .arg(&BYTE_SUM_ITERS)
                    .arg(&BYTE_SUM_SHIFT)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/smem_byte_sum.cu"))?.function("smem_byte_sum")?;
            let (blocks, iters) = (2u32, 21i32);
            let words: Vec<u32> = gpu.random_host(8192 / 4);
            let d_words = gpu.upload(&words)?;
            let mut d_out = gpu.zeros::<u32>((blocks * THREADS) as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_words)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .arg(&BYTE_SUM_SHIFT)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let got = gpu.download(&d_out)?;
            let want = smem_byte_sum_reference(&words, blocks, iters, BYTE_SUM_SHIFT);
            ensure!(got == want, "smem_byte_sum: the sums differ from the host reference");
            Ok(())
        });

    bench
        .case("lane_switch/blocks=1056,threads=256,iters=4096,branches=8", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/lane_switch.cu"))?.function("lane_switch")?;
            let x = gpu.random::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&x)
                    .arg(&mut out)
                    .arg(&LANE_SWITCH_ITERS)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/lane_switch.cu"))?.function("lane_switch")?;
            let (blocks, iters) = (2u32, 17i32);
            let x: Vec<f32> = gpu.random_host((blocks * THREADS) as usize);
            let dx = gpu.upload(&x)?;
            let mut d_out = gpu.zeros::<f32>(x.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want: Vec<f32> = x
                .iter()
                .enumerate()
                .map(|(t, &v)| lane_switch_reference(v, ((t as u32 % THREADS) >> 2) & 7, iters))
                .collect();
            assert_close("lane_switch", &gpu.download(&d_out)?, &want, 1e-5, 1e-6)
        });

    fix_cases(&mut bench);
    kprof_harness::main(bench);
}

/// The fix variants of FIXES.md (`lane_switch__fix1`, `__fix2`, in kernels/fixes/): the
/// same launch and the same host reference as `lane_switch`.
fn fix_cases(bench: &mut Bench) {
    for kernel in ["lane_switch__fix1", "lane_switch__fix2"] {
        let source = || cuda_source!("kernels/fixes/lane_switch.cu");
        bench
            .case(format!("{kernel}/blocks=1056,threads=256,iters=4096,branches=8"), move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let x = gpu.random::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
                let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&x)
                        .arg(&mut out)
                        .arg(&LANE_SWITCH_ITERS)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .check(move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let (blocks, iters) = (2u32, 17i32);
                let x: Vec<f32> = gpu.random_host((blocks * THREADS) as usize);
                let dx = gpu.upload(&x)?;
                let mut d_out = gpu.zeros::<f32>(x.len())?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dx)
                        .arg(&mut d_out)
                        .arg(&iters)
                        .launch(grid_1d(blocks, THREADS))?;
                }
                let want: Vec<f32> = x
                    .iter()
                    .enumerate()
                    .map(|(t, &v)| lane_switch_reference(v, ((t as u32 % THREADS) >> 2) & 7, iters))
                    .collect();
                assert_close(kernel, &gpu.download(&d_out)?, &want, 1e-5, 1e-6)
            });
    }
}
