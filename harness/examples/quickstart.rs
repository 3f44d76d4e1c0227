//! The README's quick-start bench, built with the harness's tests so that it keeps compiling
//! (its kernel here is `examples/saxpy.cu`; in the README, `kernels/saxpy.cu`).
use kprof_harness::prelude::*;

fn main() {
    const N: usize = 1 << 24;
    let mut bench = Bench::new();
    bench.case("saxpy/n=16777216", |gpu| {
        let saxpy = gpu.compile(&cuda_source!("examples/saxpy.cu"))?.function("saxpy")?;
        let (x, mut y) = (gpu.random::<f32>(N)?, gpu.random::<f32>(N)?);
        let cfg = grid_1d(N.div_ceil(256) as u32, 256);
        Ok(move |s: &CudaStream| unsafe {
            s.launch_builder(&saxpy).arg(&2.0f32).arg(&x).arg(&mut y).arg(&N).launch(cfg)
        })
    });
    kprof_harness::main(bench);
}
