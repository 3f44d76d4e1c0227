//! A stand-in for `sudo` that records how it was called and then behaves as sudo does:
//! with `$FAKE_SUDO_REFUSE` set it prints that file (sudo's recorded refusal) and fails;
//! otherwise it resets the environment, as a NOPASSWD rule would, and runs the command.

use std::path::{Path, PathBuf};

use super::write_script;

/// Writes the fake `sudo` into `dir` and returns its path. Its arguments go to
/// `$FAKE_SUDO_ARGV` (one per line, then `---`), what its stdin is to `$FAKE_SUDO_STDIN`.
pub fn write(dir: &Path) -> PathBuf {
    write_script(
        &dir.join("sudo"),
        r#"for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_SUDO_ARGV"; done
printf -- '---\n' >> "$FAKE_SUDO_ARGV"
readlink "/proc/$$/fd/0" >> "$FAKE_SUDO_STDIN" 2>/dev/null || echo unknown >> "$FAKE_SUDO_STDIN"
[ "$1" = -n ] || { echo "fake sudo: -n must come first" >&2; exit 99; }
shift
if [ -n "$FAKE_SUDO_REFUSE" ]; then cat "$FAKE_SUDO_REFUSE" >&2; exit 1; fi
# A NOPASSWD rule: sudo resets the environment; only PATH and the test's own files survive.
exec env -i PATH="$PATH" FAKE_NCU_ARGV="$FAKE_NCU_ARGV" FAKE_NCU_REPLAY="$FAKE_NCU_REPLAY" \
  FAKE_TARGET_ENV="$FAKE_TARGET_ENV" FAKE_NCU_SIGNALS="$FAKE_NCU_SIGNALS" "$@"
"#,
    )
}
