#!/usr/bin/env bash
# Builds the archive for profiling the burn example (examples/third-party/burn-mlp) on a GPU
# machine without a Rust toolchain. Runs on the build machine: no GPU and no CUDA toolkit are
# needed, only cargo and network access to crates.io for the first fetch (or a filled cargo
# registry cache). The first build takes 15-20 minutes on two cores, most of it in burn's
# CubeCL crates and the program itself (where burn's generic kernels are instantiated).
#
# usage: scripts/gpu/third-party/build-burn.sh DEST
#
# DEST (created if missing) receives:
#   burn.tar           the archive, written by `cargo kprof archive --bin burn-mlp
#                      --clock-control none` (no kernel named: `run --archive` counts every
#                      kernel and profiles the costliest)
#   burn.archive.log   what `cargo kprof archive` printed
#
# Environment:
#   KPROF_BIN          the cargo-kprof binary to run (as `$KPROF_BIN kprof archive ...`);
#                      default: `cargo kprof`, the one installed for cargo
#   CARGO_TARGET_DIR   as for cargo; kprof builds into its `kprof/` folder
#   CUBECL_DEBUG=1     optional, read by cubecl-macros' build script: the generated CUDA gets
#                      `#line` directives naming the Rust files of the #[cube] kernels (see
#                      examples/third-party/burn-mlp/EXPECTED.md); it rebuilds most of burn
#
# Why the build needs nothing of CUDA: burn's CUDA backend (cubecl-cuda) takes cudarc with
# `fallback-dynamic-loading` (libcuda and libnvrtc are opened at run time, so nothing is linked)
# and `cuda-version-from-build-system`, which asks `nvcc --version` and, without nvcc, falls
# back to the newest bindings cudarc knows. CUDARC_CUDA_VERSION=13000 picks the CUDA 13.0
# bindings instead, for the GPU machine's CUDA 13.0 driver, without looking for nvcc (the
# example's manifest also asks for them through cudarc's `cuda-13000` feature; the variable
# covers the copy cubecl-cuda's build script uses too). The kernels are generated and
# compiled with NVRTC when the program runs; on the GPU machine libnvrtc.so.13 must be on the
# loader's path and the CUDA headers in $CUDA_PATH/include (default /usr/local/cuda).
set -euo pipefail

usage() { echo "usage: scripts/gpu/third-party/build-burn.sh DEST" >&2; exit 2; }
[ $# = 1 ] || usage
dest=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
if [ -e "$dest/burn.tar" ]; then
  echo "build-burn: $dest/burn.tar exists; archives are never overwritten: give a new DEST" >&2
  exit 2
fi

if [ -n "${KPROF_BIN:-}" ]; then
  kprof=("$KPROF_BIN" kprof)
else
  kprof=(cargo kprof)
fi

export CUDARC_CUDA_VERSION=13000

cd "$repo"
# kprof reads the whole dependency graph with `cargo metadata --offline` (to record the
# libraries cudarc opens itself); that needs every package of the lock file on disk, also
# those only other platforms use, which `cargo build` never downloads.
echo "build-burn: cargo fetch (every package of the lock file, for all platforms)" >&2
cargo fetch --locked --manifest-path examples/third-party/burn-mlp/Cargo.toml
echo "build-burn: ${kprof[*]} archive --manifest-path examples/third-party/burn-mlp/Cargo.toml --bin burn-mlp --clock-control none -o $dest/burn.tar" >&2
start=$(date +%s)
if ! "${kprof[@]}" archive --manifest-path examples/third-party/burn-mlp/Cargo.toml \
    --bin burn-mlp --clock-control none -o "$dest/burn.tar" > "$dest/burn.archive.log" 2>&1; then
  echo "build-burn: cargo kprof archive failed; its output:" >&2
  sed 's/^/    /' "$dest/burn.archive.log" >&2
  exit 1
fi
echo "build-burn: archive written in $(($(date +%s) - start)) s; its entries:" >&2
tar -tvf "$dest/burn.tar" >&2
entries="$(tar -tf "$dest/burn.tar")"
if ! grep -qx 'bin/burn-mlp' <<< "$entries"; then
  echo "build-burn: the archive holds no bin/burn-mlp" >&2
  exit 1
fi
echo "build-burn: on the GPU machine (CUDA 13 driver, /usr/local/cuda with NVRTC and ncu):" >&2
echo "  LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo-kprof kprof run --archive burn.tar --workspace-remap WS" >&2
