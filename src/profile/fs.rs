//! Writing into a profile directory without ever leaving a half-written file.
//!
//! Every derived file is written to a temporary name in the same directory and renamed
//! into place, so a reader sees the old file or the new one, never a torn one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    write_atomic_bytes(path, text.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename;
/// on failure the temporary file is removed and `path` is left as it was.
///
/// The temporary name is unique to this process and call (`.<name>.<pid>.<n>.tmp`) and
/// created with `create_new`, so concurrent writers (two runs rewriting the profiles index)
/// never write into each other's file, and nothing that already exists is opened.
pub fn write_atomic_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |out| Ok(out.write_all(bytes)?))
}

/// Like [`write_atomic_bytes`] for output too large to build in memory: `write` streams it
/// into the temporary file (buffered), which is then renamed over `path`.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let tmp = written_temporary(path, write)?;
    let renamed = std::fs::rename(&tmp, path)
        .with_context(|| format!("could not rename {} to {}", tmp.display(), path.display()));
    if renamed.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    renamed
}

/// Writes `bytes` to `path`, which must not exist, whole or not at all: through a temporary
/// file in the same directory, linked into place (which fails when `path` exists, even
/// when it appeared meanwhile). `Ok(false)`: `path` exists, and was left as it was.
pub fn write_atomic_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    let tmp = written_temporary(path, |out| Ok(out.write_all(bytes)?))?;
    let placed = match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        // A file system without hard links: the rename, after a last look.
        Err(_) if path.symlink_metadata().is_ok() => Ok(false),
        Err(_) => std::fs::rename(&tmp, path)
            .map(|()| true)
            .with_context(|| format!("could not rename {} to {}", tmp.display(), path.display())),
    };
    std::fs::remove_file(&tmp).ok();
    placed
}

/// A temporary file beside `path` (see [`create_temporary`]) holding what `write` wrote,
/// synced; removed again when writing fails. A failure that is not already a
/// [`Failure`](crate::error::Failure) is one of writing `path` (a full disk, a file-size
/// limit; the CSV writer hides its I/O errors, and a buffer flushed at the end reports
/// its own): exit 12, naming `path`.
fn written_temporary(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<PathBuf> {
    let (tmp, f) = create_temporary(path)?;
    let written = (|| -> Result<()> {
        let mut out = std::io::BufWriter::new(f);
        write(&mut out)?;
        let f = out.into_inner().map_err(|e| anyhow::Error::new(e.into_error()))?;
        f.sync_all().ok();
        Ok(())
    })();
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            std::fs::remove_file(&tmp).ok();
            if e.chain().any(|c| c.is::<crate::error::Failure>()) {
                return Err(e);
            }
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Err(crate::error::Failure::new(
                crate::error::ExitCode::Filesystem,
                format!("could not write {}: {e:#}", path.display()),
            )
            .help(format!(
                "free space on the file system of {} (or raise its quota), then run again",
                dir.display()
            ))
            .into())
        }
    }
}

/// A new file beside `path` under a name no other writer uses.
fn create_temporary(path: &Path) -> Result<(PathBuf, std::fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let dir = path.parent().unwrap_or(Path::new(""));
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            // Left by a process that had our pid before, or taken by someone else: next.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("could not create {}", tmp.display())))
            }
        }
    }
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

/// Refuses `sub`, a folder of a profile directory that kprof writes in (`details/`,
/// `visual/`, `comparison/`), when it is a symbolic link: a profile from an artifact or a
/// tarball may point it anywhere, and a report writes only inside its profile (exit 3).
pub fn refuse_linked_folder(sub: &Path) -> Result<(), crate::error::Failure> {
    let linked = std::fs::symlink_metadata(sub).is_ok_and(|m| m.file_type().is_symlink());
    if !linked {
        return Ok(());
    }
    Err(crate::error::Failure::new(
        crate::error::ExitCode::Config,
        format!("{} is a symbolic link: cargo kprof writes only inside the profile directory", sub.display()),
    )
    .help("replace the link with a folder holding the files it points to (cp -rL), then run again"))
}

/// Opens `path` for reading when it is a regular file (links followed); `Ok(Err(what))`
/// names what else it is (`a pipe`, `a character device`, ...). It never waits: a named
/// pipe nobody writes is opened without blocking, then refused; what is opened is the
/// file checked, not a path looked at before.
pub fn open_regular(path: &Path) -> std::io::Result<Result<std::fs::File, &'static str>> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let kind = file.metadata()?.file_type();
    let what = if kind.is_file() {
        return Ok(Ok(file));
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a pipe"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Ok(Err(what))
}

/// The largest JSON document kprof reads back (an index, a summary, a comparison): far
/// above what it writes, far below what would take the machine's memory.
pub const MAX_JSON_BYTES: u64 = 256 << 20;

/// Reads a JSON file as `T`: `Ok(None)` when it does not exist, an error naming the file
/// when it cannot be read or is not what it should be. Only a regular file is read, and at
/// most [`MAX_JSON_BYTES`] of it (exit 3 otherwise): a profile root or a profile from an
/// artifact may hold a pipe, a device or a link to one in a document's place.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    use std::io::Read;
    if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(None);
    }
    let shown = path.display().to_string();
    let file = open_input(path, &shown)?;
    let mut text = String::new();
    file.take(MAX_JSON_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("could not read {shown}"))?;
    if text.len() as u64 > MAX_JSON_BYTES {
        return Err(crate::error::Failure::new(
            crate::error::ExitCode::Config,
            format!("{shown} is larger than {} MiB: not a document cargo kprof wrote", MAX_JSON_BYTES >> 20),
        )
        .help("replace it with the file kprof wrote, or remove it")
        .into());
    }
    let doc = serde_json::from_str(&text).map_err(|e| {
        crate::error::Failure::new(crate::error::ExitCode::Filesystem, format!("{shown} is damaged: {e}"))
            .help("it is a file cargo kprof writes: restore it, or run the step that writes it again")
    })?;
    Ok(Some(doc))
}

/// The largest raw page read by default, in MiB (`--max-input-mb` raises it). The analysis
/// keeps only the metrics it reads, so memory grows with launches, not with columns; the
/// limit keeps a mistaken input (a whole report's worth of launches) from taking minutes.
pub const DEFAULT_MAX_INPUT_MB: u64 = 512;

/// Opens an input for reading: a file named on the command line (an export, `--rules`,
/// `--template`) or a page of a profile, shown in messages as `shown`. Anything but a
/// regular file is refused (exit 3): a pipe or a device has no size to check against the
/// input limit (`/dev/zero` never ends) and a named pipe nobody writes would wait forever;
/// it is opened without waiting, and what is read is the file checked. A file that cannot
/// be opened is exit 12.
pub fn open_input(path: &Path, shown: &str) -> Result<std::fs::File, crate::error::Failure> {
    use crate::error::{ExitCode, Failure};
    match open_regular(path) {
        Ok(Ok(file)) => Ok(file),
        Ok(Err(what)) => Err(Failure::new(
            ExitCode::Config,
            format!(
                "{shown} is not a regular file ({what}): only a file's size can be checked before it is read"
            ),
        )
        .help("pass the file itself; save what a pipe or a device gives to a file first")),
        Err(e) => Err(Failure::new(ExitCode::Filesystem, format!("could not read {shown}: {e}"))
            .help("check the path: it must name a readable file")),
    }
}

/// Opens an ncu page named on the command line for reading, shown in messages as `shown`:
/// as it is, or unpacked as it is read when it starts with gzip's magic bytes (large
/// exports are often kept as `page.csv.gz`). Either way what it gives is capped at
/// `max_mb` MiB: a plain file's size is checked before it is read ([`check_size`]), and
/// an unpacked stream fails when it passes the limit, naming the file and the option.
pub fn open_page(
    path: &Path,
    shown: &str,
    max_mb: u64,
) -> Result<Box<dyn std::io::BufRead>, crate::error::Failure> {
    use std::io::BufRead;
    let file = open_input(path, shown)?;
    let mut reader = std::io::BufReader::new(file);
    let gzip = reader
        .fill_buf()
        .map_err(|e| {
            crate::error::Failure::new(
                crate::error::ExitCode::Filesystem,
                format!("could not read {shown}: {e}"),
            )
        })?
        .starts_with(&[0x1f, 0x8b]);
    if !gzip {
        check_size(reader.get_ref(), shown, max_mb)?;
        return Ok(Box::new(reader));
    }
    let unpacked = Capped {
        inner: flate2::bufread::MultiGzDecoder::new(reader),
        left: max_mb << 20,
        shown: shown.to_string(),
        max_mb,
    };
    Ok(Box::new(std::io::BufReader::new(unpacked)))
}

/// A reader that fails once it has given `left` bytes and there are more: the input limit
/// applied to what a compressed page unpacks to.
struct Capped<R> {
    inner: R,
    left: u64,
    shown: String,
    max_mb: u64,
}

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            return Err(std::io::Error::other(format!(
                "{} unpacks to more than the input limit of {} MiB (raise it with --max-input-mb)",
                self.shown, self.max_mb
            )));
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Refuses a file over `max_mb` MiB with a message that names it and says how to go on.
pub fn check_size(file: &std::fs::File, shown: &str, max_mb: u64) -> Result<(), crate::error::Failure> {
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
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

/// The files under `dir` (relative paths) with their [`FileStamp`]s: compared with
/// a later [`modified_since`], what a command wrote there.
pub fn file_times(dir: &Path) -> std::collections::BTreeMap<PathBuf, FileStamp> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else if let Ok(rel) = e.path().strip_prefix(dir) {
                out.insert(rel.to_path_buf(), FileStamp::of(&meta));
            }
        }
    }
    out
}

/// What tells a rewritten file from an untouched one. Every write here renames a new
/// temporary file into place, so on Unix the inode changes even when the clock's tick is
/// coarser than the time between two writes; the modification time covers the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        FileStamp { modified: meta.modified().ok(), inode }
    }
}

/// The files under `dir` written or created since `before` was taken ([`file_times`]),
/// in path order.
pub fn modified_since(dir: &Path, before: &std::collections::BTreeMap<PathBuf, FileStamp>) -> Vec<PathBuf> {
    file_times(dir).into_iter().filter(|(p, t)| before.get(p) != Some(t)).map(|(p, _)| p).collect()
}

/// Copies the directory `from` to `to`, which must not exist yet: every directory and
/// file is created new, so nothing that exists is ever written over. A symbolic link in
/// `from` is refused (exit 12), naming it: a copy would follow it out of the profile.
pub fn copy_tree_new(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir(to).with_context(|| format!("could not create {}", to.display()))?;
    let entries = std::fs::read_dir(from).with_context(|| format!("could not read {}", from.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("could not read {}", from.display()))?;
        let (src, dest) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().with_context(|| format!("could not read {}", src.display()))?;
        if kind.is_dir() {
            copy_tree_new(&src, &dest)?;
        } else if kind.is_file() {
            let mut input =
                std::fs::File::open(&src).with_context(|| format!("could not read {}", src.display()))?;
            let mut output = std::fs::File::create_new(&dest)
                .with_context(|| format!("could not create {}", dest.display()))?;
            std::io::copy(&mut input, &mut output)
                .with_context(|| format!("could not copy {} to {}", src.display(), dest.display()))?;
        } else {
            return Err(crate::error::Failure::new(
                crate::error::ExitCode::Filesystem,
                format!(
                    "{} is a symbolic link or special file: not copied out of its profile",
                    src.display()
                ),
            )
            .help("replace it with the file it points to, or remove it, then merge again")
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_written_whole_and_an_existing_one_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("bmf.json");
        assert!(write_atomic_new(&path, b"{}").unwrap());
        assert!(!write_atomic_new(&path, b"[]").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["bmf.json"], "no temporary file is left behind");
    }

    #[test]
    fn concurrent_writers_never_share_a_temporary_name() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("index.json");
        let writers: Vec<_> = (0..8)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..40 {
                        write_atomic(&path, &format!("writer {t} write {i}\n")).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("every write succeeds");
        }
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.starts_with("writer ") && last.ends_with('\n'), "{last:?}");
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["index.json"], "no temporary file is left behind");
    }

    #[test]
    fn a_taken_temporary_name_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("index.json");
        // What another writer (or the user) holds under the old fixed temporary name.
        std::fs::create_dir(tmp.path().join("index.json.tmp")).unwrap();
        std::fs::write(tmp.path().join("index.json.tmp/theirs"), "x").unwrap();
        write_atomic(&path, "mine\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine\n");
        assert_eq!(std::fs::read_to_string(tmp.path().join("index.json.tmp/theirs")).unwrap(), "x");
    }
}
