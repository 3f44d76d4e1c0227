//! Applying a shard (`--partition`, or a cluster engine's array index) to the resolved
//! kernels: after resolution (or an archive's adjustment) and before anything is built
//! or run, so that a shard builds only its own kernels' targets.

use crate::model::partition::{KernelIdentity, Shard};

use super::{KernelPlan, PlannedTarget};

impl KernelPlan {
    /// What names this kernel for `hash:` shards: its package, target kind, target name
    /// (or command words) and name.
    pub fn identity(&self) -> KernelIdentity<'_> {
        let (package, kind, target) = match &self.target {
            PlannedTarget::Cargo(t) => (t.package.as_str(), t.kind.name(), vec![t.name.as_str()]),
            PlannedTarget::Command(words) => ("", "command", words.iter().map(String::as_str).collect()),
        };
        KernelIdentity { package, kind, target, kernel: &self.name }
    }
}

/// The kernels of `shard`, in selection order, each marked with it; a note says which
/// shard was taken, from where, and what it holds (also when it holds nothing).
pub fn apply_shard(shard: &Shard, kernels: Vec<KernelPlan>, notes: &mut Vec<String>) -> Vec<KernelPlan> {
    let selected = kernels.len();
    let mut kept = shard.partition.select(kernels, KernelPlan::identity);
    for k in &mut kept {
        k.partition = Some(shard.partition);
    }
    notes.push(if kept.is_empty() {
        format!("{} holds no kernel of the {selected} selected; nothing to do", shard.describe())
    } else {
        let names: Vec<&str> = kept.iter().map(|k| k.name.as_str()).collect();
        format!(
            "{}: {} of the {selected} selected kernels: {}",
            shard.describe(),
            kept.len(),
            names.join(", ")
        )
    });
    kept
}
