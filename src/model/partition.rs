//! Shards: `--partition count:I/N | hash:I/N`, spelled as cargo-nextest spells it, and
//! the shard a cluster engine's array index names.
//!
//! The unit is a kernel of the resolved selection. `count:I/N` deals the kernels out in
//! selection order: the k-th (0-based) belongs to shard `k % N + 1`, so the shards differ
//! in size by at most one, but a kernel added to the selection moves the kernels after
//! it. `hash:I/N` puts a kernel in shard `h % N + 1`, `h` being [`identity_hash`] of its
//! identity: a kernel stays in its shard whatever else is selected, on every machine and
//! in every version of kprof (the hash and the identity's bytes are fixed below and
//! pinned by tests).
//!
//! Slurm job arrays and Kubernetes Indexed Jobs name a shard through the environment
//! ([`from_env`]); `--partition` wins over it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{ExitCode, Failure};

/// How kernels are dealt to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionMode {
    /// By position in the selection.
    Count,
    /// By a stable hash of the kernel's identity.
    Hash,
}

impl PartitionMode {
    /// `count` or `hash`.
    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::Count => "count",
            PartitionMode::Hash => "hash",
        }
    }
}

/// One shard of a selection: shard `index` of `total` (1-based), and how kernels are dealt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Partition {
    /// `count` or `hash`.
    pub mode: PartitionMode,
    /// Which shard, 1..=total.
    pub index: u32,
    /// How many shards.
    pub total: u32,
}

/// What a bad `--partition` value is told.
pub const PARTITION_FORMS: &str =
    "write count:I/N (the I-th of N shards by position) or hash:I/N (by a hash of each kernel), with 1 <= I <= N, e.g. count:1/4";

/// The most shards a partition may have. Each shard is one job that profiles at least one
/// kernel, and `merge` accounts for every shard it did not get (it names each missing
/// one), so a count far beyond any selection of kernels is a mistake: a typo, or a job
/// array's size read from the wrong variable. `count:1/4294967295` was accepted, and a
/// merge then listed billions of missing shards until it ran out of memory.
pub const MAX_SHARDS: u32 = 65_536;

/// Why a shard count is bounded, as the refusals say it.
pub const MAX_SHARDS_WHY: &str =
    "at most 65536 shards: each shard is a job profiling at least one kernel, and \
     `merge` accounts for every shard, so a larger count is a mistake (a typo, or the wrong variable)";

impl FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Partition, String> {
        let bad = || format!("`{s}` is not a partition\n\n  help: {PARTITION_FORMS}");
        let (mode, rest) = s.split_once(':').ok_or_else(bad)?;
        let mode = match mode {
            "count" => PartitionMode::Count,
            "hash" => PartitionMode::Hash,
            _ => return Err(bad()),
        };
        let (i, n) = rest.split_once('/').ok_or_else(bad)?;
        // Digits only (no sign, no space), of any length: a count too large for any
        // integer is refused for its size, not as a typo.
        let digits = |t: &str| -> Option<u64> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(t.parse().unwrap_or(u64::MAX))
        };
        let (index, total) = (digits(i).ok_or_else(bad)?, digits(n).ok_or_else(bad)?);
        if index == 0 || total == 0 || index > total {
            return Err(bad());
        }
        if total > u64::from(MAX_SHARDS) {
            return Err(format!(
                "`{s}` asks for {n} shards; {MAX_SHARDS_WHY}\n\n  help: split the selection into at most \
                 {MAX_SHARDS} shards, e.g. --partition {}:{}/4",
                mode.name(),
                index.min(4)
            ));
        }
        Ok(Partition { mode, index: index as u32, total: total as u32 })
    }
}

impl fmt::Display for Partition {
    /// `count:2/4`: the spelling `--partition` takes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}/{}", self.mode.name(), self.index, self.total)
    }
}

impl Partition {
    /// Whether it is a shard kprof writes: `1 <= index <= total <= MAX_SHARDS`; else why
    /// not (a partition read back from a file, which anyone may have edited).
    pub fn check(&self) -> Result<(), String> {
        if self.index == 0 || self.index > self.total {
            Err(format!(
                "shard {} of {} is not one of its shards (1 to {})",
                self.index, self.total, self.total
            ))
        } else if self.total > MAX_SHARDS {
            Err(format!("{} shards: {MAX_SHARDS_WHY}", self.total))
        } else {
            Ok(())
        }
    }

    /// `shard 2/4 (count)`, as the notes and `index.md` say it.
    pub fn label(&self) -> String {
        format!("shard {}/{} ({})", self.index, self.total, self.mode.name())
    }

    /// Whether the kernel at `position` (0-based, in selection order) with `identity` is
    /// in this shard.
    pub fn holds(&self, position: usize, identity: &KernelIdentity<'_>) -> bool {
        let n = u64::from(self.total);
        let slot = match self.mode {
            PartitionMode::Count => position as u64 % n,
            PartitionMode::Hash => identity_hash(identity) % n,
        };
        slot + 1 == u64::from(self.index)
    }

    /// The items of this shard, in their order; `identity` names each.
    pub fn select<T>(&self, items: Vec<T>, identity: impl Fn(&T) -> KernelIdentity<'_>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(k, item)| self.holds(*k, &identity(item)))
            .map(|(_, i)| i)
            .collect()
    }
}

/// What names a kernel for `hash:` shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelIdentity<'a> {
    /// The cargo package, empty for a `command` target.
    pub package: &'a str,
    /// `bench`, `example`, `bin` or `command`.
    pub kind: &'a str,
    /// The cargo target's name (one word), or the command's words.
    pub target: Vec<&'a str>,
    /// The kernel's configured name (or hint).
    pub kernel: &'a str,
}

/// The 64-bit FNV-1a hash (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`) of
/// `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The hash `hash:` shards deal by: [`fnv1a64`] of the identity's fields in the order
/// package, kind, each target word, kernel, each as its UTF-8 bytes followed by one 0
/// byte. `("demo", "bench", ["copy"], "copy")` hashes the bytes `demo\0bench\0copy\0copy\0`.
/// No field can hold a 0 byte (names and command words are C strings), so different
/// identities hash different byte strings.
pub fn identity_hash(id: &KernelIdentity<'_>) -> u64 {
    let mut bytes = Vec::new();
    for field in [id.package, id.kind].into_iter().chain(id.target.iter().copied()).chain([id.kernel]) {
        bytes.extend_from_slice(field.as_bytes());
        bytes.push(0);
    }
    fnv1a64(&bytes)
}

/// A shard and where it came from, for the note that says which shard was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The shard.
    pub partition: Partition,
    /// `--partition`, or the variables that named it
    /// (`SLURM_ARRAY_TASK_ID=1 of --array=0-3`).
    pub origin: String,
}

impl Shard {
    /// A shard given with `--partition`.
    pub fn from_flag(partition: Partition) -> Shard {
        Shard { partition, origin: "--partition".into() }
    }

    /// `shard 2/4 (count, from SLURM_ARRAY_TASK_ID=1 of --array=0-3)`.
    pub fn describe(&self) -> String {
        let p = self.partition;
        format!("shard {}/{} ({}, from {})", p.index, p.total, p.mode.name(), self.origin)
    }
}

/// Slurm's array variables.
pub const SLURM_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
/// See [`SLURM_TASK_ID`].
pub const SLURM_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
/// See [`SLURM_TASK_ID`].
pub const SLURM_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// A Kubernetes Indexed Job's index (0-based).
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
/// The number of shards of a Kubernetes Indexed Job (its `completions`), set by the
/// manifest kprof generates.
pub const K8S_COUNT: &str = "KPROF_PARTITION_COUNT";

/// The shard a cluster engine names through the environment (`var` reads a variable):
///
/// - a Slurm job array: `count:(ID-MIN+1)/COUNT` from `SLURM_ARRAY_TASK_ID`,
///   `SLURM_ARRAY_TASK_MIN` and `SLURM_ARRAY_TASK_COUNT`, so `--array=0-3` and
///   `--array=1-4` both give shards 1..4;
/// - a Kubernetes Indexed Job: `count:(JOB_COMPLETION_INDEX+1)/KPROF_PARTITION_COUNT`.
///
/// `None` when neither names one. Values that do not make a shard (not numbers, a count
/// of 0, an index outside the array, both engines at once) are refused with exit 3,
/// naming the variables.
pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, Failure> {
    let slurm = var(SLURM_TASK_ID);
    let k8s = var(K8S_INDEX);
    let refuse = |what: String| {
        Failure::new(ExitCode::Config, what)
            .help("or pass --partition count:I/N, which wins over the environment")
    };
    let number = |name: &str, value: Option<String>| -> Result<u64, Failure> {
        let value = value.ok_or_else(|| refuse(format!("{name} is not set")))?;
        value.trim().parse::<u64>().map_err(|_| refuse(format!("{name}={value} is not a number")))
    };
    match (slurm, k8s) {
        (None, None) => Ok(None),
        (Some(id), Some(idx)) => Err(refuse(format!(
            "both {SLURM_TASK_ID}={id} (Slurm) and {K8S_INDEX}={idx} (Kubernetes) are set: which shard is this?"
        ))),
        (Some(id), None) => {
            let task = number(SLURM_TASK_ID, Some(id))?;
            let count = number(SLURM_TASK_COUNT, var(SLURM_TASK_COUNT))?;
            let min = number(SLURM_TASK_MIN, var(SLURM_TASK_MIN))?;
            let all = format!(
                "{SLURM_TASK_ID}={task}, {SLURM_TASK_MIN}={min}, {SLURM_TASK_COUNT}={count}: a shard of a job array \
                 needs MIN <= ID < MIN + COUNT and COUNT >= 1 (a contiguous --array=A-B, without a step or a list)"
            );
            if count == 0 || task < min || task - min >= count {
                return Err(refuse(all));
            }
            if count > u64::from(MAX_SHARDS) {
                return Err(refuse(format!("{SLURM_TASK_COUNT}={count}: {MAX_SHARDS_WHY}")));
            }
            let partition =
                Partition { mode: PartitionMode::Count, index: (task - min + 1) as u32, total: count as u32 };
            let origin = format!("{SLURM_TASK_ID}={task} of --array={min}-{}", min + count - 1);
            Ok(Some(Shard { partition, origin }))
        }
        (None, Some(idx)) => {
            let index = number(K8S_INDEX, Some(idx))?;
            let count = number(K8S_COUNT, var(K8S_COUNT)).map_err(|f| {
                f.help(format!("set {K8S_COUNT} to the Indexed Job's completions, as the generated manifest does"))
            })?;
            if count == 0 || index >= count {
                return Err(refuse(format!(
                    "{K8S_INDEX}={index}, {K8S_COUNT}={count}: an Indexed Job's shard needs 0 <= index < count"
                )));
            }
            if count > u64::from(MAX_SHARDS) {
                return Err(refuse(format!("{K8S_COUNT}={count}: {MAX_SHARDS_WHY}")));
            }
            let partition =
                Partition { mode: PartitionMode::Count, index: index as u32 + 1, total: count as u32 };
            Ok(Some(Shard { partition, origin: format!("{K8S_INDEX}={index} of {K8S_COUNT}={count}") }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_as_given() {
        for s in ["count:1/1", "count:2/4", "hash:3/3", "hash:10/12"] {
            assert_eq!(s.parse::<Partition>().unwrap().to_string(), s);
        }
        for bad in [
            "",
            "count",
            "count:1",
            "count:0/2",
            "count:3/2",
            "count:1/0",
            "slice:1/2",
            "count:-1/2",
            "count:+1/2",
            "Count:1/2",
            "count:1/2/3",
        ] {
            let e = bad.parse::<Partition>().unwrap_err();
            assert!(
                e.contains(&format!("`{bad}`")) && e.contains("count:I/N") && e.contains("hash:I/N"),
                "{e}"
            );
        }
    }

    #[test]
    fn shard_counts_are_bounded() {
        assert_eq!("hash:65536/65536".parse::<Partition>().unwrap().total, MAX_SHARDS);
        for big in ["count:1/65537", "count:3/4294967295", "count:1/99999999999999999999999"] {
            let e = big.parse::<Partition>().unwrap_err();
            assert!(e.contains(&format!("`{big}`")) && e.contains("at most 65536 shards"), "{e}");
        }
        let p = Partition { mode: PartitionMode::Count, index: 7, total: 2 };
        assert!(p.check().unwrap_err().contains("7 of 2"));
        let p = Partition { mode: PartitionMode::Count, index: 1, total: 20_000_000 };
        assert!(p.check().unwrap_err().contains("at most 65536"));
        let slurm = [(SLURM_TASK_ID, "0"), (SLURM_TASK_MIN, "0"), (SLURM_TASK_COUNT, "4000000000")];
        let var = |k: &str| slurm.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        let e = from_env(var).unwrap_err().to_string();
        assert!(e.contains("SLURM_ARRAY_TASK_COUNT=4000000000") && e.contains("65536"), "{e}");
    }

    #[test]
    fn fnv1a64_known_values() {
        // The published FNV-1a test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }
}
