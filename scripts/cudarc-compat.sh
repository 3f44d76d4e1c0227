#!/usr/bin/env bash
# Checks kprof-harness beside a crate's own cudarc, as harness/README.md documents it:
# `cargo check` of four scratch crates (no GPU, no CUDA needed; cudarc is fetched from
# crates.io) that depend on this checkout's harness by path:
#
#   own-0.18        cudarc 0.18 in the crate, the bench uses the harness's types only   builds
#   own-0.18-mixed  the same, a cudarc 0.18 slice given the harness's stream            E0308
#   own-0.19        cudarc 0.19 (the harness's), its types mixed with the harness's      builds
#   own-0.19-cuda   the same with another CUDA version feature than the harness's        E0428
#   own-0.19-12080  the same, the harness switched to that feature too                   builds
#
# usage: scripts/cudarc-compat.sh [WORKDIR]   (default: a new temporary directory)
# Exits 1 when a case does not end as the table says.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"

saxpy_cu='extern "C" __global__ void saxpy(float a, const float *x, float *y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}'

harness_only='use kprof_harness::prelude::*;

const N: usize = 1 << 24;

fn main() {
    let mut bench = Bench::new();
    bench
        .case("saxpy/n=16777216", |gpu| {
            let saxpy = gpu.compile(&cuda_source!("kernels/saxpy.cu"))?.function("saxpy")?;
            let x = gpu.random::<f32>(N)?;
            let mut y = gpu.random::<f32>(N)?;
            let cfg = grid_1d(N.div_ceil(256) as u32, 256);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&saxpy).arg(&2.0f32).arg(&x).arg(&mut y).arg(&N).launch(cfg)
            })
        })
        .bytes(3 * 4 * N as u64);
    kprof_harness::main(bench);
}'

mixed='use kprof_harness::prelude::*;

fn main() {
    let mut bench = Bench::new();
    bench.case("own/n=1024", |gpu| {
        let f = gpu.compile(&cuda_source!("kernels/saxpy.cu"))?.function("saxpy")?;
        // A slice typed with the crate'"'"'s own cudarc, made on the harness'"'"'s stream.
        let x: cudarc::driver::CudaSlice<f32> = gpu.stream().alloc_zeros::<f32>(1024)?;
        let mut y = gpu.zeros::<f32>(1024)?;
        Ok(move |s: &CudaStream| unsafe {
            s.launch_builder(&f).arg(&1.0f32).arg(&x).arg(&mut y).arg(&1024usize).launch(grid_1d(4, 256))
        })
    });
    kprof_harness::main(bench);
}'

# case NAME CUDARC_VERSION CUDARC_FEATURE HARNESS_FEATURES BENCH EXPECTED(ok|E0308|E0428)
case_() {
    local name="$1" version="$2" feature="$3" harness="$4" bench="$5" expected="$6"
    local dir="$work/$name"
    rm -rf "$dir"
    mkdir -p "$dir/src" "$dir/benches" "$dir/kernels"
    printf '%s\n' "$saxpy_cu" > "$dir/kernels/saxpy.cu"
    echo 'pub use cudarc;' > "$dir/src/lib.rs"
    printf '%s\n' "$bench" > "$dir/benches/saxpy.rs"
    cat > "$dir/Cargo.toml" <<TOML
[package]
name = "$(printf '%s' "$name" | tr '.-' '__')"
version = "0.1.0"
edition = "2021"

[dependencies]
cudarc = { version = "$version", default-features = false, features = ["std", "driver", "dynamic-loading", "$feature"] }

[dev-dependencies]
kprof-harness = { path = "$repo/harness"$harness }

[[bench]]
name = "saxpy"
harness = false
TOML
    local log="$work/$name.log" got
    if (cd "$dir" && cargo check --benches >"$log" 2>&1); then
        got=ok
    elif grep -q 'error\[E0308\]' "$log"; then
        got=E0308
    elif grep -q 'error\[E0428\]' "$log"; then
        got=E0428
    else
        got="failed (see $log)"
    fi
    local resolved
    resolved=$(grep -A1 '^name = "cudarc"' "$dir/Cargo.lock" 2>/dev/null | grep '^version' | cut -d'"' -f2 | paste -sd, -)
    printf '%-16s cudarc %-16s %-8s expected %s\n' "$name" "$resolved" "$got" "$expected"
    [ "$got" = "$expected" ]
}

status=0
case_ own-0.18 0.18 cuda-12080 "" "$harness_only" ok || status=1
case_ own-0.18-mixed 0.18 cuda-12080 "" "$mixed" E0308 || status=1
case_ own-0.19 0.19 cuda-13000 "" "$mixed" ok || status=1
case_ own-0.19-cuda 0.19 cuda-12080 "" "$mixed" E0428 || status=1
case_ own-0.19-12080 0.19 cuda-12080 ', default-features = false, features = ["cuda-12080"]' "$mixed" ok || status=1
exit $status
