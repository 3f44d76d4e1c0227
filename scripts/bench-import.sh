#!/usr/bin/env bash
# Runs the import bench (benches/import.rs) against the cargo-kprof of another revision:
# builds REV's binary in a temporary worktree, then runs both on the same inputs,
# interleaved, and prints the ratios.
#
# usage: scripts/bench-import.sh REV        e.g. scripts/bench-import.sh HEAD~5
set -euo pipefail
rev="${1:?usage: scripts/bench-import.sh REV}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'git -C "$repo" worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$repo" worktree add --detach "$work/tree" "$rev" >/dev/null
echo "building cargo-kprof at $(git -C "$work/tree" rev-parse --short HEAD) ..." >&2
cargo build --release --quiet --manifest-path "$work/tree/Cargo.toml" --bin cargo-kprof \
  --target-dir "${KPROF_BENCH_TARGET_DIR:-$repo/target/bench-baseline}"
baseline="${KPROF_BENCH_TARGET_DIR:-$repo/target/bench-baseline}/release/cargo-kprof"
cd "$repo"
KPROF_BENCH_BASELINE="$baseline" cargo bench --bench import
