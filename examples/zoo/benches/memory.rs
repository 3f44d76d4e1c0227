//! Memory-side limiters: DRAM, L2 and shared-memory bandwidth, shared-memory bank
//! conflicts, uncoalesced global loads, local memory. One case per kernel; what each should
//! show under ncu is in EXPECTED.md.
use kprof_harness::prelude::*;
use kprof_zoo::*;

/// Blocks of 256 threads that fill an H200 exactly once at 8 blocks (2048 threads) per SM.
const FULL_WAVE_BLOCKS: u32 = 8 * 132;
const THREADS: u32 = 256;

/// float4 elements of `stream_scale_f4`: 1 GiB each way.
const STREAM_N4: usize = 1 << 26;
/// float4 elements of the `l2_reread_cg` table: 4 MiB.
const L2_TABLE_N4: u32 = 1 << 18;
const L2_PASSES: i32 = 1;
const SMEM_F4_ITERS: i32 = 2048;
const SMEM_F4_SHIFT: i32 = 32;
const COLUMN_ITERS: i32 = 128;
const COLUMN_SHIFT: i32 = 8;
/// Particles (32 bytes each) of `aos_field_gather`: 1 GiB.
const PARTICLES: usize = 1 << 25;
/// Input words of `local_histogram`: 512 MiB.
const HIST_N: usize = 1 << 27;

fn main() {
    let mut bench = Bench::new();

    bench
        .case("stream_scale_f4/bytes=2147483648", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/stream_scale_f4.cu"))?.function("stream_scale_f4")?;
            let x = gpu.random::<f32>(4 * STREAM_N4)?;
            let mut y = gpu.zeros::<f32>(4 * STREAM_N4)?;
            let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&x).arg(&mut y).arg(&0.5f32).arg(&STREAM_N4).launch(cfg)
            })
        })
        .bytes(2 * 16 * STREAM_N4 as u64)
        .flops(4 * STREAM_N4 as u64)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/stream_scale_f4.cu"))?.function("stream_scale_f4")?;
            let n4 = 10_007usize;
            let x: Vec<f32> = gpu.random_host(4 * n4);
            let dx = gpu.upload(&x)?;
            let mut dy = gpu.zeros::<f32>(4 * n4)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dx)
                    .arg(&mut dy)
                    .arg(&0.5f32)
                    .arg(&n4)
                    .launch(grid_1d(7, 256))?;
            }
            let want: Vec<f32> = x.iter().map(|v| 0.5 * v).collect();
            assert_close("stream_scale_f4", &gpu.download(&dy)?, &want, 0.0, 0.0)
        });

    // No .bytes(): the harness relates bytes to DRAM peak, and this kernel's 4.1 GiB of
    // loads per launch are meant to come from L2 (the unique data is 4 MiB).
    bench
        .case("l2_reread_cg/table_bytes=4194304,blocks=1056,passes=1", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/l2_reread_cg.cu"))?.function("l2_reread_cg")?;
            let table = gpu.random::<f32>(4 * L2_TABLE_N4 as usize)?;
            let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&table).arg(&mut out).arg(&L2_TABLE_N4).arg(&L2_PASSES).launch(cfg)
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/l2_reread_cg.cu"))?.function("l2_reread_cg")?;
            // Blocks 0, 1, 2 start at float4 0, 8192 and 4096 of the 12288.
            let n4 = 12_288u32;
            let (blocks, passes) = (3u32, 2i32);
            let table: Vec<f32> = gpu.random_host(4 * n4 as usize);
            let d_table = gpu.upload(&table)?;
            let mut d_out = gpu.zeros::<f32>((blocks * THREADS) as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_table)
                    .arg(&mut d_out)
                    .arg(&n4)
                    .arg(&passes)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want = l2_reread_reference(&table, blocks, THREADS, passes as u32);
            assert_close("l2_reread_cg", &gpu.download(&d_out)?, &want, 1e-6, 0.0)
        });

    bench
        .case("smem_read_f4/blocks=1056,threads=256,iters=2048", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/smem_read_f4.cu"))?.function("smem_read_f4")?;
            let tile = gpu.random::<f32>(4 * 1024)?;
            let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&tile)
                    .arg(&mut out)
                    .arg(&SMEM_F4_ITERS)
                    .arg(&SMEM_F4_SHIFT)
                    .launch(cfg)
            })
        })
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/smem_read_f4.cu"))?.function("smem_read_f4")?;
            let (blocks, iters) = (2u32, 37i32);
            let tile: Vec<f32> = gpu.random_host(4 * 1024);
            let d_tile = gpu.upload(&tile)?;
            let mut d_out = gpu.zeros::<f32>((blocks * THREADS) as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_tile)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .arg(&SMEM_F4_SHIFT)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want = smem_read_f4_reference(&tile, blocks, iters, SMEM_F4_SHIFT);
            assert_close("smem_read_f4", &gpu.download(&d_out)?, &want, 1e-6, 0.0)
        });

    bench
        .case("smem_column_read/blocks=1056,threads=256,iters=128", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/smem_column_read.cu"))?.function("smem_column_read")?;
            let tile = gpu.random::<f32>(32 * 32)?;
            let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
            let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f)
                    .arg(&tile)
                    .arg(&mut out)
                    .arg(&COLUMN_ITERS)
                    .arg(&COLUMN_SHIFT)
                    .launch(cfg)
            })
        })
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/smem_column_read.cu"))?.function("smem_column_read")?;
            let (blocks, iters) = (2u32, 9i32);
            let tile: Vec<f32> = gpu.random_host(32 * 32);
            let d_tile = gpu.upload(&tile)?;
            let mut d_out = gpu.zeros::<f32>((blocks * THREADS) as usize)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_tile)
                    .arg(&mut d_out)
                    .arg(&iters)
                    .arg(&COLUMN_SHIFT)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let want = smem_column_read_reference(&tile, blocks, iters, COLUMN_SHIFT);
            assert_close("smem_column_read", &gpu.download(&d_out)?, &want, 1e-6, 0.0)
        });

    // .bytes() is what a coalesced layout would move (x in, out out); DRAM really moves the
    // whole 1 GiB of structs.
    bench
        .case("aos_field_gather/particles=33554432,struct_bytes=32", |gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/aos_field_gather.cu"))?.function("aos_field_gather")?;
            let particles = gpu.random::<f32>(8 * PARTICLES)?;
            let mut out = gpu.zeros::<f32>(PARTICLES)?;
            let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&particles).arg(&mut out).arg(&2.0f32).arg(&PARTICLES).launch(cfg)
            })
        })
        .bytes(2 * 4 * PARTICLES as u64)
        .check(|gpu| {
            let f =
                gpu.compile(&cuda_source!("kernels/aos_field_gather.cu"))?.function("aos_field_gather")?;
            let n = 10_007usize;
            let p: Vec<f32> = gpu.random_host(8 * n);
            let dp = gpu.upload(&p)?;
            let mut d_out = gpu.zeros::<f32>(n)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&dp)
                    .arg(&mut d_out)
                    .arg(&2.0f32)
                    .arg(&n)
                    .launch(grid_1d(5, 256))?;
            }
            let want: Vec<f32> = p.chunks(8).map(|s| s[0] * 2.0).collect();
            assert_close("aos_field_gather", &gpu.download(&d_out)?, &want, 0.0, 0.0)
        });

    // .bytes(): the input only (the per-thread counts written at the end are 68 MiB more).
    bench
        .case("local_histogram/n=134217728,bins=64,blocks=1056", |gpu| {
            let f = gpu.compile(&cuda_source!("kernels/local_histogram.cu"))?.function("local_histogram")?;
            let data = gpu.random::<u32>(HIST_N)?;
            let threads = (FULL_WAVE_BLOCKS * THREADS) as usize;
            let mut partial = gpu.zeros::<u32>(64 * threads)?;
            let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&data).arg(&mut partial).arg(&HIST_N).launch(cfg)
            })
        })
        .bytes(4 * HIST_N as u64)
        .check(|gpu| {
            let f = gpu.compile(&cuda_source!("kernels/local_histogram.cu"))?.function("local_histogram")?;
            let (n, blocks) = (100_003usize, 3u32);
            let threads = (blocks * THREADS) as usize;
            let data: Vec<u32> = gpu.random_host(n);
            let d_data = gpu.upload(&data)?;
            let mut d_partial = gpu.zeros::<u32>(64 * threads)?;
            unsafe {
                gpu.stream()
                    .launch_builder(&f)
                    .arg(&d_data)
                    .arg(&mut d_partial)
                    .arg(&n)
                    .launch(grid_1d(blocks, THREADS))?;
            }
            let got: Vec<f32> = gpu.download(&d_partial)?.iter().map(|&v| v as f32).collect();
            let want: Vec<f32> =
                local_histogram_reference(&data, threads).iter().map(|&v| v as f32).collect();
            assert_close("local_histogram", &got, &want, 0.0, 0.0)
        });

    fix_cases(&mut bench);
    kprof_harness::main(bench);
}

/// The fix variants of FIXES.md (`<kernel>__fix1`, `__fix2`, in kernels/fixes/): the same
/// launch and the same host reference as their original.
fn fix_cases(bench: &mut Bench) {
    for kernel in ["smem_column_read__fix1", "smem_column_read__fix2"] {
        let source = || cuda_source!("kernels/fixes/smem_column_read.cu");
        bench
            .case(format!("{kernel}/blocks=1056,threads=256,iters=128"), move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let tile = gpu.random::<f32>(32 * 32)?;
                let mut out = gpu.zeros::<f32>((FULL_WAVE_BLOCKS * THREADS) as usize)?;
                let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&tile)
                        .arg(&mut out)
                        .arg(&COLUMN_ITERS)
                        .arg(&COLUMN_SHIFT)
                        .launch(cfg)
                })
            })
            .check(move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let (blocks, iters) = (2u32, 9i32);
                let tile: Vec<f32> = gpu.random_host(32 * 32);
                let d_tile = gpu.upload(&tile)?;
                let mut d_out = gpu.zeros::<f32>((blocks * THREADS) as usize)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&d_tile)
                        .arg(&mut d_out)
                        .arg(&iters)
                        .arg(&COLUMN_SHIFT)
                        .launch(grid_1d(blocks, THREADS))?;
                }
                let want = smem_column_read_reference(&tile, blocks, iters, COLUMN_SHIFT);
                assert_close(kernel, &gpu.download(&d_out)?, &want, 1e-6, 0.0)
            });
    }
    for kernel in ["local_histogram__fix1", "local_histogram__fix2"] {
        let source = || cuda_source!("kernels/fixes/local_histogram.cu");
        bench
            .case(format!("{kernel}/n=134217728,bins=64,blocks=1056"), move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let data = gpu.random::<u32>(HIST_N)?;
                let threads = (FULL_WAVE_BLOCKS * THREADS) as usize;
                let mut partial = gpu.zeros::<u32>(64 * threads)?;
                let cfg = grid_1d(FULL_WAVE_BLOCKS, THREADS);
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f).arg(&data).arg(&mut partial).arg(&HIST_N).launch(cfg)
                })
            })
            .bytes(4 * HIST_N as u64)
            .check(move |gpu| {
                let f = gpu.compile(&source())?.function(kernel)?;
                let (n, blocks) = (100_003usize, 3u32);
                let threads = (blocks * THREADS) as usize;
                let data: Vec<u32> = gpu.random_host(n);
                let d_data = gpu.upload(&data)?;
                let mut d_partial = gpu.zeros::<u32>(64 * threads)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&d_data)
                        .arg(&mut d_partial)
                        .arg(&n)
                        .launch(grid_1d(blocks, THREADS))?;
                }
                let got = gpu.download(&d_partial)?;
                let want = local_histogram_reference(&data, threads);
                ensure!(got == want, "{kernel}: per-thread counts differ from the host reference");
                Ok(())
            });
    }
}
