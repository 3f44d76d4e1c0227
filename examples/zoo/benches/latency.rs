//! Limiters that leave the GPU waiting rather than busy: same-address atomics, barrier
//! stalls, too small a grid, a tail wave, launch overhead, instruction-cache misses. One
//! case per kernel; what each should show under ncu is in EXPECTED.md.
use kprof_harness::prelude::*;
use kprof_zoo::*;

/// Blocks that fill an H200 exactly once at 8 blocks of 256 threads per SM.
const FULL_WAVE_BLOCKS: u32 = 8 * 132;
const THREADS: u32 = 256;

const ATOMIC_N: usize = 1 << 23;
const LEADER_STEPS: i32 = 4096;
const LEADER_WORK: i32 = 64;
const LOGISTIC_BLOCKS: u32 = 4;
const LOGISTIC_THREADS: u32 = 64;
const LOGISTIC_ITERS: i32 = 1 << 18;
const LOGISTIC_R: f32 = 3.7;
const TAIL_THREADS: u32 = 1024;
/// Dynamic shared memory of `fixed_blocks_fma`: more than half an SM's 228 KiB, so one
/// block per SM.
const TAIL_SMEM: u32 = 160 * 1024;
const TAIL_ITERS: i32 = 16384;
const VEC_N: i32 = 256;
const CODE_STEPS: i32 = 128;
const CODE_K: f32 = 0.25;

fn main() {
    let mut bench = Bench::new();

    bench
        .case("atomic_bins/n=8388608,bins=8,blocks=1056", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/atomic_bins.cu"))?.function("atomic_bins")?;
            let data = gpu.random::<u32>(ATOMIC_N)?;
            let mut bins = gpu.zeros::<u32>(8)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&data)
                    .arg(&mut bins)
                    .arg(&ATOMIC_N)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        .bytes(4 * ATOMIC_N as u64)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/atomic_bins.cu"))?.function("atomic_bins")?;
            let n = 100_003usize;
            let data: Vec<u32> = gpu.random_host(n);
            let d_data = gpu.upload(&data)?;
            let mut d_bins = gpu.zeros::<u32>(8)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_data)
                    .arg(&mut d_bins)
                    .arg(&n)
                    .launch(grid_1d(5, THREADS))?;
            }
            let mut want = [0u32; 8];
            for (i, &v) in data.iter().enumerate() {
                want[i & 7] += v & 255;
            }
            let got = gpu.download(&d_bins)?;
            ensure!(got == want, "atomic_bins: bins {got:?}, expected {want:?}");
            Ok(())
        });

    bench
        .case("leader_warp_steps/blocks=1056,threads=256,steps=4096,leader_work=64", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/leader_warp_steps.cu"))?.function("leader_warp_steps")?;
            let x = gpu.random::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&x)
                    .arg(&mut out)
                    .arg(&LEADER_STEPS)
                    .arg(&LEADER_WORK)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/leader_warp_steps.cu"))?.function("leader_warp_steps")?;
            let (blocks, steps, work) = (2u32, 5i32, 7i32);
            let x: Vec<f32> = gpu.random_host((blocks * THREADS) as usize);
            let dx = gpu.upload(&x)?;
            let mut d_out = gpu.zeros::<f32>(x.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut d_out)
                    .arg(&steps)
                    .arg(&work)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want: Vec<f32> = x
                .chunks(THREADS as usize)
                .flat_map(|block| leader_warp_reference(block, steps, work))
                .collect();
            assert_close("leader_warp_steps", &gpu.download(&d_out)?, &want, 0.0, 0.0)
        });

    bench
        .case("logistic_map/blocks=4,threads=64,iters=262144", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/logistic_map.cu"))?.function("logistic_map")?;
            let x = gpu.random::<f32>((LOGISTIC_BLOCKS * LOGISTIC_THREADS) as usize)?;
            let mut out = gpu.zeros::<f32>((LOGISTIC_BLOCKS * LOGISTIC_THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&x)
                    .arg(&mut out)
                    .arg(&LOGISTIC_R)
                    .arg(&LOGISTIC_ITERS)
                    .launch(grid_1d(LOGISTIC_BLOCKS, LOGISTIC_THREADS))
            })
        })
        .check(|gpu| {
            // Chaotic: a few steps only, so the comparison is exact arithmetic, not chaos.
            let f = gpu.compile(&cuda_source!("kernels/logistic_map.cu"))?.function("logistic_map")?;
            let iters = 9i32;
            let x: Vec<f32> = gpu.random_host((LOGISTIC_BLOCKS * LOGISTIC_THREADS) as usize);
            let dx = gpu.upload(&x)?;
            let mut d_out = gpu.zeros::<f32>(x.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut d_out)
                    .arg(&LOGISTIC_R)
                    .arg(&iters)
                    .launch(grid_1d(LOGISTIC_BLOCKS, LOGISTIC_THREADS))?;
            }
            let want: Vec<f32> = x.iter().map(|&v| logistic_reference(v, LOGISTIC_R, iters)).collect();
            assert_close("logistic_map", &gpu.download(&d_out)?, &want, 1e-5, 1e-6)
        });

    bench
        .case("fixed_blocks_fma/blocks=sms+1,threads=1024,smem=163840,iters=16384", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/fixed_blocks_fma.cu"))?.function("fixed_blocks_fma")?;
            gpu.set_max_dynamic_shared_memory(&f, TAIL_SMEM)?;
            let blocks = gpu.info().sm_count + 1;
            let mut out = gpu.zeros::<f32>((blocks * TAIL_THREADS) as usize)?;
            let (a, b) = (0.999f32, 0.001f32);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (TAIL_THREADS, 1, 1),
                shared_mem_bytes: TAIL_SMEM,
            };
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&mut out).arg(&a).arg(&b).arg(&TAIL_ITERS).launch(cfg)
            })
        })
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/fixed_blocks_fma.cu"))?.function("fixed_blocks_fma")?;
            gpu.set_max_dynamic_shared_memory(&f, TAIL_SMEM)?;
            let (blocks, iters, a, b) = (2u32, 13i32, 0.999f32, 0.001f32);
            let mut d_out = gpu.zeros::<f32>((blocks * TAIL_THREADS) as usize)?;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (TAIL_THREADS, 1, 1),
                shared_mem_bytes: TAIL_SMEM,
            };
            unsafe {
                gpu.stream().launch_builder(&f).arg(&mut d_out).arg(&a).arg(&b).arg(&iters).launch(cfg)?;
            }
            // The kernel sums chain (c + 1) % 8 for c = 0..8: chains 1..7, then 0.
            let want: Vec<f32> = (0..blocks * TAIL_THREADS)
                .map(|t| {
                    let x = fma_chains(t, a, b, iters);
                    (0..8).fold(0.0, |s, c| s + x[(c + 1) % 8])
                })
                .collect();
            assert_close("fixed_blocks_fma", &gpu.download(&d_out)?, &want, 0.0, 0.0)
        });

    bench
        .case("vec_add_small/n=256,blocks=1", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/vec_add_small.cu"))?.function("vec_add_small")?;
            let a = gpu.random::<f32>(VEC_N as usize)?;
            let b = gpu.random::<f32>(VEC_N as usize)?;
            let mut c = gpu.zeros::<f32>(VEC_N as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&a).arg(&b).arg(&mut c).arg(&VEC_N).launch(grid_1d(1, VEC_N as u32))
            })
        })
        .bytes(3 * 4 * VEC_N as u64)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/vec_add_small.cu"))?.function("vec_add_small")?;
            let a: Vec<f32> = gpu.random_host(VEC_N as usize);
            let b: Vec<f32> = gpu.random_host(VEC_N as usize);
            let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
            let mut dc = gpu.zeros::<f32>(VEC_N as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&da)
                    .arg(&db)
                    .arg(&mut dc)
                    .arg(&VEC_N)
                    .launch(grid_1d(1, VEC_N as u32))?;
            }
            let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
            assert_close("vec_add_small", &gpu.download(&dc)?, &want, 0.0, 0.0)
        });

    bench
        .case("code_switch_64/blocks=1056,threads=256,steps=128,code_blocks=64", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/code_switch_64.cu"))?.function("code_switch_64")?;
            let x = gpu.random::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&x)
                    .arg(&mut out)
                    .arg(&CODE_K)
                    .arg(&CODE_STEPS)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        // 256 FFMAs per step.
        .flops((FULL_WAVE_BLOCKS * THREADS) as u64 * CODE_STEPS as u64 * 256 * 2)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/code_switch_64.cu"))?.function("code_switch_64")?;
            let (blocks, steps) = (2u32, 6i32);
            let x: Vec<f32> = gpu.random_host((blocks * THREADS) as usize);
            let dx = gpu.upload(&x)?;
            let mut d_out = gpu.zeros::<f32>(x.len())?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut d_out)
                    .arg(&CODE_K)
                    .arg(&steps)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want: Vec<f32> = x
                .iter()
                .enumerate()
                .map(|(t, &v)| code_switch_reference(t as u32, v, CODE_K, steps))
                .collect();
            assert_close("code_switch_64", &gpu.download(&d_out)?, &want, 1e-6, 1e-7)
        });

    fix_cases(&mut bench);
    kprof_harness::main(bench);
}

/// The fix variants of FIXES.md (`<kernel>__fix1`, `__fix2`, in kernels/fixes/): the same
/// work and the same host reference as their original.
fn fix_cases(bench: &mut Bench) {
    for kernel in ["atomic_bins__fix1", "atomic_bins__fix2"] {
        let source = || cuda_source!("kernels/fixes/atomic_bins.cu");
        bench
            .case(format!("{kernel}/n=8388608,bins=8,blocks=1056"), move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let data = gpu.random::<u32>(ATOMIC_N)?;
                let mut bins = gpu.zeros::<u32>(8)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&data)
                        .arg(&mut bins)
                        .arg(&ATOMIC_N)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(4 * ATOMIC_N as u64)
            .check(move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let n = 100_003usize;
                let data: Vec<u32> = gpu.random_host(n);
                let d_data = gpu.upload(&data)?;
                let mut d_bins = gpu.zeros::<u32>(8)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&d_data)
                        .arg(&mut d_bins)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?;
                }
                let mut want = [0u32; 8];
                for (i, &v) in data.iter().enumerate() {
                    want[i & 7] += v & 255;
                }
                let got = gpu.download(&d_bins)?;
                ensure!(got == want, "{kernel}: bins {got:?}, expected {want:?}");
                Ok(())
            });
    }
    // __fix1: the same threads in 256-thread blocks with the 8 KiB they use; __fix2: the
    // same 1024-thread blocks with the 32 KiB they use.
    for (kernel, threads, smem) in [("fixed_blocks_fma__fix1", 256u32, 8 * 1024u32), ("fixed_blocks_fma__fix2", 1024, 32 * 1024)]
    {
        fixed_blocks_fix_case(bench, kernel, threads, smem);
    }
}

fn fixed_blocks_fix_case(bench: &mut Bench, kernel: &'static str, threads: u32, smem: u32) {
    let source = || cuda_source!("kernels/fixes/fixed_blocks_fma.cu");
    let config = move |total: u32| LaunchConfig {
        grid_dim: (total / threads, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem,
    };
    bench
        .case(format!("{kernel}/threads=(sms+1)*1024,block={threads},smem={smem},iters=16384"), move |gpu| {
            let f = gpu.compile(&source())?.function(kernel)?;
            gpu.set_max_dynamic_shared_memory(&f, smem)?;
            let total = (gpu.info().sm_count + 1) * TAIL_THREADS;
            let mut out = gpu.zeros::<f32>(total as usize)?;
            let (a, b) = (0.999f32, 0.001f32);
            let cfg = config(total);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&mut out).arg(&a).arg(&b).arg(&TAIL_ITERS).launch(cfg)
            })
        })
        .check(move |gpu| {
            let f = gpu.compile(&source())?.function(kernel)?;
            gpu.set_max_dynamic_shared_memory(&f, smem)?;
            let (total, iters, a, b) = (2 * TAIL_THREADS, 13i32, 0.999f32, 0.001f32);
            let mut d_out = gpu.zeros::<f32>(total as usize)?;
            unsafe {
                gpu.stream().launch_builder(&f).arg(&mut d_out).arg(&a).arg(&b).arg(&iters).launch(config(total))?;
            }
            let want: Vec<f32> = (0..total)
                .map(|t| {
                    let x = fma_chains(t, a, b, iters);
                    (0..8).fold(0.0, |s, c| s + x[(c + 1) % 8])
                })
                .collect();
            assert_close(kernel, &gpu.download(&d_out)?, &want, 0.0, 0.0)
        });
}
