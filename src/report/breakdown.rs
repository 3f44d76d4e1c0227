//! `breakdown.md`: a program's census (`breakdown.json`) as a table, every kernel
//! costliest first with its launches, total and mean time, share of serialised GPU time
//! and launch shapes, and the kernels picked; and the census section of the profiles
//! index.

use std::path::Path;

use anyhow::Result;

use super::md;
use crate::model::census::{Breakdown, CensusSource, EARLY_PART_OF_SPAN};
use crate::profile::fs::{write_atomic, write_atomic_bytes};
use crate::profile::ProfileDir;
use crate::units::{duration, pct_fixed};

/// Writes `breakdown.md` and `visual/census.png` from `breakdown.json`, where the census
/// ran; elsewhere nothing. A picture that cannot be drawn is left out, and said (the
/// returned warning), as the summary picture is.
pub fn write(dir: &ProfileDir) -> Result<Option<String>> {
    let Some(b) = dir.read_breakdown()? else { return Ok(None) };
    write_atomic(&dir.breakdown_md_path(), &md::document(&render(&b)))?;
    let drawn = super::visual::census_png(&b).and_then(|png| {
        dir.ensure_dir(&dir.visual_dir())?;
        write_atomic_bytes(&dir.census_png_path(), &png)
    });
    Ok(drawn.err().map(|e| {
        std::fs::remove_file(dir.census_png_path()).ok();
        format!("{} was not written: {e:#}", dir.relative(&dir.census_png_path()))
    }))
}

/// The census as Markdown.
pub fn render(b: &Breakdown) -> String {
    let mut out = String::from("# Census: which kernels take the time\n\n");
    let how = match b.by {
        CensusSource::Ncu => {
            "ncu serialises the launches it profiles, so each share is of serialised GPU time \
             (kernels that overlapped on several streams count in full)."
        }
        CensusSource::Trace => {
            "Traced as the program ran (CUPTI, no ncu): each share is of the launches' summed GPU \
             time (kernels that overlapped on several streams count in full)."
        }
    };
    out.push_str(&format!(
        "{} launch{} of {} kernel{}, {} of GPU time in all{}. {how}{}\n\n",
        b.launches,
        if b.launches == 1 { "" } else { "es" },
        b.kernels.len(),
        if b.kernels.len() == 1 { "" } else { "s" },
        duration(b.total_ns),
        b.bounds.as_deref().map(|r| format!(", {r}")).unwrap_or_default(),
        if b.capped { " The pass stopped at its launch cap: later launches are not counted." } else { "" },
    ));
    if b.kernels.iter().any(|r| r.early) {
        out.push_str(&format!(
            "Kernels marked *early* launched only in the first {:.0} % of the traced GPU time span: \
             warm-up, autotuning or set-up rather than the program's steady work.\n\n",
            100.0 * EARLY_PART_OF_SPAN
        ));
    }
    if !b.chosen.is_empty() {
        let each: Vec<String> = b
            .chosen
            .iter()
            .map(|f| format!("{} ({})", md::code(f), pct_fixed(b.share_of(std::slice::from_ref(f)), 1)))
            .collect();
        out.push_str(&format!(
            "Profiled: {}, {} of GPU time, picked as {}.\n\n",
            each.join(", "),
            pct_fixed(b.share_of(&b.chosen), 1),
            md::text(&b.pick)
        ));
    }
    out.push_str("| # | kernel | launches | total | mean | share | grid | block |\n|---|---|---|---|---|---|---|---|\n");
    for (i, r) in b.kernels.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            i + 1,
            md::cell_code(&r.kernel) + if r.early { " *early*" } else { "" },
            r.launches,
            duration(r.total_ns),
            duration(r.mean_ns),
            pct_fixed(r.share_pct, 1),
            md::cell(&r.grid.join("; ")),
            md::cell(&r.block.join("; ")),
        ));
    }
    out
}

/// The index's census section: one line per profile under `root` named in `profiles`
/// that holds a census, or nothing.
pub fn index_section(root: &Path, profiles: &[&str]) -> String {
    let mut lines = Vec::new();
    for p in profiles {
        let dir = ProfileDir::at(root.join(p));
        let Ok(Some(b)) = dir.read_breakdown() else { continue };
        let each: Vec<String> = b
            .chosen
            .iter()
            .map(|f| format!("{} ({})", md::code(f), pct_fixed(b.share_of(std::slice::from_ref(f)), 1)))
            .collect();
        lines.push(format!(
            "- [{p}]({p}/{}): {} kernel{} in {} launches, {}; profiled {}",
            dir.relative(&dir.breakdown_md_path()),
            b.kernels.len(),
            if b.kernels.len() == 1 { "" } else { "s" },
            b.launches,
            duration(b.total_ns),
            if each.is_empty() { "none".to_string() } else { each.join(", ") },
        ));
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\n## Census\n\nWhich kernels took the time in each program profiled with no kernel named:\n\n{}\n",
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::census::{CensusLaunch, Pick};

    #[test]
    fn the_table_lists_every_kernel_with_its_share() {
        let l = |k: &'static str, ns: f64| CensusLaunch {
            kernel: k,
            function: k.to_string(),
            duration_ns: ns,
            grid: Some("(2, 1, 1)"),
            block: Some("(128, 1, 1)"),
        };
        let mut b = Breakdown::from_launches([l("a|b", 3000.0), l("c", 1000.0)], false);
        b.pick(Pick::Top(1)).unwrap();
        let text = render(&b);
        assert!(text.contains("2 launches of 2 kernels, 4.0000 µs of GPU time in all."), "{text}");
        assert!(text.contains("Profiled: `a|b` (75.0 %), 75.0 % of GPU time, picked as --top 1."), "{text}");
        assert!(
            text.contains("| 1 | `a\\|b` | 1 | 3.0000 µs | 3.0000 µs | 75.0 % | (2, 1, 1) | (128, 1, 1) |"),
            "{text}"
        );
        assert!(text.contains("| 2 | `c` | 1 | 1.0000 µs | 1.0000 µs | 25.0 % |"), "{text}");
        assert!(text.contains("serialised GPU time") && !text.contains("early"), "{text}");
    }

    #[test]
    fn a_traced_census_says_so_and_marks_early_kernels() {
        let row = |k: &str, ns: f64, early: bool| crate::model::census::BreakdownRow {
            kernel: k.into(),
            function: k.into(),
            launches: 1,
            total_ns: ns,
            mean_ns: 0.0,
            share_pct: 0.0,
            grid: Vec::new(),
            block: Vec::new(),
            early,
        };
        let mut b = Breakdown::from_rows(vec![row("work", 900.0, false), row("tune", 100.0, true)], 2, false);
        b.by = CensusSource::Trace;
        let text = render(&b);
        assert!(text.contains("Traced as the program ran (CUPTI, no ncu)"), "{text}");
        assert!(text.contains("first 10 % of the traced GPU time span"), "{text}");
        assert!(text.contains("| 2 | `tune` *early* | 1 |"), "{text}");
        assert!(text.contains("| 1 | `work` | 1 |"), "{text}");
    }
}
