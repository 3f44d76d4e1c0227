#!/usr/bin/env bash
# Builds the A/B archives of #16's measurements from a small git history it makes.
#
#   scripts/gpu/ab-history.sh DEST [CARGO_KPROF]
#
# DEST/repo is a new git repository holding a copy of the demo workspace with the harness
# and contract crates it builds against (the same layout as this repository), committed
# as `base`. From `base` it makes three one-commit branches, each changing one kernel:
#
#   bank    hgemm_tiled stores and reads its B tile transposed: 32-way shared-memory bank
#           conflicts on every read of the inner loop (a large slowdown)
#   slow3   hgemm_tiled runs its tile loop 4 tiles past k (zeros: 132 tiles for 128, about
#           3 % more inner-loop work with the same code and registers, a small real slowdown)
#   insts   copy_kernel does 16 integer multiply-adds per element that change nothing: more
#           instructions, hidden behind DRAM, so the time should not move
#   pyslow  the Triton softmax of examples/python (a `python-triton` command target, timed by
#           ncu rounds, not by the harness) also loads the row half the matrix away and adds
#           0.0 times it: the result is the same, DRAM reads double (256 MiB more per
#           launch, far beyond L2), so a DRAM-bound kernel should run about 50 % slower
#
# and writes, with `cargo kprof archive --base`:
#
#   DEST/ab-aa.tar     base against itself (hgemm_tiled): the A/A check
#   DEST/ab-bank.tar   bank against base (hgemm_tiled)
#   DEST/ab-slow3.tar  slow3 against base (hgemm_tiled)
#   DEST/ab-insts.tar  insts against base (copy)
#   DEST/ab-py-aa.tar  base against itself (triton_softmax): an A/A check by ncu rounds
#   DEST/ab-py-slow.tar  pyslow against base (triton_softmax)
#
# Then, on the GPU machine (no cargo needed), for example:
#   cargo-kprof kprof check --archive ab-bank.tar --workspace-remap bank
# The CPU-side build time of each archive is printed and kept in DEST/build-times.txt.
set -euo pipefail
dest=${1:?usage: ab-history.sh DEST [CARGO_KPROF]}
here=$(cd "$(dirname "$0")/../.." && pwd)
kprof=${2:-$here/target/release/cargo-kprof}
[ -x "$kprof" ] || { echo "no cargo-kprof at $kprof: cargo build --release first" >&2; exit 2; }
[ -e "$dest/repo" ] && { echo "$dest/repo exists: pick a new DEST" >&2; exit 2; }
mkdir -p "$dest/repo/examples"
dest=$(cd "$dest" && pwd)
repo=$dest/repo

# The demo and the two crates it builds against; no build output, no profiles.
(cd "$here" && tar cf - --exclude=target --exclude=profile examples/demo examples/python harness contract) | (cd "$repo" && tar xf -)
printf '/examples/*/target/\n/examples/*/profile/\n' >"$repo/.gitignore"
# The two crates inherit their package fields from this repository's workspace.
cat >"$repo/Cargo.toml" <<'EOF'
[workspace]
members = ["contract", "harness"]
exclude = ["examples/demo", "examples/python"]
resolver = "2"

[workspace.package]
edition = "2021"
rust-version = "1.85"
license = "MIT OR Apache-2.0"
repository = "https://github.com/cargo-kprof/cargo-kprof"
EOF
git -C "$repo" init -q -b main
git -C "$repo" config user.email kprof@example.com
git -C "$repo" config user.name kprof
git -C "$repo" config commit.gpgsign false
git -C "$repo" add -A
git -C "$repo" commit -qm base

kernels=$repo/examples/demo/kernels
branch() { # name, message; the change is made by the caller before
  git -C "$repo" checkout -q -b "$1" main
}
commit() {
  git -C "$repo" commit -qam "$1"
  git -C "$repo" checkout -q main
}

branch bank
python3 - "$kernels/hgemm.cu" <<'EOF'
import sys
p = sys.argv[1]; s = open(p).read()
old_store = "Bs[ty][tx] = (t + ty < k && col < n)"
old_read = "acc += As[ty][i] * Bs[i][tx];"
assert old_store in s and old_read in s
s = s.replace(old_store, "Bs[tx][ty] = (t + ty < k && col < n)")
s = s.replace(old_read, "acc += As[ty][i] * Bs[tx][i];")
open(p, "w").write(s)
EOF
commit "hgemm_tiled: keep the B tile transposed (bank conflicts on every inner-loop read)"

branch slow3
python3 - "$kernels/hgemm.cu" <<'EOF'
import sys
p = sys.argv[1]; s = open(p).read()
old = "    for (int t = 0; t < k; t += TILE) {"
assert s.count(old) == 1
# Tiles past k load as zeros (the loads' own bounds checks), so C is unchanged; the
# same code and registers run 132 tiles instead of 128.
s = s.replace(old, "    for (int t = 0; t < k + 4 * TILE; t += TILE) {")
open(p, "w").write(s)
EOF
commit "hgemm_tiled: four zero tiles past k (about 3 % more inner-loop work)"

branch insts
python3 - "$kernels/copy.cu" <<'EOF'
import sys
p = sys.argv[1]; s = open(p).read()
old = "        dst[i] = src[i];"
assert old in s
# 16 steps of a 32-bit LCG from the index. The one index < 2^32 whose 16th step is
# 0x9e3779b9 is 3084670761, far beyond the 2^26 elements copied: nothing changes.
new = """        float4 v = src[i];
        unsigned h = (unsigned)i;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            h = h * 1664525u + 1013904223u;
        }
        if ((h ^ (unsigned)(i >> 40)) == 0x9e3779b9u) {
            v.x += 1.0f;
        }
        dst[i] = v;"""
s = s.replace(old, new)
open(p, "w").write(s)
EOF
commit "copy: 16 integer multiply-adds per element that change nothing"

branch pyslow
python3 - "$repo/examples/python/triton_softmax.py" <<'EOF'
import sys
p = sys.argv[1]; s = open(p).read()
old = "    shifted = x - tl.max(x, axis=0)"
assert old in s
# The row n_rows / 2 away: far apart in time, so it comes from DRAM, not L2. Its values
# are finite (randn), and 0.0 * finite is 0.0, so the result is unchanged; the compiler
# may not drop an IEEE multiply by zero.
new = """    far = (row + tl.num_programs(0) // 2) % tl.num_programs(0)
    x2 = tl.load(in_ptr + far * in_row_stride + cols, mask=mask, other=0.0)
    shifted = x - tl.max(x, axis=0) + 0.0 * x2"""
s = s.replace(old, new)
open(p, "w").write(s)
EOF
commit "triton_softmax: also load the row half the matrix away (DRAM reads double)"

manifest=$repo/examples/demo/Cargo.toml
times=$dest/build-times.txt
: >"$times"
archive() { # branch, base, kernel, out [manifest]
  git -C "$repo" checkout -q "$1"
  local t0 t1 m=${5:-$manifest}
  t0=$(date +%s.%N)
  (cd "$(dirname "$m")" && "$kprof" kprof archive --manifest-path "$m" --base "$2" \
    --kernel "$3" --clock-control none -o "$4")
  t1=$(date +%s.%N)
  echo "$(basename "$4"): $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s (both sides built with line info)" | tee -a "$times"
}
archive main HEAD hgemm_tiled "$dest/ab-aa.tar"
archive bank main hgemm_tiled "$dest/ab-bank.tar"
archive slow3 main hgemm_tiled "$dest/ab-slow3.tar"
archive insts main copy "$dest/ab-insts.tar"
py=$repo/examples/python/Cargo.toml
archive main HEAD triton_softmax "$dest/ab-py-aa.tar" "$py"
archive pyslow main triton_softmax "$dest/ab-py-slow.tar" "$py"
git -C "$repo" checkout -q main
git -C "$repo" log --oneline --all >"$dest/history.txt"
echo "archives in $dest"
