//! `hgemm`: half inputs, float accumulate, m = n = k = 4096. `hgemm_naive` (one thread per
//! output, global loads in the inner loop) and `hgemm_tiled` (32 x 32 shared-memory tiles),
//! both checked against a host reference at 256.
use kprof_demo::hgemm_reference;
use kprof_harness::prelude::*;

const SIZE: usize = 4096;
const CHECK_SIZE: usize = 256;

/// Block and grid for an n x n output: naive uses 16 x 16 threads, tiled 32 x 32 (one per
/// tile element).
fn launch_config(kernel: &str, n: usize) -> LaunchConfig {
    let side: u32 = if kernel == "hgemm_tiled" { 32 } else { 16 };
    let blocks = (n as u32).div_ceil(side);
    LaunchConfig { grid_dim: (blocks, blocks, 1), block_dim: (side, side, 1), shared_mem_bytes: 0 }
}

fn kernel(gpu: &Gpu, name: &str) -> Result<CudaFunction> {
    gpu.compile(&cuda_source!("kernels/hgemm.cu"))?.function(name)
}

/// Runs `name` on a small random problem and compares with the host reference.
fn check(gpu: &Gpu, name: &str) -> Result<()> {
    let f = kernel(gpu, name)?;
    let n = CHECK_SIZE;
    let a: Vec<f16> = gpu.random_host(n * n);
    let b: Vec<f16> = gpu.random_host(n * n);
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut dc = gpu.zeros::<f32>(n * n)?;
    let d = n as i32;
    unsafe {
        gpu.stream()
            .launch_builder(&f)
            .arg(&da)
            .arg(&db)
            .arg(&mut dc)
            .arg(&d)
            .arg(&d)
            .arg(&d)
            .launch(launch_config(name, n))?;
    }
    let want = hgemm_reference(&a, &b, n, n, n);
    assert_close(name, &gpu.download(&dc)?, &want, 1e-3, 1e-3)
}

fn main() {
    let n = SIZE as u64;
    let mut bench = Bench::new();
    for name in ["hgemm_naive", "hgemm_tiled"] {
        bench
            .case(format!("{name}/m={SIZE},n={SIZE},k={SIZE}"), move |gpu| {
                let f = kernel(gpu, name)?;
                let a = gpu.random::<f16>(SIZE * SIZE)?;
                let b = gpu.random::<f16>(SIZE * SIZE)?;
                let mut c = gpu.zeros::<f32>(SIZE * SIZE)?;
                let d = SIZE as i32;
                let cfg = launch_config(name, SIZE);
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f).arg(&a).arg(&b).arg(&mut c).arg(&d).arg(&d).arg(&d).launch(cfg)
                })
            })
            .flops(2 * n * n * n)
            // The least traffic possible: A and B read once (half), C written once (float).
            .bytes(2 * n * n * 2 + n * n * 4)
            .check(move |gpu| check(gpu, name));
    }
    kprof_harness::main(bench);
}
