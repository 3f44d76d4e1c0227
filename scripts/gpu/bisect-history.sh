#!/usr/bin/env bash
# Builds the bisect archive of the H200 bisect measurement from a git history it makes.
#
#   scripts/gpu/bisect-history.sh DEST [CARGO_KPROF]
#
# DEST/repo is a new git repository holding the harness and contract crates and one small
# crate, examples/fma: a compute-bound kernel, fma_chain, where each of 2^20 threads runs
# ITERS dependent FMAs, benched with kprof-harness. Its history, c0 (--good) to c10:
#
#   c1   a README                                       (no build change)
#   c2   renames a variable in the kernel              (a new build, the same work)
#   c3   the bench no longer compiles                  (skipped)
#   c4   mends it
#   c5   notes
#   c6   ITERS 4096 -> 4608: 12.5 % more dependent FMAs per thread (the planted slowdown)
#   c7   notes
#   c8   a comment line above the kernel              (a new build: its line info moves)
#   c9   notes
#   c10  notes
#
# and writes, with `cargo kprof archive --bisect c0..c10 -k fma_chain`, DEST/bisect.tar,
# with DEST/history.txt (hash and subject of each commit, oldest first) and
# DEST/archive.log (the archive's output and its wall time).
#
# Then, on the GPU machine (no cargo needed):
#   cargo-kprof kprof bisect --archive bisect.tar --workspace-remap bisect-run --clock-control none
set -euo pipefail
dest=${1:?usage: bisect-history.sh DEST [CARGO_KPROF]}
here=$(cd "$(dirname "$0")/../.." && pwd)
kprof=${2:-$here/target/release/cargo-kprof}
[ -x "$kprof" ] || { echo "no cargo-kprof at $kprof: cargo build --release first" >&2; exit 2; }
[ -e "$dest/repo" ] && { echo "$dest/repo exists: pick a new DEST" >&2; exit 2; }
mkdir -p "$dest/repo/examples/fma/kernels" "$dest/repo/examples/fma/benches" "$dest/repo/examples/fma/src"
dest=$(cd "$dest" && pwd)
repo=$dest/repo
fma=$repo/examples/fma

(cd "$here" && tar cf - --exclude=target harness contract) | (cd "$repo" && tar xf -)
printf '/examples/*/target/\n/examples/*/profile/\n/target/\n' >"$repo/.gitignore"
# The two crates inherit their package fields from this repository's workspace.
cat >"$repo/Cargo.toml" <<'EOF'
[workspace]
members = ["contract", "harness"]
exclude = ["examples/fma"]
resolver = "2"

[workspace.package]
edition = "2021"
rust-version = "1.85"
license = "MIT OR Apache-2.0"
repository = "https://github.com/cargo-kprof/cargo-kprof"
EOF
cat >"$fma/Cargo.toml" <<'EOF'
[package]
name = "fma"
version = "0.1.0"
edition = "2021"
publish = false

[dev-dependencies]
kprof-harness = { path = "../../harness" }

[[bench]]
name = "fma"
harness = false

[[package.metadata.kprof.kernels]]
name = "fma_chain"
bench = "fma"
case = "fma_chain/n=1048576"
EOF
echo '//! Nothing here: the kernel is benched.' >"$fma/src/lib.rs"
cat >"$fma/kernels/fma.cu" <<'EOF'
#define ITERS 4096

extern "C" __global__ void fma_chain(float *out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = (float)i * 1e-7f;
    for (int k = 0; k < ITERS; ++k) a = fmaf(a, 0.999f, 1e-3f);
    out[i] = a;
}
EOF
bench() {
  cat <<'EOF'
use kprof_harness::prelude::*;

fn main() {
    const N: usize = 1 << 20;
    let mut bench = Bench::new();
    bench.case("fma_chain/n=1048576", |gpu| {
        let f = gpu.compile(&cuda_source!("kernels/fma.cu"))?.function("fma_chain")?;
        let mut out = gpu.random::<f32>(N)?;
        let cfg = grid_1d(N.div_ceil(256) as u32, 256);
        Ok(move |s: &CudaStream| unsafe { s.launch_builder(&f).arg(&mut out).arg(&N).launch(cfg) })
    });
    kprof_harness::main(bench);
}
EOF
}
bench >"$fma/benches/fma.rs"
git -C "$repo" init -q -b main
git -C "$repo" config user.email kprof@example.com
git -C "$repo" config user.name kprof
git -C "$repo" config commit.gpgsign false
git -C "$repo" add -A
git -C "$repo" commit -qm "c0: fma_chain, 4096 dependent FMAs per thread"
commit() { git -C "$repo" add -A && git -C "$repo" commit -qm "$1"; }
edit() { # file, old, new: exactly one occurrence
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
assert s.count(old) == 1, (p, old)
open(p, "w").write(s.replace(old, new))
EOF
}
notes() { echo "$1" >>"$fma/NOTES.md"; commit "$2"; }

echo "# fma" >"$fma/README.md"; commit "c1: a README"
edit "$fma/kernels/fma.cu" "float a = (float)i * 1e-7f;" "float acc = (float)i * 1e-7f;"
edit "$fma/kernels/fma.cu" "a = fmaf(a, 0.999f, 1e-3f);" "acc = fmaf(acc, 0.999f, 1e-3f);"
edit "$fma/kernels/fma.cu" "out[i] = a;" "out[i] = acc;"
commit "c2: name the accumulator"
printf '\ncompile_error!("half-done refactor");\n' >>"$fma/benches/fma.rs"; commit "c3: start moving the launch (does not build)"
bench >"$fma/benches/fma.rs"; commit "c4: finish moving the launch"
notes "Measured on the H200." "c5: notes"
edit "$fma/kernels/fma.cu" "#define ITERS 4096" "#define ITERS 4608"; commit "c6: more iterations for accuracy"
notes "More iterations converge better." "c7: notes"
edit "$fma/kernels/fma.cu" 'extern "C"' '// One thread per element; each runs ITERS dependent FMAs.
extern "C"'
commit "c8: document the kernel"
notes "Next: vectorize." "c9: notes"
notes "Released." "c10: notes"
git -C "$repo" log --reverse --format='%H %s' >"$dest/history.txt"

good=$(git -C "$repo" rev-list --max-parents=0 HEAD)
began=$(date +%s.%N)
(cd "$fma" && "$kprof" kprof archive --bisect "$good..HEAD" -k fma_chain --clock-control none -o "$dest/bisect.tar") 2>&1 | tee "$dest/archive.log"
ended=$(date +%s.%N)
python3 -c 'import sys; print(f"archive --bisect wall time: {float(sys.argv[2]) - float(sys.argv[1]):.1f} s")' "$began" "$ended" | tee -a "$dest/archive.log"
