//! One answer per launch: a profile that holds more metrics than `auto` collects (a
//! `--set full` import, extra stages) must name the cause `auto`'s stages name, or say
//! which metric changed the answer. [`Rules::refinement`] derives what `auto`'s stages
//! alone would name (basic, then the follow-up the rules choose from basic's metrics),
//! from the same launch's metrics, and, where the causes differ, names the metric,
//! absent from those stages, that decided.

use serde::{Deserialize, Serialize};

use super::summary::{self, KernelSummary};
use super::{KernelVerdict, Rules};
use crate::model::stage::Stage;
use crate::ncu::stages;

/// What `auto`'s stages alone would name, where a profile holding more names another cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refinement {
    /// The stages `auto` runs for this kernel: basic, then its follow-up.
    pub stages: Vec<Stage>,
    /// The limiter those stages alone name; `None` for no cause.
    pub limiter: Option<String>,
    /// The summary field, not collected by those stages, that changed the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Its ncu metric, or how it is derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Its value here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The sentence the reports print.
    pub text: String,
}

/// Whether `metric` is collected by one of `stages`.
fn collects(stages: &[Stage], metric: &str) -> bool {
    stages.iter().any(|s| stages::definition(*s).metrics.contains(&metric))
}

impl Rules {
    /// Where this profile's verdict `v` names another cause than `auto`'s stages alone
    /// would from the same metrics: what they name and the metric that changed it.
    /// `None` when they agree, or when the profile holds no more than those stages.
    pub fn refinement(&self, s: &KernelSummary, v: &KernelVerdict) -> Option<Refinement> {
        let basic = s.restricted(|m| collects(&[Stage::Basic], m));
        if basic.collected() == s.collected() {
            return None;
        }
        let follow_up = self.decide(&basic).follow_up_stage;
        let stages = vec![Stage::Basic, follow_up];
        let auto = s.restricted(|m| collects(&stages, m));
        if auto.collected() == s.collected() {
            return None;
        }
        let auto_verdict = self.decide(&auto);
        let id = |v: &KernelVerdict| v.limiter.as_ref().map(|l| l.id.clone());
        let (mine, theirs) = (id(v), id(&auto_verdict));
        if mine == theirs {
            return None;
        }
        let find =
            |id: &Option<String>| id.as_ref().and_then(|i| self.limiters.iter().find(|l| &l.spec.id == i));
        let mut fields: Vec<&str> = Vec::new();
        if let Some(l) = find(&mine) {
            fields.extend(l.deciding_fields(s, true));
        }
        if let Some(l) = find(&theirs) {
            fields.extend(l.deciding_fields(s, false));
        }
        let field = fields.into_iter().find(|f| s.get(f).is_some() && auto.get(f).is_none());
        let value = field.and_then(|f| s.get(f));
        let names = stages.iter().map(|s| s.name()).collect::<Vec<_>>().join("+");
        let named = |l: &Option<String>| l.as_ref().map_or("no cause".to_string(), |l| format!("`{l}`"));
        let why = match (field, value) {
            (Some(f), Some(x)) => {
                format!("with {f} = {}, which they do not collect,", crate::units::value(x))
            }
            _ => "ranking the causes by their predicted savings with the metrics they do not collect,".into(),
        };
        let text =
            format!("{names} alone name {}; {why} this profile names {}.", named(&theirs), named(&mine));
        Some(Refinement {
            stages,
            limiter: theirs,
            field: field.map(str::to_string),
            metric: field.map(summary::source_of),
            value,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::summary::StallShare;

    /// A synthetic pointer chase with 200 KiB of shared memory per block, as basic and
    /// the memory stage would see it: one block (4 warps) per SM, eight waves of them (as
    /// the zoo's `pointer_chase_smem200k`), random 4-byte loads.
    fn pointer_chase(memory_pct: f64) -> KernelSummary {
        let direct = [
            ("duration_ns", 800_000.0),
            ("sm_throughput_pct", 3.0),
            ("memory_throughput_pct", memory_pct),
            ("dram_throughput_pct", memory_pct),
            ("l1tex_throughput_pct", 20.0),
            ("l1tex_throughput_elapsed_pct", 10.0),
            ("l2_throughput_pct", 30.0),
            ("achieved_occupancy_pct", 6.2),
            ("theoretical_occupancy_pct", 6.25),
            ("registers_per_thread", 32.0),
            ("static_shared_mem_per_block_bytes", 0.0),
            ("dynamic_shared_mem_per_block_bytes", 204_800.0),
            ("block_size", 128.0),
            ("grid_size", 1056.0),
            ("waves_per_sm", 8.0),
            ("occupancy_limit_registers", 16.0),
            ("occupancy_limit_shared_mem", 1.0),
            ("occupancy_limit_warps", 16.0),
            ("occupancy_limit_blocks", 32.0),
            ("global_load_sectors", 32e6),
            ("global_load_requests", 1e6),
            ("global_load_bytes_per_sector", 4.0),
            ("global_store_sectors", 0.0),
            ("global_store_requests", 0.0),
            ("global_red_requests", 0.0),
            ("global_atom_requests", 0.0),
            ("local_load_sectors", 0.0),
            ("local_store_sectors", 0.0),
        ];
        let s = KernelSummary {
            kernel: "chase".into(),
            launches: 1,
            fields: direct.iter().map(|(k, v)| (k.to_string(), Some(*v))).collect(),
            top_stalls: vec![StallShare { reason: "long_scoreboard".into(), warps_per_issue: 40.0 }],
        };
        s.restricted(|_| true)
    }

    #[test]
    fn more_evidence_refines_the_pointer_chase_without_overturning_it() {
        let rules = Rules::builtin();
        let s = pointer_chase(47.7);
        let v = rules.decide(&s);
        assert_eq!(v.limiter.as_ref().map(|l| l.id.as_str()), Some("occupancy-shared-memory"));
        assert!(v.other_causes.iter().any(|o| o.id == "uncoalesced-global"), "{:?}", v.other_causes);
        assert_eq!(rules.refinement(&s, &v), None);
    }

    #[test]
    fn an_answer_the_extra_metrics_change_names_the_metric() {
        let rules = Rules::builtin();
        // Memory at 59 %: the scattered loads now cost more than the missing warps.
        let s = pointer_chase(59.0);
        let v = rules.decide(&s);
        assert_eq!(v.limiter.as_ref().map(|l| l.id.as_str()), Some("uncoalesced-global"));
        let r = rules.refinement(&s, &v).expect("basic+occupancy name another cause");
        assert_eq!(r.stages, [Stage::Basic, Stage::Occupancy]);
        assert_eq!(r.limiter.as_deref(), Some("occupancy-shared-memory"));
        assert_eq!(r.field.as_deref(), Some("uncoalesced_excess_pct"));
        assert!(
            r.text.contains("with uncoalesced_excess_pct = 87.50, which they do not collect, this profile names `uncoalesced-global`"),
            "{}",
            r.text
        );
        // A profile of basic and the occupancy stage alone is what `auto` collects: nothing to refine.
        let auto = s.restricted(|m| collects(&r.stages, m));
        assert_eq!(rules.refinement(&auto, &rules.decide(&auto)), None);
    }
}
