#!/usr/bin/env bash
# Builds the archive of examples/third-party/candle-block (a candle 0.11.1 transformer block)
# on a machine without a GPU, for `cargo-kprof kprof run --archive` on a GPU machine.
#
# usage: CUDA_ROOT=DIR scripts/gpu/third-party/build-candle.sh BUILD_DIR DEST.tar
#
# candle-core forces cudarc's `dynamic-linking`: the link needs libcuda, libcublas,
# libcublasLt, libcurand, libcudart and libnvrtc. CUDA_ROOT names a folder whose lib/ holds
# them: a libcuda.so stand-in (soname libcuda.so.1, exporting the driver symbols cudarc
# binds as empty functions) and links to the CUDA 13 wheels' libraries (nvidia-cublas,
# nvidia-curand, nvidia-cuda-runtime, nvidia-cuda-nvrtc); link-stand-ins.sh DIR makes
# them (CUDA_ROOT=DIR). nvcc comes from .ci/install-cuda-tools.sh. candle-kernels' build
# script compiles its .cu files for CUDA_COMPUTE_CAP (90: an H100/H200), one at a time
# (CUDAFORGE_THREADS=1) on small machines; `cargo kprof archive` adds -lineinfo through
# NVCC_APPEND_FLAGS.
#
# BUILD_DIR receives a copy of the crate (its target/ is kept between runs: the first
# build of candle-kernels takes about 12 minutes on two cores). KPROF_BIN names the
# cargo-kprof binary (default: `cargo kprof`, as `cargo-kprof kprof ...`).
set -euo pipefail

build="${1:?usage: CUDA_ROOT=DIR build-candle.sh BUILD_DIR DEST.tar}"
dest="${2:?usage: CUDA_ROOT=DIR build-candle.sh BUILD_DIR DEST.tar}"
: "${CUDA_ROOT:?set CUDA_ROOT to a folder whose lib/ holds the link stand-ins (see the header)}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
kprof="${KPROF_BIN:-cargo-kprof}"

eval "$(bash "$repo/.ci/install-cuda-tools.sh" "${CUDA_TOOLS:-/tmp/kprof-ci-tools}")"
export CUDA_ROOT CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}" CUDAFORGE_THREADS="${CUDAFORGE_THREADS:-1}"
export LD_LIBRARY_PATH="$CUDA_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

mkdir -p "$build/src"
cp "$repo/examples/third-party/candle-block/Cargo.toml" "$repo/examples/third-party/candle-block/Cargo.lock" "$build/"
cp "$repo/examples/third-party/candle-block/src/main.rs" "$build/src/"
"$kprof" kprof archive --manifest-path "$build/Cargo.toml" --bin candle-block --clock-control none -o "$dest"
