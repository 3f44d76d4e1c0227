#!/usr/bin/env bash
# A new user's crate, from nothing to a planned profile, without a GPU: the README's
# second shape (cudarc 0.19 with `cuda-12080` in the crate; the harness added with
# `cargo add --dev --path ... --no-default-features -F cuda-12080`), a bench with two
# cases, then `cargo kprof init` and `cargo kprof --kernel saxpy --dry-run`. Checks that
# init wrote one entry per case and that the dry run, with the generated table as
# written, selects the saxpy case alone.
#
# usage: scripts/new-crate.sh [WORKDIR]    (default: a new temporary directory)
# CARGO_NET_OFFLINE=true uses only crates already in cargo's cache (this repository's
# `cargo fetch` puts every one it needs there). Exits 1 when a check fails.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
offline=()
[ "${CARGO_NET_OFFLINE:-false}" = true ] && offline=(--offline)

cargo build --quiet --manifest-path "$repo/Cargo.toml" --bin cargo-kprof
kprof="$repo/target/debug/cargo-kprof"
fail() { echo "new-crate: $*" >&2; exit 1; }

crate="$work/mykernels"
rm -rf "$crate"
cargo new --lib --quiet --vcs none "$crate"
cd "$crate"
cargo add --quiet "${offline[@]}" cudarc@0.19 -F cuda-12080
cargo add --quiet "${offline[@]}" --dev --path "$repo/harness" --no-default-features -F cuda-12080
grep -q '^kprof-harness = { path = ".*", default-features = false, features = \["cuda-12080"\] }$' Cargo.toml \
    || fail "cargo add did not write the README's second line: $(grep kprof-harness Cargo.toml)"
printf '\n[[bench]]\nname = "kernels"\nharness = false\n' >> Cargo.toml

mkdir -p kernels benches
cat > kernels/saxpy.cu <<'CU'
extern "C" __global__ void saxpy(float a, const float *x, float *y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
CU
cat > kernels/matmul.cu <<'CU'
extern "C" __global__ void matmul_naive(const float *a, const float *b, float *c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}
CU
cat > benches/kernels.rs <<'RS'
use kprof_harness::prelude::*;

fn main() {
    const N: usize = 1 << 24;
    const M: usize = 1024;
    let mut bench = Bench::new();
    bench.case("saxpy/n=16777216", |gpu| {
        let saxpy = gpu.compile(&cuda_source!("kernels/saxpy.cu"))?.function("saxpy")?;
        let (x, mut y) = (gpu.random::<f32>(N)?, gpu.random::<f32>(N)?);
        let cfg = grid_1d(N.div_ceil(256) as u32, 256);
        Ok(move |s: &CudaStream| unsafe {
            s.launch_builder(&saxpy).arg(&2.0f32).arg(&x).arg(&mut y).arg(&N).launch(cfg)
        })
    });
    bench.case("matmul_naive/n=1024", |gpu| {
        let mm = gpu.compile(&cuda_source!("kernels/matmul.cu"))?.function("matmul_naive")?;
        let (a, b, mut c) = (gpu.random::<f32>(M * M)?, gpu.random::<f32>(M * M)?, gpu.zeros::<f32>(M * M)?);
        let cfg = LaunchConfig { grid_dim: (M as u32 / 16, M as u32 / 16, 1), block_dim: (16, 16, 1), shared_mem_bytes: 0 };
        Ok(move |s: &CudaStream| unsafe {
            s.launch_builder(&mm).arg(&a).arg(&b).arg(&mut c).arg(&(M as i32)).launch(cfg)
        })
    });
    kprof_harness::main(bench);
}
RS

echo "== cargo kprof init" >&2
"$kprof" kprof init
echo "== cargo kprof list" >&2
"$kprof" kprof list
names=$("$kprof" kprof list --message-format json | grep -o '"name":"[^"]*"' | cut -d'"' -f4 | paste -sd, -)
[ "$names" = "saxpy,matmul_naive" ] || fail "init wrote the entries $names, not saxpy,matmul_naive"

echo "== cargo kprof --kernel saxpy --dry-run" >&2
script=$("$kprof" kprof --kernel saxpy --dry-run -q)
cases=$(printf '%s\n' "$script" | grep -o "KPROF_CASE=[^ ]*" | tr -d "'" | sort -u)
printf '%s\n' "$cases"
[ "$cases" = 'KPROF_CASE=^saxpy/n=16777216$' ] || fail "the dry run selects $cases, not the saxpy case alone"
echo "new-crate: ok: init wrote one entry per case; --kernel saxpy selects saxpy/n=16777216 alone" >&2
