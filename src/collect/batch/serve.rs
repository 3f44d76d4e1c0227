//! What a member keeps of a batched stage: its own page written to its profile, its
//! manifest entry and the batched command in its `commands.sh`; and, after `auto`'s
//! basic, the follow-up its own rows choose, written to its `commands.sh` as the command
//! that runs it alone.

use anyhow::Result;

use super::{Batch, Shared};
use crate::collect::follow_up::follow_up;
use crate::collect::reason::{FollowUpWhy, Reason};
use crate::collect::run::append_command;
use crate::events::Event;
use crate::model::filter::KernelFilter;
use crate::model::stage::Stage;
use crate::ncu::command::{stage_command, StageCollection, StageRun};
use crate::ncu::parse::RawPage;
use crate::process::shell_comment;

impl Batch<'_, '_> {
    /// Writes member `i`'s own page (`text`; `page`, parsed, for a raw page) and its
    /// manifest entry, and records the batched command in its `commands.sh`.
    pub(super) fn serve(
        &mut self,
        i: usize,
        shared: &Shared<'_>,
        collection: &StageCollection,
        text: &str,
        page: Option<&RawPage>,
    ) -> Result<()> {
        let m = &self.members[i];
        crate::profile::fs::write_atomic(&m.dir.stage_raw_path(collection), text)?;
        let mut outcome = shared.ran.outcome.clone();
        let kernels = shared.group.len();
        outcome.why = Reason::BatchedWith { inner: Box::new(shared.reason.clone()), kernels }.to_string();
        if collection != shared.collection {
            outcome.stage = collection.name().to_string();
            outcome.output = crate::profile::dir::raw_page_rel(collection);
            outcome.why.push_str(&format!(
                "; one merged run ({}), this page cut from it by column",
                shared.collection.label()
            ));
        }
        if let Some(page) = page {
            outcome.passes = page
                .launches()
                .filter_map(|l| l.number("profiler__replayer_passes"))
                .map(|v| v as u32)
                .collect();
            outcome.launches = page.launches().count();
        }
        self.manifests[i].stages.push(outcome);
        append_command(
            m.dir,
            &format!(
                "# Stage {} ran batched with {kernels} kernel(s) of this program, as:\n# {}\n",
                collection.name(),
                shell_comment(&shared.cmd.to_string())
            ),
        )?;
        Ok(())
    }

    /// The follow-up member `i`'s basic rows choose, said, and written to its
    /// `commands.sh` as the command that runs it alone (the script stays replayable alone).
    pub(super) fn follow_up_of(&self, i: usize, page: RawPage) -> Result<(Stage, FollowUpWhy)> {
        let m = &self.members[i];
        let filter = m.kernel.filter.clone().unwrap_or_else(|| KernelFilter::regex(".*"));
        let (stage, reason) = follow_up(Ok(page), self.rules, &filter)?;
        self.shell.emit(&Event::FollowUpChosen {
            kernel: m.kernel.name.clone(),
            stage,
            why: reason.to_string(),
            batched: true,
        });
        let collection = StageCollection::Named(stage);
        let alone_cmd = stage_command(
            m.ncu,
            &StageRun {
                collection: &collection,
                filter: Some(&filter),
                window: m.kernel.window,
                clock_control: m.kernel.clock_control,
                log_file: &m.dir.stage_raw_path(&collection),
                target: m.target,
                privilege: m.kernel.privilege,
                ranges: &m.kernel.census.ncu_range_args(),
                report: None,
            },
        );
        let about = Reason::FollowUp(reason.clone()).script_comment(collection.name());
        // Numbered after the stages written before the run (basic, and auto's source).
        let number = m.first.len() + 1;
        append_command(m.dir, &format!("# Stage {number}: {about}\n{alone_cmd}\n"))?;
        Ok((stage, reason))
    }
}
