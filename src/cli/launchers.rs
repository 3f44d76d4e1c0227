//! `cargo kprof archive --emit ...`: the launchers written next to the archive, beside
//! `cli.rs` so that it stays one readable file.

use clap::Args;

use crate::archive::emit::{self, Gres, Launcher, LauncherRequest, SlurmOptions};

/// Which launchers to write next to the archive, and how to split the kernels.
#[derive(Debug, Args)]
#[command(next_help_heading = "Launchers")]
pub struct LauncherArgs {
    /// Also write a launcher next to the archive: `slurm` (FILE.slurm.sh, an sbatch job
    /// array and its merge), `k8s` (FILE.k8s.yaml, an Indexed Job) or `github`
    /// (FILE.github.yml, a workflow with a shard matrix); repeat for several
    #[arg(long = "emit", value_enum, value_name = "slurm|k8s|github")]
    pub emit: Vec<Launcher>,
    /// How many shards the launchers split the kernels into, one GPU each (default: one
    /// per archived kernel, at most 8)
    #[arg(long, value_name = "N", requires = "emit", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: Option<u32>,
    /// The Slurm GRES each array task asks for, or `none` for clusters without GRES
    #[arg(long, value_name = "SPEC|none", default_value = "gpu:1", value_parser = emit::parse_gres)]
    pub slurm_gres: Gres,
    /// The Slurm time limit of each array task (sbatch's --time: `MM`, `HH:MM:SS`, `D-HH:MM`)
    #[arg(long, value_name = "TIME", default_value = "1:00:00", value_parser = emit::parse_time)]
    pub slurm_time: String,
}

impl LauncherArgs {
    /// The launchers asked for, as [`crate::archive::emit`] takes them.
    pub fn request(&self) -> LauncherRequest {
        let mut launchers = self.emit.clone();
        launchers.sort();
        launchers.dedup();
        LauncherRequest {
            launchers,
            shards: self.shards.map(|n| n as usize),
            slurm: SlurmOptions { gres: self.slurm_gres.clone(), time: self.slurm_time.clone() },
        }
    }
}
