//! The one sentence a comparison ends with: the duration's change and the evidence that
//! explains it (the hottest line, the metrics that moved, the stall that moved most).

use super::{counterpart, num, Comparison, MetricDelta, Snapshot, Verdict};

/// "duration -50.1 %: the hottest line moved from hgemm.cu:24 (97.6 %) to hgemm.cu:48;
/// L1/TEX throughput 81.8 % -> 89.1 %; ..."
pub(super) fn explain(c: &Comparison, base: &Snapshot, cur: &Snapshot) -> String {
    let Some(d) = &c.duration else {
        return "no duration on one side: nothing to explain".into();
    };
    let head = format!("duration {} ({})", crate::units::pct_signed(d.delta_pct, 1), d.verdict.word());
    if d.verdict == Verdict::Unchanged {
        return format!("{head}: within the tolerance of {} % and the noise", c.tolerance_pct);
    }
    let mut evidence: Vec<String> = Vec::new();
    evidence.extend(hottest_line_evidence(c, base, cur));
    if let (Some(b), Some(n)) = (&c.baseline.classification, &c.current.classification) {
        if b != n {
            evidence.push(format!("verdict {b} -> {n}"));
        }
    }
    evidence.extend(moved_metrics_evidence(c));
    evidence.extend(stall_evidence(c));
    if evidence.is_empty() && (base.kernel.fields.is_empty() || cur.kernel.fields.is_empty()) {
        format!(
            "{head}: a side has a timing only (check --timing-only), no ncu metrics to explain it; \
             `cargo kprof check` without --timing-only profiles too"
        )
    } else if evidence.is_empty() {
        format!("{head}: no collected metric moved enough to explain it")
    } else {
        format!("{head}: {}", evidence.join("; "))
    }
}

/// The hottest line moved to another line, or its share moved beyond the tolerance.
fn hottest_line_evidence(c: &Comparison, base: &Snapshot, cur: &Snapshot) -> Option<String> {
    match (base.hotspots.first(), cur.hotspots.first()) {
        (Some(b), Some(n))
            if !counterpart(&base.hotspots, &cur.hotspots, n).is_some_and(|x| std::ptr::eq(x, b)) =>
        {
            Some(format!(
                "the hottest line moved from {} ({}{}) to {} ({}{})",
                b.location,
                crate::units::pct_fixed(b.pct, 1),
                quote(&b.source),
                n.location,
                crate::units::pct_fixed(n.pct, 1),
                quote(&n.source)
            ))
        }
        (Some(b), Some(n)) if (b.pct - n.pct).abs() > c.tolerance_pct => Some(format!(
            "the hottest line {} went from {} to {} of the samples",
            n.location,
            crate::units::pct_fixed(b.pct, 1),
            crate::units::pct_fixed(n.pct, 1)
        )),
        _ => None,
    }
}

/// The percentages that moved the most (percentage points), then counts that moved a
/// lot: at most three.
fn moved_metrics_evidence(c: &Comparison) -> Vec<String> {
    let mut moved: Vec<&MetricDelta> = c
        .metrics
        .iter()
        .filter(|m| m.metric != "duration_ns" && m.verdict != Verdict::Unchanged)
        .filter(|m| m.baseline.is_some() && m.current.is_some())
        .collect();
    let weight = |m: &MetricDelta| -> f64 {
        let (b, n) = (m.baseline.unwrap_or(0.0), m.current.unwrap_or(0.0));
        if m.unit == "%" {
            (n - b).abs()
        } else {
            m.delta_pct.map(|d| d.abs().min(1000.0) / 10.0).unwrap_or(0.0)
        }
    };
    moved.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
    moved
        .iter()
        .filter(|m| weight(m) >= 5.0)
        .take(3)
        .map(|m| {
            let (b, n) = (m.baseline.unwrap_or(0.0), m.current.unwrap_or(0.0));
            if m.unit == "%" {
                format!("{} {} % -> {} %", m.label, num(b), num(n))
            } else {
                format!(
                    "{} {} -> {} ({})",
                    m.label,
                    num(b),
                    num(n),
                    crate::units::pct_signed(m.delta_pct.unwrap_or(0.0), 0)
                )
            }
        })
        .collect()
}

/// The stall reason that moved the most, when by a warp per issue or more: of those that
/// moved the way the duration did when it moved (a faster kernel is explained by the
/// waiting it lost, not by a new stall it traded for it), else of all.
fn stall_evidence(c: &Comparison) -> Option<String> {
    let delta = |m: &MetricDelta| m.current.unwrap_or(0.0) - m.baseline.unwrap_or(0.0);
    let way = c.duration.as_ref().map_or(0.0, |d| d.delta_pct.signum());
    let both = || c.stalls.iter().filter(|s| s.baseline.is_some() && s.current.is_some());
    let along = |s: &&MetricDelta| way == 0.0 || delta(s).signum() == way;
    let pool: Vec<&MetricDelta> = if both().any(|s| along(&s) && delta(s).abs() >= 1.0) {
        both().filter(along).collect()
    } else {
        both().collect()
    };
    let s = pool
        .into_iter()
        .max_by(|a, b| {
            let w = |m: &MetricDelta| (m.current.unwrap_or(0.0) - m.baseline.unwrap_or(0.0)).abs();
            w(a).total_cmp(&w(b))
        })
        .filter(|s| (s.current.unwrap_or(0.0) - s.baseline.unwrap_or(0.0)).abs() >= 1.0)?;
    Some(format!(
        "{} {} -> {} warps per issue",
        s.label,
        num(s.baseline.unwrap_or(0.0)),
        num(s.current.unwrap_or(0.0))
    ))
}

fn quote(source: &str) -> String {
    let s = source.trim();
    if s.is_empty() || s.starts_with('<') {
        String::new()
    } else {
        let short: String = s.chars().take(60).collect();
        format!(", `{short}`")
    }
}
