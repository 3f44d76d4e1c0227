//! `profile-target.yaml`'s `kernel` section: the kernel's name and its filter, which is
//! checked when the file is read (a regex that is none is refused, naming the file).

use serde::{Deserialize, Serialize};

use crate::model::filter::{FilterMode, KernelFilter, KernelHint};

/// `kernel`: which kernel ncu profiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "KernelText", into = "KernelText")]
pub struct KernelSection {
    /// The kernel hint as the user wrote it.
    pub name: String,
    /// The filter (`filter_mode` and `filter` in the file): a regex, a name, a kernel id
    /// or an NVTX range. Checked when the file is read: a regex that is none is refused,
    /// naming the file, and never matches nothing unseen.
    pub filter: KernelFilter,
    /// Whether kernel discovery may run when the filter matches nothing.
    pub allow_discovery_fallback: bool,
    /// The harness case regex (harness runtime only).
    pub case: Option<String>,
}

/// `kernel` as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelText {
    name: String,
    /// How `filter` is matched.
    filter_mode: FilterMode,
    /// The filter: a regex, a name, a kernel id or an NVTX range, per `filter_mode`.
    filter: String,
    #[serde(default = "yes")]
    allow_discovery_fallback: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    case: Option<String>,
}

impl TryFrom<KernelText> for KernelSection {
    type Error = String;
    fn try_from(t: KernelText) -> Result<Self, String> {
        let filter = KernelFilter::read(t.filter_mode, t.filter).map_err(|e| format!("kernel.filter {e}"))?;
        Ok(KernelSection {
            name: t.name,
            filter,
            allow_discovery_fallback: t.allow_discovery_fallback,
            case: t.case,
        })
    }
}

impl From<KernelSection> for KernelText {
    fn from(k: KernelSection) -> Self {
        KernelText {
            name: k.name,
            filter_mode: k.filter.mode,
            filter: k.filter.pattern,
            allow_discovery_fallback: k.allow_discovery_fallback,
            case: k.case,
        }
    }
}

fn yes() -> bool {
    true
}

impl KernelSection {
    /// The default section for a hint: a `.*<escaped hint>.*` regex (`=NAME`: the
    /// function), discovery allowed.
    pub fn from_hint(hint: &KernelHint) -> Self {
        KernelSection {
            name: hint.to_string(),
            filter: KernelFilter::from_hint(hint),
            allow_discovery_fallback: true,
            case: None,
        }
    }
}
