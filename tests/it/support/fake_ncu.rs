//! A stand-in for ncu that only replays recordings and records how it was called.
//!
//! It appends its arguments (one per line, then `---`) to `$FAKE_NCU_ARGV`, copies
//! `$FAKE_NCU_REPLAY/<file name of --log-file>` to the log file (or, for the K-th call
//! that writes a page of that name, `$FAKE_NCU_REPLAY/nth-K/<file name>`, else for the
//! N-th call that writes a page, `$FAKE_NCU_REPLAY/call-N/<file name>`, when it exists: a
//! run that writes the same page twice), and prints
//! `$FAKE_NCU_CONSOLE` (when set) as the profiled program's own output. With
//! `$FAKE_NCU_VERSION_EXIT` set, `--version` fails with that code.

use std::path::{Path, PathBuf};

use super::write_script;

/// Writes the fake `ncu` into `dir` and returns its path.
pub fn write(dir: &Path) -> PathBuf {
    write_script(
        &dir.join("ncu"),
        r#"for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_NCU_ARGV"; done
printf -- '---\n' >> "$FAKE_NCU_ARGV"
if [ "$1" = --version ] && [ -n "${FAKE_NCU_VERSION_EXIT:-}" ]; then
  echo "ncu: no license" >&2; exit "$FAKE_NCU_VERSION_EXIT"
fi
log=""; prev=""; kn=""
for a in "$@"; do
  if [ "$prev" = "--log-file" ]; then log="$a"; fi
  if [ "$prev" = "--kernel-name" ]; then kn="$a"; fi
  prev="$a"
done
if [ -n "$log" ]; then
  n=$(( $(cat "$FAKE_NCU_ARGV.pages" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$FAKE_NCU_ARGV.pages"
  name=$(basename "$log")
  k=$(( $(cat "$FAKE_NCU_ARGV.$name.n" 2>/dev/null || echo 0) + 1 ))
  echo "$k" > "$FAKE_NCU_ARGV.$name.n"
  by_filter="$FAKE_NCU_REPLAY/by-filter/$(printf '%s' "$kn" | tr -c 'A-Za-z0-9' '_')/$(basename "$log")"
  if [ -e "$FAKE_NCU_REPLAY/nth-$k/$name" ]; then
    cp "$FAKE_NCU_REPLAY/nth-$k/$name" "$log"
  elif [ -e "$FAKE_NCU_REPLAY/call-$n/$(basename "$log")" ]; then
    cp "$FAKE_NCU_REPLAY/call-$n/$(basename "$log")" "$log"
  elif [ -n "$kn" ] && [ -e "$by_filter" ]; then
    cp "$by_filter" "$log"
  else
    cp "$FAKE_NCU_REPLAY/$(basename "$log")" "$log"
  fi
fi
if [ -n "${FAKE_NCU_CONSOLE:-}" ]; then cat "$FAKE_NCU_CONSOLE" >&2; fi
exit 0
"#,
    )
}

/// The folder name under `$FAKE_NCU_REPLAY/by-filter/` for the `--kernel-name` value `filter`.
pub fn filter_key(filter: &str) -> String {
    filter.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Each recorded call of a fake tool, from its argv file: its arguments.
pub fn calls(argv_file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(argv_file)
        .unwrap_or_default()
        .split("---\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.lines().map(String::from).collect())
        .collect()
}

/// Writes a fake `ncu` that misbehaves as `$FAKE_NCU_MODE` says, and returns its path.
/// `--version` always answers. Each process it is made of appends its pid to
/// `$FAKE_NCU_PIDS`, so a test can check that none survives.
///
/// - `block`: like ncu running a program: the ncu process starts a child (the "program")
///   in its process group; the child touches `$FAKE_NCU_STARTED` and blocks opening the
///   fifo `$FAKE_NCU_FIFO` until someone opens it for writing or kills it.
/// - `block-alone`: the ncu process itself touches the file and blocks, with no child.
/// - `no-file`, `empty-file`, `garbage`: exit 0 having written no `--log-file`, an empty
///   one, or one that is not a CSV page (with terminal escape sequences in it).
/// - `killed`: kills itself with SIGKILL, as the OOM killer would.
/// - `escapes`: prints terminal escape sequences and a 100 KB word, then exits 1, as a
///   program that fails under ncu.
pub fn write_misbehaving(dir: &Path) -> PathBuf {
    write_script(
        &dir.join("ncu"),
        r#"if [ "$1" = --version ]; then echo "Version 2025.3.1.0 (fake)"; exit 0; fi
echo $$ >> "$FAKE_NCU_PIDS"
log=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--log-file" ]; then log="$a"; fi
  prev="$a"
done
case "$FAKE_NCU_MODE" in
  block)
    sh -c 'echo $$ >> "$FAKE_NCU_PIDS"; touch "$FAKE_NCU_STARTED"; read x < "$FAKE_NCU_FIFO"' &
    wait ;;
  block-alone)
    touch "$FAKE_NCU_STARTED"; read x < "$FAKE_NCU_FIFO" ;;
  no-file) ;;
  empty-file) : > "$log" ;;
  garbage) printf 'not a page \033[31mred\033[0m\n\033]0;title\007\n' > "$log" ;;
  killed) kill -9 $$ ;;
  escapes)
    printf 'program says \033[2J\033]0;pwned\007 boom\r\n' >&2
    head -c 100000 /dev/zero | tr '\0' 'w' >&2
    exit 1 ;;
esac
exit 0
"#,
    )
}
