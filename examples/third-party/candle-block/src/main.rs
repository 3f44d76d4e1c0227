//! One transformer block, forward only, in f32 (the attention and MLP of a small
//! decoder), then a BF16 projection and the reductions a sampler runs, for `STEPS` steps.
//! The first `WARMUP` steps load cuBLAS and candle's kernels; each of the others runs inside
//! an NVTX push/pop range `step` and between `cuProfilerStart` and `cuProfilerStop`.

use candle_core::cuda_backend::cudarc::driver::sys as cuda;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{LayerNorm, Linear};

const BATCH: usize = 2;
const SEQ: usize = 1024;
const MODEL: usize = 1024;
const HEADS: usize = 16;
const HEAD: usize = MODEL / HEADS;
const FFN: usize = 4096;
const VOCAB: usize = 8192;
const WARMUP: usize = 2;
const STEPS: usize = 12;

struct Block {
    ln1: LayerNorm,
    qkv: Linear,
    out: Linear,
    rms: Tensor,
    up: Linear,
    gate: Linear,
    down: Linear,
    head_bf16: Tensor,
    cos: Tensor,
    sin: Tensor,
    mask: Tensor,
    neg_inf: Tensor,
}

fn linear(rows: usize, cols: usize, dev: &Device) -> Result<Linear> {
    let w = (Tensor::randn(0f32, 1.0, (rows, cols), dev)? / (cols as f64).sqrt())?;
    let b = Tensor::zeros(rows, DType::F32, dev)?;
    Ok(Linear::new(w, Some(b)))
}

impl Block {
    fn new(dev: &Device) -> Result<Self> {
        let ln1 = LayerNorm::new(Tensor::ones(MODEL, DType::F32, dev)?, Tensor::zeros(MODEL, DType::F32, dev)?, 1e-5);
        let pos = Tensor::arange(0u32, SEQ as u32, dev)?.to_dtype(DType::F32)?;
        let freq: Vec<f32> = (0..HEAD / 2).map(|i| 1.0 / 10000f32.powf(2.0 * i as f32 / HEAD as f32)).collect();
        let freq = Tensor::new(freq.as_slice(), dev)?;
        let angles = pos.unsqueeze(1)?.broadcast_mul(&freq.unsqueeze(0)?)?;
        let mask: Vec<u8> = (0..SEQ).flat_map(|i| (0..SEQ).map(move |j| u8::from(j > i))).collect();
        Ok(Block {
            ln1,
            qkv: linear(3 * MODEL, MODEL, dev)?,
            out: linear(MODEL, MODEL, dev)?,
            rms: Tensor::ones(MODEL, DType::F32, dev)?,
            up: linear(FFN, MODEL, dev)?,
            gate: linear(FFN, MODEL, dev)?,
            down: linear(MODEL, FFN, dev)?,
            head_bf16: Tensor::randn(0f32, 0.02, (VOCAB, MODEL), dev)?.to_dtype(DType::BF16)?,
            cos: angles.cos()?,
            sin: angles.sin()?,
            mask: Tensor::from_vec(mask, (SEQ, SEQ), dev)?,
            neg_inf: Tensor::new(f32::NEG_INFINITY, dev)?,
        })
    }

    fn attention(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.ln1.forward(x)?;
        let qkv = self.qkv.forward(&h)?.reshape((BATCH, SEQ, 3, HEADS, HEAD))?;
        let heads = |i: usize| qkv.narrow(2, i, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous();
        let q = candle_nn::rotary_emb::rope(&heads(0)?, &self.cos, &self.sin)?;
        let k = candle_nn::rotary_emb::rope(&heads(1)?, &self.cos, &self.sin)?;
        let v = heads(2)?;
        let scores = (q.matmul(&k.t()?.contiguous()?)? * (1.0 / (HEAD as f64).sqrt()))?;
        let mask = self.mask.broadcast_as(scores.shape())?;
        let scores = mask.where_cond(&self.neg_inf.broadcast_as(scores.shape())?, &scores)?;
        let p = candle_nn::ops::softmax_last_dim(&scores)?;
        let y = p.matmul(&v)?.transpose(1, 2)?.reshape((BATCH, SEQ, MODEL))?;
        x + self.out.forward(&y)?
    }

    fn mlp(&self, x: &Tensor) -> Result<Tensor> {
        let h = candle_nn::ops::rms_norm(x, &self.rms, 1e-5)?;
        let up = self.up.forward(&h)?.gelu_erf()?;
        let gate = candle_nn::ops::silu(&self.gate.forward(&h)?)?;
        x + self.down.forward(&(up * gate)?)?
    }

    /// The block, then the next-token logits in BF16 and what a sampler reads of them.
    fn step(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let x = self.mlp(&self.attention(x)?)?;
        let last = x.narrow(1, SEQ - 1, 1)?.squeeze(1)?;
        let logits = last.to_dtype(DType::BF16)?.matmul(&self.head_bf16.t()?)?.to_dtype(DType::F32)?;
        let top = logits.argmax_keepdim(D::Minus1)?;
        let shifted = logits.broadcast_sub(&logits.max_keepdim(D::Minus1)?)?.exp()?;
        let norm = shifted.sum_keepdim(D::Minus1)?;
        let _ = (top, norm.sqrt()?);
        Ok((x, shifted.broadcast_div(&norm)?))
    }
}

fn main() -> Result<()> {
    let dev = Device::new_cuda(0)?;
    let block = Block::new(&dev)?;
    let tokens: Vec<u32> = (0..(BATCH * SEQ) as u32).map(|i| (i * 7919) % VOCAB as u32).collect();
    let embed = Tensor::randn(0f32, 1.0, (VOCAB, MODEL), &dev)?;
    let ids = Tensor::from_vec(tokens, BATCH * SEQ, &dev)?;
    let x = embed.index_select(&ids, 0)?.reshape((BATCH, SEQ, MODEL))?;
    let mut checksum = 0f32;
    for step in 0..STEPS {
        if step == WARMUP {
            dev.synchronize()?;
            // SAFETY: a driver call with no arguments, on the context candle made current.
            unsafe { cuda::cuProfilerStart() };
        }
        if step >= WARMUP {
            nvtx::range_push!("step");
        }
        let (y, probs) = block.step(&x)?;
        checksum += probs.sum_all()?.to_scalar::<f32>()? + y.mean_all()?.to_scalar::<f32>()?;
        if step >= WARMUP {
            nvtx::range_pop!();
        }
    }
    // SAFETY: as above.
    unsafe { cuda::cuProfilerStop() };
    println!("checksum = {checksum}");
    Ok(())
}
