//! `fma`: compute-bound. Eight independent FMA chains per thread, in registers.
use kprof_harness::prelude::*;

const BLOCKS: u32 = 4096;
const THREADS: u32 = 256;
const ITERS: i32 = 4096;
/// Must match `CHAINS` in kernels/fma.cu.
const CHAINS: u64 = 8;

fn main() {
    let total_threads = (BLOCKS * THREADS) as usize;
    let mut bench = Bench::new();
    bench
        .case("fma/threads=1048576,iters=4096,chains=8", move |gpu| {
            let fma = gpu.compile(&cuda_source!("kernels/fma.cu"))?.function("fma_kernel")?;
            let mut out = gpu.zeros::<f32>(total_threads)?;
            // Converges to b / (1 - a) = 1: no overflow, no denormals.
            let (a, b) = (0.999f32, 0.001f32);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&fma)
                    .arg(&mut out)
                    .arg(&a)
                    .arg(&b)
                    .arg(&ITERS)
                    .launch(grid_1d(BLOCKS, THREADS))
            })
        })
        .flops(total_threads as u64 * ITERS as u64 * CHAINS * 2)
        .bytes(total_threads as u64 * 4);
    kprof_harness::main(bench);
}
