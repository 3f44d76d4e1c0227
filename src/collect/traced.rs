//! The census by tracing: a plain program with no kernel named runs once on its own, with
//! kprof's tracer (`tracer/`) injected by the CUDA driver (`CUDA_INJECTION64_PATH`), which
//! records every kernel launch with CUPTI at tracing cost instead of ncu's ~60 ms
//! durations-only replay per launch. The trace gives the census and its breakdown, the
//! same shapes as ncu's page ([`super::trace`]); what follows (the picks, their windows,
//! the batch) is what follows ncu's census.
//!
//! Where the tracer cannot be used, the census is ncu's pass, as before, and one line says
//! why: no CUPTI library or no tracer library ([`CensusWay::Ncu`], decided once per run by
//! `ops::profile`), a census bounded by an NVTX or profiler range (which only ncu's pass
//! honours), another injection library already set, or a traced run that left no usable
//! trace (the driver did not load the tracer, another CUPTI client was attached, the
//! program failed). A harness bench's census stays ncu's without a word: its window is the
//! harness's own range, which a trace of the whole process would not keep.
//!
//! The methods are [`Single`]'s, written apart from its handlers as `adapt.rs`'s are; this
//! file imports `single`, never the other way.

use std::path::PathBuf;

use anyhow::Result;
use kprof_contract::tracer as vars;

use super::discover;
use super::queue::Next;
use super::reason::Reason;
use super::run::append_command;
use super::single::{Pending, Single};
use super::trace::Trace;
use crate::events::Event;
use crate::model::kinds::LaunchWindow;
use crate::ncu::StageCollection;
use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::profile::{ProfileDir, StageOutcome, StageStatus};

/// The variable the CUDA driver reads for an injection library.
pub const INJECTION_VAR: &str = "CUDA_INJECTION64_PATH";

/// A tracer ready to use: the library the driver injects, and the CUPTI it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracer {
    /// The built `libkprof_tracer.so`.
    pub library: PathBuf,
    /// The CUPTI library (`libcupti.so...`).
    pub cupti: PathBuf,
}

/// How the censuses of a run are taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CensusWay {
    /// By tracing, where the census allows it.
    Trace(Tracer),
    /// By ncu's durations-only pass: `Some(why)` when the tracer was wanted and cannot be
    /// used (said once per census), `None` when ncu's pass was chosen (`KPROF_CENSUS=ncu`)
    /// or the run takes no census.
    Ncu(Option<String>),
}

impl Single<'_, '_> {
    /// The stages to start with: the traced census and what it leads to, or `first` (ncu's
    /// census, or the stages of a kernel that has a hint) when there is no census to trace,
    /// saying why once when the tracer was wanted.
    pub(super) fn start_with(&mut self, way: &CensusWay, first: Vec<Pending>) -> Result<Vec<Pending>> {
        let census = self.run.kernel.filter.is_none()
            && matches!(first.as_slice(), [p] if p.collection == StageCollection::Discovery);
        let harness = matches!(self.run.kernel.window, LaunchWindow::HarnessRange { .. });
        if !census || harness {
            return Ok(first);
        }
        let tracer = match way {
            CensusWay::Ncu(None) => return Ok(first),
            CensusWay::Ncu(Some(why)) => return self.fall_back(why.clone(), first),
            CensusWay::Trace(t) => t,
        };
        if let Some(why) = self.not_traceable() {
            return self.fall_back(why, first);
        }
        match self.traced_census(tracer)? {
            Ok(Next::Then(stages)) => Ok(stages),
            Ok(Next::Fail(e)) => Err(e),
            Ok(_) => Ok(Vec::new()),
            Err(why) => self.fall_back(why, first),
        }
    }

    /// Why this program's census cannot be traced, if it cannot.
    fn not_traceable(&self) -> Option<String> {
        let kernel = self.run.kernel;
        if let Some(bounds) = kernel.census.describe_bounds() {
            return Some(format!(
                "the census is bounded ({bounds}), which only ncu's pass honours; a trace counts every launch"
            ));
        }
        let set = kernel.env.get(INJECTION_VAR).cloned().or_else(|| std::env::var(INJECTION_VAR).ok());
        set.map(|v| format!("{INJECTION_VAR} is already set (`{v}`): another injection library or tracer"))
    }

    /// Says in one line why the census is ncu's pass, and goes on with it.
    fn fall_back(&self, why: String, first: Vec<Pending>) -> Result<Vec<Pending>> {
        self.shell.emit(&Event::CensusFallback { kernel: self.run.kernel.name.clone(), why });
        Ok(first)
    }

    /// The program run once under the tracer, and its census: the handler's answer, or why
    /// there is no usable trace. A signal during the run ends it.
    fn traced_census(&mut self, tracer: &Tracer) -> Result<Result<Next<Pending>, String>> {
        let dir = self.run.dir;
        let out = dir.census_trace_dir();
        std::fs::create_dir_all(&out)
            .map_err(|e| anyhow::anyhow!("could not create {}: {e}", out.display()))?;
        let cmd = traced_command(self.run.target, tracer, &out, self.run.kernel.census.launch_cap);
        append_command(
            dir,
            &format!(
                "# The census by tracing (instead of the ncu pass written above): the program once, with\n\
                 # kprof's tracer injected; every kernel launch summed into {}/<pid>.tsv\n{cmd}\n",
                ProfileDir::census_trace_rel()
            ),
        )?;
        let kernel = self.run.kernel.name.clone();
        let why = Reason::Traced;
        self.shell.emit(&Event::StageStarted {
            kernel: kernel.clone(),
            stage: StageCollection::Discovery.name().into(),
            why: why.to_string(),
        });
        let done =
            process::run(&cmd, RunOptions { timeout: self.run.timeout, ..Default::default() }, self.shell);
        let exit_code = match &done.ending {
            Ending::Interrupted(signal) => {
                return Err(process::interrupted(*signal, "during the census").into())
            }
            Ending::Exited(status) if status.success() => status.code(),
            Ending::Exited(status) => {
                let how = process::describe_status(status);
                return Ok(Err(format!("the traced run of the program ended with {how}")));
            }
            Ending::TimedOut => return Ok(Err("the traced run of the program timed out".into())),
            Ending::NotStarted(msg) => return Ok(Err(format!("the program could not be started ({msg})"))),
        };
        let trace = match Trace::read_dir(&out) {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        if let Some(e) = trace.errors.first() {
            return Ok(Err(format!("the tracer could not trace: {e}")));
        }
        let wall_ms = done.wall.as_millis() as u64;
        self.manifest.stages.push(StageOutcome {
            stage: StageCollection::Discovery.name().into(),
            why: why.to_string(),
            command: cmd.to_string(),
            exit_code,
            wall_ms,
            passes: Vec::new(),
            launches: trace.launches as usize,
            status: StageStatus::Ok,
            output: ProfileDir::census_trace_rel(),
            log: None,
        });
        self.shell.emit(&Event::StageDone {
            kernel,
            stage: StageCollection::Discovery.name().into(),
            status: StageStatus::Ok,
            passes: None,
            wall_ms,
            why: why.brief(),
        });
        let plan = &self.run.kernel.census;
        let (counted, breakdown, refused) = discover::finish(dir, trace.census(), trace.breakdown(), plan)?;
        self.on_census(counted, breakdown, refused).map(Ok)
    }
}

/// The program run as it is, with the tracer injected: its own arguments, environment and
/// folder, plus the driver's injection variable and the tracer's (where to write, which
/// CUPTI, the launch cap of `--census-launches` when given).
pub fn traced_command(
    target: &crate::ncu::command::TargetCommand,
    tracer: &Tracer,
    out: &std::path::Path,
    cap: Option<u32>,
) -> ProcessBuilder {
    let mut cmd = ProcessBuilder::new(&target.program);
    cmd.args(&target.args);
    for (k, v) in &target.env {
        cmd.env(k.clone(), v.clone());
    }
    cmd.env(INJECTION_VAR, tracer.library.display().to_string());
    cmd.env(vars::OUT, out.display().to_string());
    cmd.env(vars::CUPTI, tracer.cupti.display().to_string());
    if let Some(cap) = cap {
        cmd.env(vars::LAUNCHES, cap.to_string());
    }
    cmd.cwd(&target.cwd);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ncu::command::TargetCommand;

    #[test]
    fn the_traced_run_is_the_program_with_the_tracer_s_variables() {
        let target = TargetCommand {
            program: "/w/target/kprof/release/app".into(),
            args: vec!["--steps".into(), "3".into()],
            env: [("LD_LIBRARY_PATH".to_string(), "/opt/lib".to_string())].into_iter().collect(),
            cwd: "/w".into(),
            ptx_cache: None,
        };
        let tracer = Tracer { library: "/t/libkprof_tracer.so".into(), cupti: "/c/libcupti.so".into() };
        let out = std::path::Path::new("/p/details/census_trace");
        let cmd = traced_command(&target, &tracer, out, None);
        assert_eq!(
            cmd.to_string(),
            "cd /w && env CUDA_INJECTION64_PATH=/t/libkprof_tracer.so KPROF_CUPTI=/c/libcupti.so \
             KPROF_TRACE_OUT=/p/details/census_trace LD_LIBRARY_PATH=/opt/lib /w/target/kprof/release/app --steps 3"
        );
        // --census-launches bounds the trace too.
        let capped = traced_command(&target, &tracer, out, Some(500));
        assert_eq!(capped.get_envs().get(vars::LAUNCHES).map(String::as_str), Some("500"));
    }
}
