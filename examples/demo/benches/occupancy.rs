//! `occupancy`: a streaming copy through 200 KiB of shared memory per 128-thread block,
//! so one block (4 warps) per SM: limited by occupancy, not by DRAM.
use kprof_harness::prelude::*;

/// float4 elements: 1 GiB each way, like `copy`, to compare the two.
const N4: usize = 1 << 26;
const SMEM_BYTES: u32 = 200 * 1024;
const THREADS: u32 = 128;

fn main() {
    let mut bench = Bench::new();
    bench
        .case("occupancy/bytes=1073741824,smem=204800,threads=128", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/occupancy.cu"))?.function("occupancy_kernel")?;
            gpu.set_max_dynamic_shared_memory(&f, SMEM_BYTES)?;
            let src = gpu.random::<f32>(4 * N4)?;
            let mut dst = gpu.zeros::<f32>(4 * N4)?;
            let tile_elems = SMEM_BYTES / 16;
            let cfg = LaunchConfig {
                grid_dim: (gpu.info().sm_count, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: SMEM_BYTES,
            };
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&src).arg(&mut dst).arg(&N4).arg(&tile_elems).launch(cfg)
            })
        })
        .bytes(2 * 16 * N4 as u64)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/occupancy.cu"))?.function("occupancy_kernel")?;
            gpu.set_max_dynamic_shared_memory(&f, SMEM_BYTES)?;
            let tile_elems = SMEM_BYTES / 16;
            // Two full tiles and a partial one, over two blocks.
            let n4 = 2 * tile_elems as usize + 1000;
            let src: Vec<f32> = gpu.random_host(4 * n4);
            let d_src = gpu.upload(&src)?;
            let mut d_dst = gpu.zeros::<f32>(4 * n4)?;
            let cfg = LaunchConfig {
                grid_dim: (2, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: SMEM_BYTES,
            };
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_src)
                    .arg(&mut d_dst)
                    .arg(&n4)
                    .arg(&tile_elems)
                    .launch(cfg)?;
            }
            // Each tile comes out reversed (in float4 units).
            let mut want = vec![0f32; 4 * n4];
            let tile = tile_elems as usize;
            for base in (0..n4).step_by(tile) {
                let count = tile.min(n4 - base);
                for j in 0..count {
                    let from = base + count - 1 - j;
                    want[4 * (base + j)..4 * (base + j) + 4].copy_from_slice(&src[4 * from..4 * from + 4]);
                }
            }
            assert_close("occupancy", &gpu.download(&d_dst)?, &want, 0.0, 0.0)
        });
    kprof_harness::main(bench);
}
