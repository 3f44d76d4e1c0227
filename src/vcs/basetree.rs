//! kprof's worktree of an A/B check's base, as it is on disk: whether a tree is there,
//! complete, unchanged and at which commit; and the temporary trees a stopped kprof left
//! beside it.
//!
//! A tree is made under a temporary name and moved into place once git's checkout is
//! done, and kprof writes `kprof-state` into the tree's own git directory
//! (`.git/worktrees/<name>/`, never into the tree): `complete` once it holds its commit,
//! `moving` while kprof checks another commit out in it. A tree that is not `complete` was
//! left unfinished by kprof and is made again; a complete one that differs from its commit
//! holds someone's edits and is refused.

use std::path::{Path, PathBuf};

use super::git::{self, GitError};
use crate::error::{ExitCode, Failure};

/// The base's build folder inside the tree (`<tree>/target`): kprof's own, never an edit.
pub const BUILD_DIR: &str = "target";
/// The state file in the tree's git directory.
const STATE: &str = "kprof-state";
/// The tree holds its commit, as git checked it out.
pub const COMPLETE: &str = "complete";
/// kprof is checking another commit out in the tree.
pub const MOVING: &str = "moving";
/// How many edited files a refusal names.
const NAMED: usize = 5;

/// A worktree of the repository that git has on record (`git worktree list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Its folder.
    pub path: PathBuf,
    /// Locked: by `git worktree add` while it runs (left so when it was stopped), or by hand.
    pub locked: bool,
    /// git would prune the record: the folder or its `.git` link is gone.
    pub prunable: bool,
}

/// What is at the tree's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Nothing, or an empty folder: the tree is made there.
    Nothing,
    /// git has the tree on record but its folder is gone (`cargo clean`).
    Deleted,
    /// A tree kprof began and did not finish; why it is known to be unfinished.
    Incomplete(String),
    /// A folder that is no worktree of the repository.
    Foreign,
    /// A complete tree that holds edits: the paths git reports.
    Edited(Vec<String>),
    /// The tree, unchanged, at this commit; `marked` when its state file says `complete`.
    Ready {
        /// Its `HEAD`.
        head: String,
        /// Whether the state file is written (trees made before it was are not).
        marked: bool,
    },
}

/// The worktrees git has on record for `repo`.
pub fn registered(repo: &Path) -> Result<Vec<Registered>, Failure> {
    let listed = git::git(repo, &["worktree", "list", "--porcelain"])
        .map_err(|e| e.failure(ExitCode::Config, "git worktree list"))?;
    let mut trees = Vec::new();
    for line in listed.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            trees.push(Registered { path: PathBuf::from(path), locked: false, prunable: false });
        } else if let Some(last) = trees.last_mut() {
            last.locked |= line == "locked" || line.starts_with("locked ");
            last.prunable |= line == "prunable" || line.starts_with("prunable ");
        }
    }
    Ok(trees)
}

/// `p` with its symbolic links resolved as far as it exists: two spellings of one place
/// compare equal, whether the place exists or not.
fn resolved(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = p;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |acc, name| acc.join(name));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// Whether `a` and `b` name the same place.
pub fn same_place(a: &Path, b: &Path) -> bool {
    resolved(a) == resolved(b)
}

/// The tree's own git directory (`.git/worktrees/<name>`).
fn git_dir(tree: &Path) -> Result<PathBuf, GitError> {
    git::git(tree, &["rev-parse", "--absolute-git-dir"]).map(PathBuf::from)
}

/// Writes the tree's state (`complete` or `moving`).
pub fn write_state(tree: &Path, state: &str) -> Result<(), Failure> {
    let dir = git_dir(tree).map_err(|e| e.failure(ExitCode::Config, "git rev-parse --absolute-git-dir"))?;
    let file = dir.join(STATE);
    std::fs::write(&file, format!("{state}\n"))
        .map_err(|e| Failure::new(ExitCode::Filesystem, format!("could not write {}: {e}", file.display())))
}

/// What is at `dir`, kprof's place for its worktree of `repo`; `trees` is git's record.
pub fn inspect(dir: &Path, trees: &[Registered]) -> Result<Found, Failure> {
    let own = trees.iter().find(|t| same_place(&t.path, dir));
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(if own.is_some() { Found::Deleted } else { Found::Nothing });
    }
    let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false);
    let Some(own) = own.filter(|t| !t.prunable) else {
        // No record, or one whose `.git` link is gone: git run there would act on the
        // repository around the folder. An empty folder is as good as none.
        return Ok(match (empty, own) {
            (true, Some(_)) => Found::Deleted,
            (true, None) => Found::Nothing,
            (false, _) => Found::Foreign,
        });
    };
    let at_place =
        git::git(dir, &["rev-parse", "--show-toplevel"]).is_ok_and(|top| same_place(Path::new(&top), dir));
    let (Ok(gitdir), true) = (git_dir(dir), at_place) else {
        return Ok(Found::Incomplete("its .git link does not lead to it".into()));
    };
    let Ok(head) = git::git(dir, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]) else {
        return Ok(Found::Incomplete("its HEAD cannot be read".into()));
    };
    let state = std::fs::read_to_string(gitdir.join(STATE)).unwrap_or_default();
    let marked = state.trim() == COMPLETE;
    if state.trim() == MOVING {
        return Ok(Found::Incomplete("kprof was stopped while it checked another commit out there".into()));
    }
    if !marked && own.locked {
        return Ok(Found::Incomplete("git was stopped while it made it (it is still locked)".into()));
    }
    if !marked && !gitdir.join("index").is_file() {
        return Ok(Found::Incomplete("it has no index: git's checkout never finished".into()));
    }
    let changes = changes(dir)?;
    if changes.is_empty() {
        return Ok(Found::Ready { head, marked });
    }
    if !marked && changes.iter().all(|(xy, _)| xy.chars().all(|c| c == 'D' || c == ' ')) {
        return Ok(Found::Incomplete("files are missing: git's checkout never finished".into()));
    }
    Ok(Found::Edited(changes.into_iter().map(|(_, path)| path).collect()))
}

/// `git status` of the tree: (`XY`, path) for each change, kprof's build folder and the
/// `Cargo.lock` files cargo writes when it builds the base left out.
fn changes(tree: &Path) -> Result<Vec<(String, String)>, Failure> {
    let exclude_build = format!(":(exclude,top){BUILD_DIR}");
    let args = [
        "status",
        "--porcelain=v1",
        "-z",
        "--no-renames",
        "--untracked-files=normal",
        "--",
        ".",
        exclude_build.as_str(),
        ":(exclude,glob)**/Cargo.lock",
    ];
    let out = git::output(tree, &args).map_err(|e| e.failure(ExitCode::Config, "git status"))?;
    Ok(out
        .split('\0')
        .filter_map(|r| Some((r.get(..2)?.to_string(), crate::process::shell_comment(r.get(3..)?))))
        .filter(|(_, path)| !path.is_empty())
        .collect())
}

/// The refusal of a tree that holds edits, naming a few.
pub fn edited(dir: &Path, paths: &[String]) -> Failure {
    let mut named = paths.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > NAMED {
        named.push_str(&format!(" and {} more", paths.len() - NAMED));
    }
    Failure::new(
        ExitCode::Config,
        format!(
            "the base worktree {} holds edits: {named}; kprof builds the base only as git checks it out",
            dir.display()
        ),
    )
    .help(format!(
        "commit or discard them in {0} (`git -C {0} status` lists them; commit on a branch, as kprof \
         checks other commits out there later), or delete that folder: kprof makes it again",
        dir.display()
    ))
}

/// Where a new tree for `dir` is made: `<name>.tmp-<pid>` beside it.
pub fn temporary(dir: &Path) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.with_file_name(format!("{name}.tmp-{}", std::process::id()))
}

/// The process that made `path`, when `path` is one of kprof's temporary trees for `dir`.
fn maker(path: &Path, dir: &Path) -> Option<u32> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let file = path.file_name()?.to_string_lossy().into_owned();
    let pid = file.strip_prefix(&name)?.strip_prefix(".tmp-")?;
    let same_folder = path.parent().zip(dir.parent()).is_some_and(|(a, b)| same_place(a, b));
    pid.parse().ok().filter(|_| same_folder)
}

/// Whether the process `pid` runs (a process with this one's id is this one: any tree it
/// made was made by another, earlier process).
fn running(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
        // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    true
}

/// Removes the temporary trees for `dir` that a kprof no longer running left: those on
/// git's record with `git worktree remove --force --force` (a stopped `worktree add`
/// leaves its tree locked), then any folder of that name git has no record of.
pub fn remove_leftovers(repo: &Path, dir: &Path, trees: &[Registered]) -> Result<(), Failure> {
    for t in trees {
        if maker(&t.path, dir).is_some_and(|pid| !running(pid)) && t.path.exists() {
            remove(repo, &t.path)?;
        }
    }
    let Some(folder) = dir.parent() else { return Ok(()) };
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = entry.path();
        let on_record = trees.iter().any(|t| same_place(&t.path, &path));
        if !on_record && maker(&path, dir).is_some_and(|pid| !running(pid)) {
            std::fs::remove_dir_all(&path).map_err(|e| {
                Failure::new(ExitCode::Filesystem, format!("could not remove {}: {e}", path.display()))
            })?;
        }
    }
    Ok(())
}

/// `git worktree remove --force --force tree`: for kprof's own trees only, unfinished.
pub fn remove(repo: &Path, tree: &Path) -> Result<(), Failure> {
    let path = tree.to_string_lossy();
    git::git(repo, &["worktree", "remove", "--force", "--force", &path]).map(|_| ()).map_err(|e| {
        e.failure(ExitCode::Config, format!("git worktree remove {path}"))
            .help(format!("kprof left {path} unfinished: delete that folder, then `git worktree prune`"))
    })
}
