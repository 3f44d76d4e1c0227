//! `tiny`: latency-bound. One warp chasing pointers through a random cycle.
use kprof_harness::prelude::*;

/// 4 MiB of links: larger than L1, so each step is an L2 (hot) or DRAM (cold) round trip.
const TABLE: usize = 1 << 20;
/// 2048 dependent loads: about 0.4 ms hot. Each step's latency varies with where the link
/// lies in L2, and over 256 steps (52 us) that still left 1.7 % noise on an H200.
const STEPS: i32 = 2048;
const THREADS: u32 = 32;

fn main() {
    let mut bench = Bench::new();
    bench.case("tiny/threads=32,steps=2048", |gpu| {
        let tiny = gpu.compile(&cuda_source!("kernels/tiny.cu"))?.function("tiny_kernel")?;
        let next = gpu.upload(&kprof_harness::random_cycle(TABLE, gpu.next_seed())?)?;
        let mut out = gpu.zeros::<f32>(THREADS as usize)?;
        let table_len = TABLE as u32;
        Ok(move |s: &CudaStream| unsafe {
            s.launch_builder(&tiny)
                .arg(&next)
                .arg(&mut out)
                .arg(&table_len)
                .arg(&STEPS)
                .launch(grid_1d(1, THREADS))
        })
    });
    kprof_harness::main(bench);
}
