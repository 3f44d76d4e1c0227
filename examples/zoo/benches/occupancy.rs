//! Occupancy limiters: the same latency-bound warp-cooperative list walk held to a few
//! resident warps per SM by registers, by shared memory, and by one-warp blocks. One case
//! per kernel; what each should show under ncu is in EXPECTED.md.
//!
//! Each walk runs 4 waves of warps on an H200 at its occupancy limit, so resident warps
//! set the time directly.
use kprof_harness::prelude::*;
use kprof_zoo::*;

/// Nodes of the list: 1 Mi nodes of 128 bytes, 128 MiB, far more than L2.
const NODES: usize = 1 << 20;
const STEPS: i32 = 512;

/// `list_walk_regtile`: 1056 blocks of 256 threads; 2 blocks per SM fit (128 registers).
const REGTILE_BLOCKS: u32 = 1056;
const REGTILE_THREADS: u32 = 256;
/// `list_walk_smem`: 1056 blocks of 128 threads; 2 blocks per SM fit (110 KiB each).
const SMEM_BLOCKS: u32 = 1056;
const SMEM_THREADS: u32 = 128;
const RING_ROWS: i32 = 220;
const SMEM_BYTES: u32 = (SMEM_THREADS / 32) * RING_ROWS as u32 * 32 * 4;
/// `list_walk_warp_blocks`: 16896 blocks of 32 threads; 32 blocks per SM fit.
const WARP_BLOCKS: u32 = 16896;

/// Small problems for the checks: few nodes, few steps, two blocks.
const CHECK_NODES: usize = 4096;
const CHECK_STEPS: i32 = 24;

fn upload_nodes(gpu: &Gpu, n: usize) -> Result<(Vec<u32>, CudaSlice<u32>)> {
    let nodes = list_nodes(n, gpu.next_seed())?;
    let d = gpu.upload(&nodes)?;
    Ok((nodes, d))
}

fn smem_config(blocks: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (SMEM_THREADS, 1, 1), shared_mem_bytes: SMEM_BYTES }
}

fn main() {
    let mut bench = Bench::new();
    let num_nodes = NODES as u32;

    bench
        .case("list_walk_regtile/blocks=1056,threads=256,steps=512,nodes=1048576,tile=112", move |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/list_walk.cu"))?.function("list_walk_regtile")?;
            let (_, nodes) = upload_nodes(gpu, NODES)?;
            let mut out = gpu.zeros::<f32>((REGTILE_BLOCKS * REGTILE_THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&nodes)
                    .arg(&mut out)
                    .arg(&num_nodes)
                    .arg(&STEPS)
                    .launch(grid_1d(REGTILE_BLOCKS, REGTILE_THREADS))
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/list_walk.cu"))?.function("list_walk_regtile")?;
            let (nodes, d_nodes) = upload_nodes(gpu, CHECK_NODES)?;
            let threads = 2 * REGTILE_THREADS;
            let mut d_out = gpu.zeros::<f32>(threads as usize)?;
            let n = CHECK_NODES as u32;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_nodes)
                    .arg(&mut d_out)
                    .arg(&n)
                    .arg(&CHECK_STEPS)
                    .launch(grid_1d(2, REGTILE_THREADS))?;
            }
            let want = list_walk_regtile_reference(&nodes, n, threads, CHECK_STEPS as usize);
            assert_close("list_walk_regtile", &gpu.download(&d_out)?, &want, 1e-5, 1e-6)
        });

    bench
        .case("list_walk_smem/blocks=1056,threads=128,steps=512,nodes=1048576,smem=112640", move |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/list_walk.cu"))?.function("list_walk_smem")?;
            gpu.set_max_dynamic_shared_memory(&f, SMEM_BYTES)?;
            let (_, nodes) = upload_nodes(gpu, NODES)?;
            let mut out = gpu.zeros::<f32>((SMEM_BLOCKS * SMEM_THREADS) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&nodes)
                    .arg(&mut out)
                    .arg(&num_nodes)
                    .arg(&STEPS)
                    .arg(&RING_ROWS)
                    .launch(smem_config(SMEM_BLOCKS))
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/list_walk.cu"))?.function("list_walk_smem")?;
            gpu.set_max_dynamic_shared_memory(&f, SMEM_BYTES)?;
            let (nodes, d_nodes) = upload_nodes(gpu, CHECK_NODES)?;
            let threads = 2 * SMEM_THREADS;
            let mut d_out = gpu.zeros::<f32>(threads as usize)?;
            let n = CHECK_NODES as u32;
            // More steps than ring rows, so the ring wraps.
            let steps = RING_ROWS + 13;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_nodes)
                    .arg(&mut d_out)
                    .arg(&n)
                    .arg(&steps)
                    .arg(&RING_ROWS)
                    .launch(smem_config(2))?;
            }
            let want = list_walk_smem_reference(&nodes, n, threads, steps as usize, RING_ROWS as usize);
            assert_close("list_walk_smem", &gpu.download(&d_out)?, &want, 1e-5, 1e-6)
        });

    bench
        .case("list_walk_warp_blocks/blocks=16896,threads=32,steps=512,nodes=1048576", move |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/list_walk.cu"))?.function("list_walk_warp_blocks")?;
            let (_, nodes) = upload_nodes(gpu, NODES)?;
            let mut out = gpu.zeros::<f32>((WARP_BLOCKS * 32) as usize)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&nodes)
                    .arg(&mut out)
                    .arg(&num_nodes)
                    .arg(&STEPS)
                    .launch(grid_1d(WARP_BLOCKS, 32))
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/list_walk.cu"))?.function("list_walk_warp_blocks")?;
            let (nodes, d_nodes) = upload_nodes(gpu, CHECK_NODES)?;
            let blocks = 5u32;
            let mut d_out = gpu.zeros::<f32>((blocks * 32) as usize)?;
            let n = CHECK_NODES as u32;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_nodes)
                    .arg(&mut d_out)
                    .arg(&n)
                    .arg(&CHECK_STEPS)
                    .launch(grid_1d(blocks, 32))?;
            }
            let want = list_walk_warp_blocks_reference(&nodes, n, blocks * 32, CHECK_STEPS as usize);
            assert_close("list_walk_warp_blocks", &gpu.download(&d_out)?, &want, 1e-5, 1e-6)
        });

    kprof_harness::main(bench);
}
