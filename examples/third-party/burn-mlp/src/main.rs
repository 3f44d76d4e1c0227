//! A transformer-ish block, forward only, in f32 on burn's CUDA backend (CubeCL): two
//! 2048x2048 matmuls, a bias add and GELU, a layer norm, a softmax over the last dimension and
//! a mean, twelve times. Every operation is a CubeCL kernel that the CUDA runtime generates
//! and compiles with NVRTC the first time it is launched.
use burn::backend::Cuda;
use burn::nn::LayerNormConfig;
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::{Distribution, Tensor};
use std::time::Instant;

type B = Cuda<f32, i32>;

const N: usize = 2048;
const ITERS: usize = 12;

fn main() {
    let device = Default::default();
    let scale = 1.0 / (N as f64).sqrt();
    let x = Tensor::<B, 2>::random([N, N], Distribution::Uniform(-1.0, 1.0), &device);
    let w1 = Tensor::<B, 2>::random([N, N], Distribution::Uniform(-scale, scale), &device);
    let w2 = Tensor::<B, 2>::random([N, N], Distribution::Uniform(-scale, scale), &device);
    let b1 = Tensor::<B, 1>::random([N], Distribution::Uniform(-0.1, 0.1), &device);
    let norm = LayerNormConfig::new(N).init::<B>(&device);

    let start = Instant::now();
    let mut total = Tensor::<B, 1>::zeros([1], &device);
    for _ in 0..ITERS {
        // feed-forward half: matmul, bias, GELU, layer norm
        let h = x.clone().matmul(w1.clone()) + b1.clone().unsqueeze::<2>();
        let h = norm.forward(gelu(h));
        // attention-like half: scores, softmax over the last dimension, weighted sum
        let scores = h.clone().matmul(w2.clone()).mul_scalar(scale);
        let probs = softmax(scores, 1);
        let out = (probs * h).exp().sum_dim(1);
        total = total + out.mean();
    }
    // reading the scalar back waits for every kernel launched above
    let total: f32 = total.into_scalar();
    let elapsed = start.elapsed();
    println!(
        "burn-mlp: {ITERS} iterations of a {N}x{N} f32 block in {:.1} ms, result {total:.6}",
        elapsed.as_secs_f64() * 1e3
    );
}
