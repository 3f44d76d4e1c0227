//! Writing into a profile directory without ever leaving a half-written file.
//!
//! Every derived file is written to a temporary name in the same directory and renamed
//! into place, so a reader sees the old file or the new one, never a torn one.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    write_atomic_bytes(path, text.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename;
/// on failure the temporary file is removed and `path` is left as it was.
pub fn write_atomic_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp =
        path.with_extension(format!("{}.tmp", path.extension().and_then(|e| e.to_str()).unwrap_or("out")));
    let written = (|| {
        let mut f =
            std::fs::File::create(&tmp).with_context(|| format!("could not create {}", tmp.display()))?;
        f.write_all(bytes).with_context(|| format!("could not write {}", tmp.display()))?;
        f.sync_all().ok();
        drop(f);
        std::fs::rename(&tmp, path)
            .with_context(|| format!("could not rename {} to {}", tmp.display(), path.display()))
    })();
    if written.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    written
}

/// Like [`write_atomic_bytes`] for output too large to build in memory: `write` streams it
/// into the temporary file (buffered), which is then renamed over `path`.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let tmp =
        path.with_extension(format!("{}.tmp", path.extension().and_then(|e| e.to_str()).unwrap_or("out")));
    let written = (|| {
        let f = std::fs::File::create(&tmp).with_context(|| format!("could not create {}", tmp.display()))?;
        let mut out = std::io::BufWriter::new(f);
        write(&mut out).with_context(|| format!("could not write {}", tmp.display()))?;
        let f = out.into_inner().map_err(|e| anyhow::anyhow!("could not write {}: {e}", tmp.display()))?;
        f.sync_all().ok();
        drop(f);
        std::fs::rename(&tmp, path)
            .with_context(|| format!("could not rename {} to {}", tmp.display(), path.display()))
    })();
    if written.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    written
}

/// Creates `path`, which must not exist, with `text`; a `.sh` file is made executable.
pub fn write_new(path: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("could not create {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("could not write {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if path.extension().is_some_and(|e| e == "sh") {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// Appends `text` to the existing file `path`.
pub fn append(path: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("could not open {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("could not write {}", path.display()))
}

/// Reads a JSON file as `T`: `Ok(None)` when it does not exist, an error naming the file
/// when it cannot be read or is not what it should be.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            Ok(Some(serde_json::from_str(&text).with_context(|| format!("invalid {}", path.display()))?))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("could not read {}", path.display()))),
    }
}

/// The largest raw page read by default, in MiB (`--max-input-mb` raises it). The analysis
/// keeps only the metrics it reads, so memory grows with launches, not with columns; the
/// limit keeps a mistaken input (a whole report's worth of launches) from taking minutes.
pub const DEFAULT_MAX_INPUT_MB: u64 = 512;

/// Refuses a file over `max_mb` MiB with a message that names it and says how to go on.
pub fn check_size(path: &Path, shown: &str, max_mb: u64) -> Result<(), crate::error::Failure> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > max_mb << 20 {
        let mb = size.div_ceil(1 << 20);
        return Err(crate::error::Failure::new(
            crate::error::ExitCode::Config,
            format!("{shown} is {mb} MiB, over the input limit of {max_mb} MiB"),
        )
        .help(format!("raise the limit with --max-input-mb {}", mb + 1))
        .help(
            "or print less from the report: fewer launches with `ncu -i REPORT --csv --page raw \
             --kernel-name regex:NAME` (or --kernel-id), fewer metrics with --metrics",
        ));
    }
    Ok(())
}
