//! The fix-loop pairs: twelve kernels, each with the fix an expert would make
//! (`<kernel>__fix`), two per class. One case per kernel and per fix; what each should
//! show under ncu, and what each fix should save, is in EXPECTED.md.
use kprof_fix_loop::*;
use kprof_harness::prelude::*;

/// Blocks that fill an H200 once at 8 blocks of 256 threads per SM.
const FULL_WAVE_BLOCKS: u32 = 8 * 132;
const THREADS: u32 = 256;

const ATOMIC_F32_N: u32 = 1 << 24;
const ATOMIC_U64_N: u32 = 1 << 25;
const SEGS: u32 = 1 << 18;
const HORNER_ITERS: i32 = 2048;
const STREAM_N: u32 = 1 << 26;
const HIST_N: u32 = 1 << 24;
const INDEX_N: u64 = 1 << 25;
const WIDTH: u64 = 1000;
const NX: u64 = 1000;
const NY: u64 = 1000;

fn source(kernel: &str) -> CudaSource {
    let stem = kernel.split("__").next().unwrap();
    match stem {
        "atomic_total_f32" | "atomic_total_u64" => cuda_source!("kernels/atomic_total.cu"),
        "segsum_idle_1024x64" | "segsum_idle_512x128" => cuda_source!("kernels/segsum_idle.cu"),
        "horner_promoted" | "scale_promoted" | "poly_promoted" => cuda_source!("kernels/promoted.cu"),
        "hist_global_256" | "hist_global_skewed" => cuda_source!("kernels/hist_global.cu"),
        "copy_scalar_roof" | "axpy_scalar_roof" => cuda_source!("kernels/roof.cu"),
        _ => cuda_source!("kernels/index64.cu"),
    }
}

fn function(gpu: &Gpu, kernel: &str) -> Result<CudaFunction> {
    gpu.compile(&source(kernel))?.function(kernel)
}

/// The kernel and its fix.
fn pair(kernel: &'static str) -> [&'static str; 2] {
    [kernel, Box::leak(format!("{kernel}__fix").into_boxed_str())]
}

fn atomic_total(bench: &mut Bench) {
    for k in pair("atomic_total_f32") {
        bench
            .case(format!("{k}/n=16777216,blocks=1056"), move |gpu| {
                let f = function(gpu, k)?;
                let x = gpu.random::<f32>(ATOMIC_F32_N as usize)?;
                let mut total = gpu.zeros::<f32>(1)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&x)
                        .arg(&mut total)
                        .arg(&ATOMIC_F32_N)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(4 * u64::from(ATOMIC_F32_N))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let n = 100_003u32;
                let x: Vec<f32> = gpu.random_host(n as usize);
                let dx = gpu.upload(&x)?;
                let mut total = gpu.zeros::<f32>(1)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dx)
                        .arg(&mut total)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?
                };
                let (want, magnitude) = sum_f64(&x);
                let got = f64::from(gpu.download(&total)?[0]);
                ensure!((got - want).abs() <= 2e-5 * magnitude, "{k}: sum {got}, expected {want}");
                Ok(())
            });
    }
    for k in pair("atomic_total_u64") {
        bench
            .case(format!("{k}/n=33554432,blocks=1056"), move |gpu| {
                let f = function(gpu, k)?;
                let v = gpu.random::<u32>(ATOMIC_U64_N as usize)?;
                let mut total = gpu.zeros::<u64>(1)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&v)
                        .arg(&mut total)
                        .arg(&ATOMIC_U64_N)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(4 * u64::from(ATOMIC_U64_N))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let n = 100_003u32;
                let v: Vec<u32> = gpu.random_host(n as usize);
                let dv = gpu.upload(&v)?;
                let mut total = gpu.zeros::<u64>(1)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dv)
                        .arg(&mut total)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?
                };
                let want: u64 = v.iter().map(|&x| u64::from(x & 0xffff)).sum();
                let got = gpu.download(&total)?[0];
                ensure!(got == want, "{k}: sum {got}, expected {want}");
                Ok(())
            });
    }
}

/// A segmented sum of `seg` floats per segment; the original's blocks are `block` threads,
/// as many blocks as fill each SM's 2048 threads, the fix's are 256.
fn segsum(bench: &mut Bench, kernel: &'static str, block: u32, seg: u32) {
    for k in pair(kernel) {
        let config = move |gpu: &Gpu| {
            let sms = gpu.info().sm_count;
            if k.ends_with("__fix") {
                grid_1d(FULL_WAVE_BLOCKS, THREADS)
            } else {
                grid_1d(sms * (2048 / block), block)
            }
        };
        bench
            .case(format!("{k}/segs=262144,seg={seg}"), move |gpu| {
                let f = function(gpu, k)?;
                let x = gpu.random::<f32>((SEGS * seg) as usize)?;
                let mut out = gpu.zeros::<f32>(SEGS as usize)?;
                let cfg = config(gpu);
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f).arg(&x).arg(&mut out).arg(&SEGS).launch(cfg)
                })
            })
            .bytes(4 * u64::from(SEGS) * u64::from(seg + 1))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let segs = 1000u32;
                let x: Vec<f32> = gpu.random_host((segs * seg) as usize);
                let dx = gpu.upload(&x)?;
                let mut out = gpu.zeros::<f32>(segs as usize)?;
                unsafe {
                    gpu.stream().launch_builder(&f).arg(&dx).arg(&mut out).arg(&segs).launch(config(gpu))?
                };
                let got = gpu.download(&out)?;
                for (g, chunk) in x.chunks(seg as usize).enumerate() {
                    let (want, magnitude) = sum_f64(chunk);
                    let diff = (f64::from(got[g]) - want).abs();
                    ensure!(diff <= 1e-5 * magnitude, "{k}: segment {g} sums to {}, expected {want}", got[g]);
                }
                Ok(())
            });
    }
}

/// A Horner chain of four steps per iteration in registers, and its fix.
fn horner(bench: &mut Bench, stem: &'static str) {
    for k in pair(stem) {
        let threads = (FULL_WAVE_BLOCKS * THREADS) as usize;
        bench
            .case(format!("{k}/threads=270336,iters=2048"), move |gpu| {
                let f = function(gpu, k)?;
                let xs = gpu.random::<f32>(threads)?;
                let mut out = gpu.zeros::<f32>(threads)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&xs)
                        .arg(&mut out)
                        .arg(&HORNER_ITERS)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .flops(2 * 4 * threads as u64 * HORNER_ITERS as u64)
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let (blocks, iters) = (2u32, 37i32);
                let xs: Vec<f32> = gpu.random_host((blocks * THREADS) as usize);
                let dx = gpu.upload(&xs)?;
                let mut out = gpu.zeros::<f32>(xs.len())?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dx)
                        .arg(&mut out)
                        .arg(&iters)
                        .launch(grid_1d(blocks, THREADS))?
                };
                let reference = match (stem, k.ends_with("__fix")) {
                    ("poly_promoted", true) => poly_fixed_reference,
                    ("poly_promoted", false) => poly_promoted_reference,
                    (_, true) => horner_fixed_reference,
                    (_, false) => horner_promoted_reference,
                };
                let want: Vec<f32> = xs.iter().map(|&x| reference(x, iters)).collect();
                assert_close(k, &gpu.download(&out)?, &want, 1e-6, 1e-7)
            });
    }
}

fn promoted(bench: &mut Bench) {
    for stem in ["horner_promoted", "poly_promoted"] {
        horner(bench, stem);
    }
    for k in pair("scale_promoted") {
        bench
            .case(format!("{k}/n=67108864,blocks=1056"), move |gpu| {
                let f = function(gpu, k)?;
                let x = gpu.random::<f32>(STREAM_N as usize)?;
                let mut y = gpu.zeros::<f32>(STREAM_N as usize)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&x)
                        .arg(&mut y)
                        .arg(&STREAM_N)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(8 * u64::from(STREAM_N))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let n = 100_003u32;
                let x: Vec<f32> = gpu.random_host(n as usize);
                let dx = gpu.upload(&x)?;
                let mut y = gpu.zeros::<f32>(n as usize)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dx)
                        .arg(&mut y)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?
                };
                let want: Vec<f32> = x.iter().map(|&v| (f64::from(v) * 0.5 + 0.25) as f32).collect();
                assert_close(k, &gpu.download(&y)?, &want, 0.0, 0.0)
            });
    }
}

fn hist(bench: &mut Bench, kernel: &'static str, bin: fn(u32) -> usize) {
    for k in pair(kernel) {
        bench
            .case(format!("{k}/n=16777216,bins=256,blocks=1056"), move |gpu| {
                let f = function(gpu, k)?;
                let v = gpu.random::<u32>(HIST_N as usize)?;
                let mut bins = gpu.zeros::<u32>(256)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&v)
                        .arg(&mut bins)
                        .arg(&HIST_N)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(4 * u64::from(HIST_N))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let n = 100_003u32;
                let v: Vec<u32> = gpu.random_host(n as usize);
                let dv = gpu.upload(&v)?;
                let mut bins = gpu.zeros::<u32>(256)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dv)
                        .arg(&mut bins)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?
                };
                let want = histogram(&v, bin);
                ensure!(gpu.download(&bins)? == want, "{k}: the bins differ from the host's");
                Ok(())
            });
    }
}

fn roof(bench: &mut Bench) {
    for k in pair("copy_scalar_roof") {
        let n = if k.ends_with("__fix") { STREAM_N / 4 } else { STREAM_N };
        bench
            .case(format!("{k}/n=67108864,blocks=1056"), move |gpu| {
                let f = function(gpu, k)?;
                let x = gpu.random::<f32>(STREAM_N as usize)?;
                let mut y = gpu.zeros::<f32>(STREAM_N as usize)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&x)
                        .arg(&mut y)
                        .arg(&n)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(8 * u64::from(STREAM_N))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let len = 100_000u32;
                let n = if k.ends_with("__fix") { len / 4 } else { len };
                let x: Vec<f32> = gpu.random_host(len as usize);
                let dx = gpu.upload(&x)?;
                let mut y = gpu.zeros::<f32>(len as usize)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&dx)
                        .arg(&mut y)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?
                };
                assert_close(k, &gpu.download(&y)?, &x, 0.0, 0.0)
            });
    }
    for k in pair("axpy_scalar_roof") {
        let n = if k.ends_with("__fix") { STREAM_N / 4 } else { STREAM_N };
        let a = 1.5f32;
        bench
            .case(format!("{k}/n=67108864,blocks=1056"), move |gpu| {
                let f = function(gpu, k)?;
                let x = gpu.random::<f32>(STREAM_N as usize)?;
                let mut y = gpu.random::<f32>(STREAM_N as usize)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&a)
                        .arg(&x)
                        .arg(&mut y)
                        .arg(&n)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(12 * u64::from(STREAM_N))
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let len = 100_000u32;
                let n = if k.ends_with("__fix") { len / 4 } else { len };
                let (x, y): (Vec<f32>, Vec<f32>) =
                    (gpu.random_host(len as usize), gpu.random_host(len as usize));
                let (dx, mut dy) = (gpu.upload(&x)?, gpu.upload(&y)?);
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&a)
                        .arg(&dx)
                        .arg(&mut dy)
                        .arg(&n)
                        .launch(grid_1d(5, THREADS))?
                };
                let want: Vec<f32> = x.iter().zip(&y).map(|(&x, &y)| a.mul_add(x, y)).collect();
                assert_close(k, &gpu.download(&dy)?, &want, 0.0, 0.0)
            });
    }
}

fn index64(bench: &mut Bench) {
    let rows = |n: u64| (n / WIDTH + 2) as usize;
    let planes = |n: u64| (n / (NX * NY) + 2) as usize;
    for k in pair("index64_div2d") {
        bench
            .case(format!("{k}/n=33554432,base=17179869184,width=1000"), move |gpu| {
                let f = function(gpu, k)?;
                let input = gpu.random::<f32>(INDEX_N as usize)?;
                let (scale, bias) = (gpu.random::<f32>(rows(INDEX_N))?, gpu.random::<f32>(WIDTH as usize)?);
                let mut out = gpu.zeros::<f32>(INDEX_N as usize)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&input)
                        .arg(&scale)
                        .arg(&bias)
                        .arg(&mut out)
                        .arg(&INDEX_N)
                        .arg(&INDEX_BASE)
                        .arg(&WIDTH)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(8 * INDEX_N)
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let n = 100_003u64;
                let input: Vec<f32> = gpu.random_host(n as usize);
                let (scale, bias): (Vec<f32>, Vec<f32>) =
                    (gpu.random_host(rows(n)), gpu.random_host(WIDTH as usize));
                let (di, ds, db) = (gpu.upload(&input)?, gpu.upload(&scale)?, gpu.upload(&bias)?);
                let mut out = gpu.zeros::<f32>(n as usize)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&di)
                        .arg(&ds)
                        .arg(&db)
                        .arg(&mut out)
                        .arg(&n)
                        .arg(&INDEX_BASE)
                        .arg(&WIDTH)
                        .launch(grid_1d(5, THREADS))?
                };
                let want = index64_2d_reference(&input, &scale, &bias, WIDTH);
                assert_close(k, &gpu.download(&out)?, &want, 0.0, 0.0)
            });
    }
    for k in pair("index64_div3d") {
        bench
            .case(format!("{k}/n=33554432,base=17179869184,nx=1000,ny=1000"), move |gpu| {
                let f = function(gpu, k)?;
                let input = gpu.random::<f32>(INDEX_N as usize)?;
                let wz = gpu.random::<f32>(planes(INDEX_N))?;
                let (wy, wx) = (gpu.random::<f32>(NY as usize)?, gpu.random::<f32>(NX as usize)?);
                let mut out = gpu.zeros::<f32>(INDEX_N as usize)?;
                Ok(move |s: &CudaStream| unsafe {
                    s.launch_builder(&f)
                        .arg(&input)
                        .arg(&wz)
                        .arg(&wy)
                        .arg(&wx)
                        .arg(&mut out)
                        .arg(&INDEX_N)
                        .arg(&INDEX_BASE)
                        .arg(&NX)
                        .arg(&NY)
                        .launch(grid_1d(FULL_WAVE_BLOCKS, THREADS))
                })
            })
            .bytes(8 * INDEX_N)
            .check(move |gpu| {
                let f = function(gpu, k)?;
                let n = 2_100_003u64;
                let input: Vec<f32> = gpu.random_host(n as usize);
                let wz: Vec<f32> = gpu.random_host(planes(n));
                let (wy, wx): (Vec<f32>, Vec<f32>) =
                    (gpu.random_host(NY as usize), gpu.random_host(NX as usize));
                let (di, dz, dy, dx) =
                    (gpu.upload(&input)?, gpu.upload(&wz)?, gpu.upload(&wy)?, gpu.upload(&wx)?);
                let mut out = gpu.zeros::<f32>(n as usize)?;
                unsafe {
                    gpu.stream()
                        .launch_builder(&f)
                        .arg(&di)
                        .arg(&dz)
                        .arg(&dy)
                        .arg(&dx)
                        .arg(&mut out)
                        .arg(&n)
                        .arg(&INDEX_BASE)
                        .arg(&NX)
                        .arg(&NY)
                        .launch(grid_1d(5, THREADS))?
                };
                let want = index64_3d_reference(&input, &wz, &wy, &wx, NX, NY);
                assert_close(k, &gpu.download(&out)?, &want, 0.0, 0.0)
            });
    }
}

fn main() {
    let mut bench = Bench::new();
    atomic_total(&mut bench);
    segsum(&mut bench, "segsum_idle_1024x64", 1024, 64);
    segsum(&mut bench, "segsum_idle_512x128", 512, 128);
    promoted(&mut bench);
    hist(&mut bench, "hist_global_256", |v| (v & 255) as usize);
    hist(&mut bench, "hist_global_skewed", skewed_bin);
    roof(&mut bench);
    index64(&mut bench);
    kprof_harness::main(bench);
}
