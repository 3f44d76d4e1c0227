//! MIO-queue limiters, and an occupancy limiter that a full ncu set can mistake for a
//! memory one: divergent constant loads, shared-memory atomics on few addresses, and a
//! pointer chase held to 4 warps per SM by shared memory. One case per kernel and one per
//! fix variant (`<kernel>__fix1`, `__fix2`, see FIXES.md); what each kernel should show
//! under ncu is in EXPECTED.md.
use kprof_harness::prelude::*;
use kprof_zoo::*;
use kprof_harness::random_cycle;

/// Blocks of 256 threads that fill an H200 exactly once at 8 blocks (2048 threads) per SM.
const FULL_WAVE_BLOCKS: u32 = 8 * 132;
const THREADS: u32 = 256;

const TABLE_ITERS: i32 = 256;
const ATOMIC_ITERS: i32 = 1024;
/// Words of the pointer chase's permutation: 64 MiB, more than L2.
const CHASE_N: usize = 1 << 24;
const CHASE_THREADS: u32 = 128;
/// 8 waves of one block per SM.
const CHASE_BLOCKS: u32 = 8 * 132;
const CHASE_STEPS: i32 = 128;
/// 200 KiB: one block per SM, 4 warps of 64 (6.25 % theoretical occupancy).
const CHASE_SMEM: u32 = 200 * 1024;
/// What a block uses: one word per thread.
const CHASE_SMEM_USED: u32 = CHASE_THREADS * 4;

fn table_source(kernel: &str) -> CudaSource {
    if kernel.contains("__fix") {
        cuda_source!("kernels/fixes/const_table_divergent.cu")
    } else {
        cuda_source!("kernels/const_table_divergent.cu")
    }
}

fn atomics_source(kernel: &str) -> CudaSource {
    if kernel.contains("__fix") {
        cuda_source!("kernels/fixes/smem_atomics_hot.cu")
    } else {
        cuda_source!("kernels/smem_atomics_hot.cu")
    }
}

fn chase_source(kernel: &str) -> CudaSource {
    if kernel.contains("__fix") {
        cuda_source!("kernels/fixes/pointer_chase_smem200k.cu")
    } else {
        cuda_source!("kernels/pointer_chase_smem200k.cu")
    }
}

fn const_table_case(bench: &mut Bench, kernel: &'static str) {
    bench
        .case(format!("{kernel}/blocks=1056,threads=256,iters=256,table_words=1024"), move |gpu| {
            let f = gpu.compile(&table_source(kernel))?.function(kernel)?;
            let mut out = gpu.zeros::<u32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&mut out).arg(&TABLE_ITERS).launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        .check(move |gpu| {
            let f = gpu.compile(&table_source(kernel))?.function(kernel)?;
            let (blocks, iters) = (2u32, 37i32);
            let mut d_out = gpu.zeros::<u32>((blocks * THREADS) as usize)?;
            unsafe {
                gpu.stream().launch_builder(&f).arg(&mut d_out).arg(&iters).launch(grid_1d(blocks, THREADS))?;
            }
            let want: Vec<u32> = (0..blocks * THREADS).map(|t| const_table_reference(t, iters)).collect();
            let got = gpu.download(&d_out)?;
            ensure!(got == want, "{kernel}: output differs from the host reference");
            Ok(())
        });
}

fn smem_atomics_case(bench: &mut Bench, kernel: &'static str) {
    bench
        .case(format!("{kernel}/blocks=1056,threads=256,iters=1024,bins=4"), move |gpu| {
            let f = gpu.compile(&atomics_source(kernel))?.function(kernel)?;
            let seeds = gpu.random::<u32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let mut out = gpu.zeros::<u32>((FULL_WAVE_BLOCKS * 4) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&seeds)
                    .arg(&mut out)
                    .arg(&ATOMIC_ITERS)
                    .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
            })
        })
        .check(move |gpu| {
            let f = gpu.compile(&atomics_source(kernel))?.function(kernel)?;
            let (blocks, iters) = (3u32, 19i32);
            let seeds: Vec<u32> = gpu.random_host((blocks * THREADS) as usize);
            let d_seeds = gpu.upload(&seeds)?;
            let mut d_out = gpu.zeros::<u32>((blocks * 4) as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_seeds)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want = smem_atomics_reference(&seeds, THREADS as usize, iters);
            let got = gpu.download(&d_out)?;
            ensure!(got == want, "{kernel}: bins {got:?}, expected {want:?}");
            Ok(())
        });
}

/// The pointer chase's launch: `smem` bytes of dynamic shared memory per block.
fn chase_config(blocks: u32, smem: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (CHASE_THREADS, 1, 1), shared_mem_bytes: smem }
}

fn pointer_chase_case(bench: &mut Bench, kernel: &'static str, smem: u32) {
    bench
        .case(format!("{kernel}/blocks=1056,threads=128,steps=128,n=16777216,smem={smem}"), move |gpu| {
            let f = gpu.compile(&chase_source(kernel))?.function(kernel)?;
            gpu.set_max_dynamic_shared_memory(&f, smem)?;
            let next = gpu.upload(&random_cycle(CHASE_N, gpu.next_seed())?)?;
            let mut out = gpu.zeros::<u32>((CHASE_BLOCKS * CHASE_THREADS) as usize)?;
            let n = CHASE_N as u32;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&next)
                    .arg(&mut out)
                    .arg(&n)
                    .arg(&CHASE_STEPS)
                    .launch(chase_config(CHASE_BLOCKS, smem))
            })
        })
        .check(move |gpu| {
            let f = gpu.compile(&chase_source(kernel))?.function(kernel)?;
            gpu.set_max_dynamic_shared_memory(&f, smem)?;
            let (n, blocks, steps) = (4096usize, 2u32, 24i32);
            let next = random_cycle(n, gpu.next_seed())?;
            let d_next = gpu.upload(&next)?;
            let mut d_out = gpu.zeros::<u32>((blocks * CHASE_THREADS) as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_next)
                    .arg(&mut d_out)
                    .arg(&(n as u32))
                    .arg(&steps)
                    .launch(chase_config(blocks, smem))?;
            }
            let want = pointer_chase_reference(&next, blocks, CHASE_THREADS, steps);
            let got = gpu.download(&d_out)?;
            ensure!(got == want, "{kernel}: output differs from the host reference");
            Ok(())
        });
}

fn main() {
    let mut bench = Bench::new();
    const_table_case(&mut bench, "const_table_divergent");
    smem_atomics_case(&mut bench, "smem_atomics_hot");
    pointer_chase_case(&mut bench, "pointer_chase_smem200k", CHASE_SMEM);
    // The fix variants (FIXES.md): same work, same host reference.
    const_table_case(&mut bench, "const_table_divergent__fix1");
    const_table_case(&mut bench, "const_table_divergent__fix2");
    smem_atomics_case(&mut bench, "smem_atomics_hot__fix1");
    smem_atomics_case(&mut bench, "smem_atomics_hot__fix2");
    pointer_chase_case(&mut bench, "pointer_chase_smem200k__fix1", CHASE_SMEM_USED);
    pointer_chase_case(&mut bench, "pointer_chase_smem200k__fix2", CHASE_SMEM);
    kprof_harness::main(bench);
}
