//! A stand-in for ncu that only replays recordings and records how it was called.
//!
//! It appends its arguments (one per line, then `---`) to `$FAKE_NCU_ARGV`, copies
//! `$FAKE_NCU_REPLAY/<file name of --log-file>` to the log file, and prints
//! `$FAKE_NCU_CONSOLE` (when set) as the profiled program's own output.

use std::path::{Path, PathBuf};

use super::write_script;

/// Writes the fake `ncu` into `dir` and returns its path.
pub fn write(dir: &Path) -> PathBuf {
    write_script(
        &dir.join("ncu"),
        r#"for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_NCU_ARGV"; done
printf -- '---\n' >> "$FAKE_NCU_ARGV"
log=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--log-file" ]; then log="$a"; fi
  prev="$a"
done
if [ -n "$log" ]; then cp "$FAKE_NCU_REPLAY/$(basename "$log")" "$log"; fi
if [ -n "${FAKE_NCU_CONSOLE:-}" ]; then cat "$FAKE_NCU_CONSOLE" >&2; fi
exit 0
"#,
    )
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
