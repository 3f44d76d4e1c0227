//! Spreading the selection over several GPUs of one host (`--gpus LIST`, `--jobs N`).
//!
//! Measured on two H200s of one host: two ncu processes on two GPUs both finish whole and
//! agree with lone runs, and replay-bound runs gain 1.46x; a `TMPDIR` per process gains
//! nothing and breaks two processes on one GPU. So there is one worker per GPU, all
//! sharing `TMPDIR`, and each program's kernels stay on one GPU (they are batched into
//! one ncu run per stage). The GPU is chosen here, before anything is written, by
//! `CUDA_VISIBLE_DEVICES` in the kernel's environment: `commands.sh` then replays each
//! profile on the GPU it ran on.
//!
//! `--gpus` is parsed once, by clap, into a [`GpuList`]; past the command line a GPU is a
//! [`GpuId`], written into `CUDA_VISIBLE_DEVICES` as given.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use super::{KernelPlan, Plan};

/// One GPU as `CUDA_VISIBLE_DEVICES` names it: an index (`0`) or a UUID (`GPU-1a2b...`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GpuId(String);

impl GpuId {
    /// The GPU with index `i`.
    pub fn index(i: u32) -> Self {
        GpuId(i.to_string())
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for GpuId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// `--gpus LIST`: indices or UUIDs, comma-separated; blanks around them and empty items
/// are dropped (so `--gpus ""` names none).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuList(pub Vec<GpuId>);

impl FromStr for GpuList {
    type Err = Infallible;
    fn from_str(list: &str) -> Result<Self, Infallible> {
        Ok(GpuList(
            list.split(',').map(str::trim).filter(|g| !g.is_empty()).map(|g| GpuId(g.to_string())).collect(),
        ))
    }
}

/// The variable that hides every other GPU from the profiled program (and from ncu).
pub const VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";

/// What puts kernels on one GPU: their program, arguments, environment and settings (all
/// but the harness case and the filter), as batching groups them.
fn program_key(k: &KernelPlan) -> String {
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        k.target, k.args, k.env, k.cwd, k.runtime, k.window, k.clock_control, k.privilege, k.stages
    )
}

impl Plan {
    /// Puts each program's kernels on one of `gpus`, programs round-robin in selection
    /// order, and says where each went. Nothing changes for an empty list.
    pub fn assign_gpus(&mut self, gpus: &[GpuId]) {
        if gpus.is_empty() {
            return;
        }
        let mut programs: Vec<String> = Vec::new();
        let mut placed: Vec<(&GpuId, Vec<String>)> = gpus.iter().map(|g| (g, Vec::new())).collect();
        for k in &mut self.kernels {
            let key = program_key(k);
            let at = programs.iter().position(|p| *p == key).unwrap_or_else(|| {
                programs.push(key);
                programs.len() - 1
            });
            let gpu = &gpus[at % gpus.len()];
            if let Some(mine) = k.env.get(VISIBLE_DEVICES).filter(|v| *v != gpu.as_str()) {
                self.notes.push(format!("{}: {VISIBLE_DEVICES}={mine} replaced by --gpus ({gpu})", k.name));
            }
            k.env.insert(VISIBLE_DEVICES.to_string(), gpu.to_string());
            placed[at % gpus.len()].1.push(k.name.clone());
        }
        let spread: Vec<String> = placed
            .iter()
            .filter(|(_, ks)| !ks.is_empty())
            .map(|(g, ks)| format!("GPU {g}: {}", ks.join(", ")))
            .collect();
        self.notes.push(format!("{} worker(s), one per GPU: {}", gpus.len(), spread.join("; ")));
        self.gpus = gpus.to_vec();
    }
}

/// The GPUs of `--gpus LIST` (indices or UUIDs, comma-separated) or `--jobs N` (0..N).
pub fn gpu_list(gpus: Option<&GpuList>, jobs: Option<u32>) -> Vec<GpuId> {
    match (gpus, jobs) {
        (Some(list), _) => list.0.clone(),
        (None, Some(n)) => (0..n).map(GpuId::index).collect(),
        (None, None) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_lists() {
        let list = |s: &str| s.parse::<GpuList>().unwrap();
        assert_eq!(gpu_list(Some(&list("0, 2")), None), ["0", "2"]);
        assert_eq!(gpu_list(None, Some(3)), ["0", "1", "2"]);
        assert!(gpu_list(None, None).is_empty());
        assert_eq!(gpu_list(Some(&list("GPU-1a2b")), Some(4)), ["GPU-1a2b"]);
        assert!(gpu_list(Some(&list(" , ")), None).is_empty());
    }
}
