//! `reduce`: a block reduction whose PTX nvcc made in build.rs, loaded as given.
use demo_nvcc::reduce_ptx;
use kprof_harness::prelude::*;

/// 256 Mi floats = 1 GiB read once: about 0.4 ms on an H200, long enough that rare
/// host-side hiccups stay under 1 % noise (at 256 MiB, 0.1 ms, they reached 1.6-1.8 %).
const N: usize = 1 << 28;
const THREADS: u32 = 256;

fn load(gpu: &Gpu) -> Result<CudaFunction> {
    gpu.load_ptx(reduce_ptx()?, "reduce.ptx (nvcc)")?.function("reduce_kernel")
}

fn main() {
    let mut bench = Bench::new();
    bench
        .case("reduce/n=268435456", |gpu| {
            let f = load(gpu)?;
            let blocks = gpu.info().sm_count * 8;
            let input = gpu.random::<f32>(N)?;
            let mut partial = gpu.zeros::<f32>(blocks as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&input).arg(&mut partial).arg(&N).launch(grid_1d(blocks, THREADS))
            })
        })
        .bytes(4 * N as u64)
        .check(|gpu| {
            let f = load(gpu)?;
            let (n, blocks) = (1usize << 20, 64u32);
            let x: Vec<f32> = gpu.random_host(n);
            let d_x = gpu.upload(&x)?;
            let mut d_partial = gpu.zeros::<f32>(blocks as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_x)
                    .arg(&mut d_partial)
                    .arg(&n)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let got: f64 = gpu.download(&d_partial)?.iter().map(|&v| v as f64).sum();
            let want: f64 = x.iter().map(|&v| v as f64).sum();
            let scale: f64 = x.iter().map(|&v| v.abs() as f64).sum();
            ensure!(
                (got - want).abs() <= 1e-5 * scale,
                "reduce: got {got}, expected {want} (tolerance {})",
                1e-5 * scale
            );
            Ok(())
        });
    kprof_harness::main(bench);
}
