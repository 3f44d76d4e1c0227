//! C = A·B for 4096×4096 FP32 matrices through cuBLAS, ten times, after one warm-up call.
//!
//! In cuBLAS's default math mode an FP32 GEMM runs on the FMA pipes; `--tf32` allows TF32
//! tensor-core math (`CUBLAS_TF32_TENSOR_OP_MATH`), the knob a profile of the first should
//! point to. `SGEMM_N` changes the size, `SGEMM_REPS` the number of timed calls.

use std::time::Instant;

use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaContext;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tf32 = std::env::args().any(|a| a == "--tf32");
    let n = env_usize("SGEMM_N", 4096);
    let reps = env_usize("SGEMM_REPS", 10);
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone())?;
    if tf32 {
        let mode = cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH;
        // SAFETY: the handle is live for `blas`'s lifetime; the mode is a valid enum value.
        let status = unsafe { cudarc::cublas::sys::cublasSetMathMode(*blas.handle(), mode) };
        assert_eq!(status, cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS);
    }
    let a_host: Vec<f32> = (0..n * n).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let b_host: Vec<f32> = (0..n * n).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
    let a = stream.clone_htod(&a_host)?;
    let b = stream.clone_htod(&b_host)?;
    let mut c = stream.alloc_zeros::<f32>(n * n)?;
    let side = i32::try_from(n)?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: side,
        n: side,
        k: side,
        alpha: 1.0f32,
        lda: side,
        ldb: side,
        beta: 0.0f32,
        ldc: side,
    };
    // SAFETY: a, b and c hold n*n elements each, as the configuration says.
    unsafe { blas.gemm(cfg, &a, &b, &mut c) }?;
    stream.synchronize()?;
    let began = Instant::now();
    for _ in 0..reps {
        // SAFETY: as above.
        unsafe { blas.gemm(cfg, &a, &b, &mut c) }?;
    }
    stream.synchronize()?;
    let secs = began.elapsed().as_secs_f64() / reps as f64;
    let c_host = stream.clone_dtoh(&c)?;
    // One element checked against the host: row 1, column 2 (cuBLAS is column-major).
    let (row, col) = (1usize, 2usize);
    let want: f64 = (0..n).map(|k| f64::from(a_host[k * n + row]) * f64::from(b_host[col * n + k])).sum();
    let got = f64::from(c_host[col * n + row]);
    let ok = (got - want).abs() <= 1e-2 * want.abs().max(1.0);
    println!(
        "sgemm n={n} math={} reps={reps}: {:.3} ms per call, {:.1} TFLOP/s, check={}",
        if tf32 { "tf32" } else { "default" },
        secs * 1e3,
        2.0 * (n as f64).powi(3) / secs / 1e12,
        if ok { "passed" } else { "FAILED" }
    );
    Ok(())
}
