//! Kernels of closed libraries: cuBLAS/cuBLASLt, cuDNN, cuRAND, cuFFT and NCCL ship their
//! kernels compiled without line info, and their code cannot be changed by the user. A
//! kernel is taken for one when its name carries the library's mark and its source page
//! (if one was collected) shows no CUDA line. Its verdict then gets the knob the library
//! offers instead of advice to rebuild or rewrite it: for an FP32 GEMM on the FMA pipes,
//! TF32 tensor-core math or BF16 data; for a tile that leaves a wave part empty, shapes
//! that are multiples of the tile.
//!
//! CUTLASS and Triton kernels are compiled from the user's code and keep their lines:
//! they are the user's, unless their name also carries a library's mark (cuBLAS ships
//! CUTLASS-built kernels named `..._cublas`). The facts behind the marks and the knobs,
//! with their sources, are in `references/nvidia/libraries.md`.

use super::hotspots::{Hotspot, SourceKind};
use super::rules::{BottleneckDecision, KernelVerdict, LibraryKernel};
use super::summary::MetricsSummary;

/// A closed library whose kernels a profile can meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// cuBLAS and cuBLASLt (GEMM, GEMV and their helpers).
    Cublas,
    /// cuDNN (convolutions, normalisations, attention).
    Cudnn,
    /// cuRAND (generators).
    Curand,
    /// cuFFT.
    Cufft,
    /// NCCL (collectives).
    Nccl,
}

impl Library {
    /// The library's name as its documentation writes it.
    pub fn name(self) -> &'static str {
        match self {
            Library::Cublas => "cuBLAS",
            Library::Cudnn => "cuDNN",
            Library::Curand => "cuRAND",
            Library::Cufft => "cuFFT",
            Library::Nccl => "NCCL",
        }
    }
}

/// Marks in a kernel's name, lower-cased, and the library each names. A mark is a
/// substring unless it ends with `^`, which anchors it at the start of the name.
const MARKS: [(&str, Library); 17] = [
    ("cublaslt", Library::Cublas),
    ("cublas", Library::Cublas),
    ("xmma_gemm", Library::Cublas),
    ("gemv2t_kernel", Library::Cublas),
    ("gemv2n_kernel", Library::Cublas),
    ("splitkreduce_kernel", Library::Cublas),
    ("gemmsn_", Library::Cublas),
    ("cudnn", Library::Cudnn),
    ("xmma_fprop", Library::Cudnn),
    ("xmma_dgrad", Library::Cudnn),
    ("xmma_wgrad", Library::Cudnn),
    ("implicit_convolve_sgemm", Library::Cudnn),
    ("curand", Library::Curand),
    ("generate_seed_pseudo", Library::Curand),
    ("cufft", Library::Cufft),
    ("regular_fft", Library::Cufft),
    ("nccl^", Library::Nccl),
];

/// The library whose mark `kernel`'s name carries, with the mark.
pub fn marked(kernel: &str) -> Option<(Library, &'static str)> {
    let lower = kernel.to_ascii_lowercase();
    MARKS.iter().find_map(|&(mark, lib)| {
        let hit = match mark.strip_suffix('^') {
            Some(prefix) => lower.starts_with(prefix),
            None => lower.contains(mark),
        };
        hit.then_some((lib, mark.trim_end_matches('^')))
    })
}

/// Whether `kernel` has a CUDA source line among `hotspots` (`None`: no source page).
fn has_lines(kernel: &str, hotspots: &[Hotspot]) -> Option<bool> {
    let own: Vec<&Hotspot> = hotspots.iter().filter(|h| h.function == kernel).collect();
    (!own.is_empty()).then(|| own.iter().any(|h| h.kind == SourceKind::Cuda && h.line > 0))
}

/// The tile `MxN` a GEMM kernel's name states (`tilesize256x128x8`, `_128x256_`).
pub fn tile(kernel: &str) -> Option<(u32, u32)> {
    let lower = kernel.to_ascii_lowercase();
    let at = lower.find("tilesize").map(|i| i + "tilesize".len());
    let candidates: Vec<&str> = match at {
        Some(i) => vec![&lower[i..]],
        None => lower.split('_').collect(),
    };
    candidates.into_iter().find_map(|part| {
        let mut it = part.split('x');
        let m: u32 = it.next()?.parse().ok()?;
        let rest = it.next()?;
        let n: u32 = rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()?;
        (m >= 16 && n >= 16).then_some((m, n))
    })
}

/// The knob for `v`, a kernel of `lib`.
fn advice(lib: Library, v: &KernelVerdict, waves: Option<f64>) -> String {
    let lower = v.kernel.to_ascii_lowercase();
    let limiter = v.limiter.as_ref().map(|l| l.id.as_str());
    let fp32_on_fma = lower.contains("ffma") || lower.contains("sgemm") || lower.contains("f32f32");
    if lib == Library::Cublas && fp32_on_fma && matches!(limiter, Some("pipe-fma") | None) {
        return "this FP32 GEMM runs on the FMA pipes, in cuBLAS's default math mode. Allow TF32 \
                tensor-core math for it (`cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)`; \
                candle: `set_gemm_reduced_precision_f32(true)`; PyTorch: \
                `torch.backends.cuda.matmul.allow_tf32 = True`), or keep the operands in BF16/FP16. \
                TF32 keeps FP32's range with a 10-bit mantissa: check that your results tolerate it"
            .into();
    }
    if let (Some((m, n)), Some(w), Some("tail-effect" | "too-little-parallelism")) =
        (tile(&v.kernel), waves, limiter)
    {
        return format!(
            "the kernel's tile is {m}x{n} and the launch fills {w:.2} waves: choose matrix sizes that are \
             multiples of the tile, or batch small products (strided-batched or grouped GEMM) so that the \
             last wave is not left part empty"
        );
    }
    format!(
        "its code is {}'s and cannot be changed here; what you control is the call: the shapes and data \
         types you pass, batching several calls into one, and fusing the work around it",
        lib.name()
    )
}

/// Marks each verdict whose kernel is a closed library's: its name carries the mark and
/// its source page, when one was collected, shows no CUDA line.
pub fn annotate(decision: &mut BottleneckDecision, summary: &MetricsSummary, hotspots: &[Hotspot]) {
    for v in &mut decision.kernels {
        let Some((lib, mark)) = marked(&v.kernel) else { continue };
        let lines = has_lines(&v.kernel, hotspots);
        if lines == Some(true) {
            continue;
        }
        let waves = summary.kernels.iter().find(|k| k.kernel == v.kernel).and_then(|k| k.get("waves_per_sm"));
        let page = match lines {
            Some(_) => "its source page has no line info",
            None => "no source page was collected",
        };
        v.library = Some(LibraryKernel {
            library: lib.name().to_string(),
            recognised_by: format!("`{mark}` in its name; {page}"),
            advice: advice(lib, v, waves),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names as ncu printed them on an H200 (candle's matmul through cuBLAS, from the
    /// whole-program issue's run) and names of the user's own kernels.
    #[test]
    fn marks_name_the_library_and_leave_user_kernels_alone() {
        let cublas = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas";
        assert_eq!(marked(cublas).map(|(l, _)| l), Some(Library::Cublas));
        assert_eq!(marked("ncclDevKernel_AllReduce_Sum_f32_RING_LL").map(|(l, _)| l), Some(Library::Nccl));
        assert_eq!(
            marked("void gen_sequenced<curandStateXORWOW, float>").map(|(l, _)| l),
            Some(Library::Curand)
        );
        for own in [
            "hgemm_tiled",
            "softmax_f32",
            "my_nccl_like_copy",
            "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4",
            "triton_poi_fused_add_0",
        ] {
            assert_eq!(marked(own), None, "{own}");
        }
        assert_eq!(tile(cublas), Some((256, 128)));
        assert_eq!(tile("cutlass_80_tensorop_s1688gemm_128x256_32x3_nn_align4"), Some((128, 256)));
        assert_eq!(tile("hgemm_tiled"), None);
    }

    /// A synthetic verdict (built here, not read from ncu) for the kernel `name`.
    fn verdict(name: &str) -> KernelVerdict {
        KernelVerdict {
            kernel: name.into(),
            classification: crate::model::verdict::Classification::ComputeBound,
            confidence: crate::model::verdict::Confidence::High,
            rule: Some("compute-bound".into()),
            evidence: Vec::new(),
            follow_up_stage: crate::model::stage::Stage::Compute,
            hypotheses: Vec::new(),
            missing: Vec::new(),
            limiter: None,
            unchecked: Vec::new(),
            library: None,
            other_causes: Vec::new(),
            refines: None,
            instruction_causes: Vec::new(),
            ruled_out: Vec::new(),
        }
    }

    fn hotspot(function: &str, kind: SourceKind, line: u32) -> Hotspot {
        Hotspot {
            kind,
            function: function.into(),
            file: String::new(),
            line,
            address: String::new(),
            source: String::new(),
            samples: 1.0,
            pct_of_kernel: 100.0,
            top_stalls: String::new(),
            instructions_executed: None,
            stalls: Vec::new(),
        }
    }

    /// A marked kernel without lines gets the library's knob; the same name with a CUDA
    /// line is the user's; an unmarked kernel is never touched.
    #[test]
    fn only_marked_kernels_without_lines_are_a_library_s() {
        let gemm = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas";
        let summary = MetricsSummary { schema_version: 1, device: None, kernels: Vec::new() };
        let mut d = BottleneckDecision {
            schema_version: 1,
            rules: "built-in".into(),
            kernels: vec![verdict(gemm), verdict("hgemm")],
        };
        annotate(&mut d, &summary, &[hotspot(gemm, SourceKind::Sass, 0)]);
        let lib = d.kernels[0].library.as_ref().expect("a cuBLAS kernel");
        assert_eq!(lib.library, "cuBLAS");
        assert!(
            lib.advice.contains("CUBLAS_TF32_TENSOR_OP_MATH") && lib.advice.contains("BF16"),
            "{}",
            lib.advice
        );
        assert!(lib.recognised_by.contains("no line info"), "{}", lib.recognised_by);
        assert!(d.kernels[1].library.is_none());

        let mut d =
            BottleneckDecision { schema_version: 1, rules: "built-in".into(), kernels: vec![verdict(gemm)] };
        annotate(&mut d, &summary, &[hotspot(gemm, SourceKind::Cuda, 12)]);
        assert!(d.kernels[0].library.is_none(), "a kernel with lines is the user's");
    }
}
