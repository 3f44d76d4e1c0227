//! `copy`: DRAM-bound. A float4 grid-stride copy of 1 GiB into another 1 GiB.
use kprof_harness::prelude::*;

/// float4 elements: 64 Mi x 16 B = 1 GiB each way.
const N4: usize = 1 << 26;

fn main() {
    let mut bench = Bench::new();
    bench
        .case("copy/bytes=1073741824", |gpu| {
            let copy = gpu.compile(&cuda_source!("kernels/copy.cu"))?.function("copy_kernel")?;
            let src = gpu.random::<f32>(4 * N4)?;
            let mut dst = gpu.zeros::<f32>(4 * N4)?;
            // Enough blocks to fill every SM (8 x 256 threads = 2048 per SM), grid-stride.
            let cfg = grid_1d(gpu.info().sm_count * 8, 256);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&copy).arg(&src).arg(&mut dst).arg(&N4).launch(cfg)
            })
        })
        .bytes(2 * 16 * N4 as u64)
        .check(|gpu| {
            let copy = gpu.compile(&cuda_source!("kernels/copy.cu"))?.function("copy_kernel")?;
            let n4 = 10_007usize;
            let src: Vec<f32> = gpu.random_host(4 * n4);
            let d_src = gpu.upload(&src)?;
            let mut d_dst = gpu.zeros::<f32>(4 * n4)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&copy)
                    .arg(&d_src)
                    .arg(&mut d_dst)
                    .arg(&n4)
                    .launch(grid_1d(7, 256))?;
            }
            assert_close("copy", &gpu.download(&d_dst)?, &src, 0.0, 0.0)
        });
    kprof_harness::main(bench);
}
