//! The one place the command line becomes a [`Request`]: the profiling options every
//! profiling command shares ([`KernelOptions::request`]), the whole `cargo kprof` line
//! ([`ProfileArgs::request`]), and what a run of an archive takes of it
//! ([`KernelOptions::archived_request`]). Commands call these; nothing else writes a
//! `Request` out (`tests/it/layout.rs` keeps it so).

use super::kernel::StagesArg;
use super::{KernelOptions, ProfileArgs};
use crate::build::Features;
use crate::config::CargoTargetKind;
use crate::error::{ExitCode, Failure};
use crate::model::census::{CensusPlan, Pick};
use crate::model::partition::Shard;
use crate::plan::{CustomStage, Request, StagePlan};

impl KernelOptions {
    /// These options as a [`Request`] (everything else left at its default), checked:
    /// the hints and the stage list (the regex is checked by whoever applies it).
    pub fn request(&self) -> Result<Request, Failure> {
        for k in &self.kernels {
            crate::model::names::check_kernel_hint(&k.to_string())?;
        }
        let stages = match &self.stages {
            Some(StagesArg(Ok(selection))) => Some(StagePlan::Stages(selection.clone())),
            Some(StagesArg(Err(e))) => {
                return Err(Failure::new(ExitCode::Config, format!("--stages: {e}"))
                    .help("e.g. --stages auto, --stages all, --stages basic,memory"))
            }
            None => None,
        };
        Ok(Request {
            census: self.census()?,
            kernels: self.kernels.clone(),
            kernel_regex: self.kernel_regex.clone(),
            stages,
            launch_skip: self.launch_skip,
            launch_count: self.launch_count,
            envs: self.envs.clone(),
            output_dir: self.output_dir.clone(),
            dry_run: self.dry_run,
            // `KPROF_NO_BATCH=1` does the same for runs started by scripts (cluster jobs).
            no_batch: self.no_batch || std::env::var_os("KPROF_NO_BATCH").is_some_and(|v| v == "1"),
            partition: self.partition.map(Shard::from_flag),
            gpus: crate::plan::gpu_list(self.gpus.as_ref(), self.jobs),
            ..Request::default()
        })
    }

    /// What an archive's run takes of the command line: these options, and `--sudo`
    /// (`sudo`), which decides here how ncu starts; the archive holds the rest.
    pub fn archived_request(&self, sudo: bool) -> Result<Request, Failure> {
        Ok(Request { sudo, ..self.request()? })
    }
}

impl KernelOptions {
    /// The census options, checked: `--top 0`, a `--min-share` that is no percentage,
    /// `--census-launches 0` and an empty `--nvtx-include` are refused, naming the fix.
    fn census(&self) -> Result<CensusPlan, Failure> {
        let pick = match (self.top, self.min_share) {
            (Some(n), _) => Pick::top(n)?,
            (None, Some(p)) => Pick::min_share(p)?,
            (None, None) => Pick::Default,
        };
        let named = !self.kernels.is_empty() || self.kernel_regex.is_some();
        if let (true, Some(flag)) =
            (named, self.top.map(|_| "--top").or(self.min_share.map(|_| "--min-share")))
        {
            return Err(Failure::new(
                ExitCode::Usage,
                format!("{flag} picks kernels from the census, which runs only when no kernel is named"),
            )
            .help(format!("drop --kernel/--kernel-regex to census the program, or drop {flag}")));
        }
        if self.census_launches == Some(0) {
            return Err(Failure::new(ExitCode::Usage, "--census-launches 0 would count no launch")
                .help("pass 1 or more, e.g. --census-launches 200 (the default is 1000)"));
        }
        if let Some(empty) = self.nvtx_include.iter().find(|r| r.trim().is_empty()) {
            return Err(Failure::new(ExitCode::Usage, format!("--nvtx-include `{empty}` names no range"))
                .help("name the range, e.g. --nvtx-include forward/ (a push/pop range called `forward`)"));
        }
        Ok(CensusPlan {
            pick,
            launch_cap: self.census_launches,
            nvtx_include: self.nvtx_include.clone(),
            profiler_range: self.profiler_range,
            picked: false,
        })
    }
}

impl ProfileArgs {
    /// The typed request [`crate::plan::resolve`] takes.
    pub fn request(&self) -> Result<Request, Failure> {
        let kernel = self.kernel.request()?;
        let target = self
            .bench
            .as_ref()
            .map(|n| (CargoTargetKind::Bench, n.clone()))
            .or(self.example.as_ref().map(|n| (CargoTargetKind::Example, n.clone())))
            .or(self.bin.as_ref().map(|n| (CargoTargetKind::Bin, n.clone())));
        let stages = if self.set.is_some() || !self.sections.is_empty() {
            Some(StagePlan::Custom(CustomStage { set: self.set.clone(), sections: self.sections.clone() }))
        } else {
            kernel.stages.clone()
        };
        Ok(Request {
            packages: self.packages.packages.clone(),
            workspace: self.packages.workspace,
            target,
            features: Features {
                features: self
                    .features
                    .iter()
                    .flat_map(|f| f.split([',', ' ']))
                    .filter(|f| !f.is_empty())
                    .map(String::from)
                    .collect(),
                all_features: self.all_features,
                no_default_features: self.no_default_features,
            },
            profile: self.profile.clone(),
            target_dir: self.target_dir.clone(),
            index: self.index,
            stages,
            clock_control: self.clock_control,
            timeout: self.timeout.map(std::time::Duration::from_secs),
            sudo: self.sudo,
            bench_args: self.bench_args.clone(),
            ..kernel
        })
    }

    /// What an archive's run takes of the command line (`run --archive`, `check
    /// --archive`, `bisect --archive`): the kernel options and `--sudo`; the archive holds
    /// the rest.
    pub fn archived_request(&self) -> Result<Request, Failure> {
        self.kernel.archived_request(self.sudo)
    }
}
