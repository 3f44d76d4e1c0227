#!/usr/bin/env bash
# Installs NVIDIA's CUDA 13.0 compiler (nvcc), NVRTC and the headers kernels include
# (cuda_fp16.h and the CCCL headers it needs) from PyPI into DIR, for machines without a
# CUDA toolkit (CI, build machines). No GPU is needed to compile.
#
# usage: eval "$(.ci/install-cuda-tools.sh DIR)"
#
# Prints `export` lines for NVCC, CUDA_HOME, PATH (nvcc's bin directory first: build.rs
# scripts and cc-rs run `nvcc` by name) and LD_LIBRARY_PATH (NVRTC's libnvrtc.so.13).
# Every part is pinned to 13.0 and installed in one pip call, so the shared nvidia/cu13 tree
# is whole: an unpinned install pulls the newest nvvm, whose PTX a CUDA 13.0 driver cannot
# load.
set -euo pipefail
dir="${1:?usage: install-cuda-tools.sh DIR}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
cu="$dir/nvidia/cu13"
need=("$cu/bin/nvcc" "$cu/include/crt/host_config.h" "$cu/lib/libnvrtc.so.13" "$cu/include/cuda_fp16.h" "$cu/include/cccl/nv/target")
missing=0
for f in "${need[@]}"; do [ -e "$f" ] || missing=1; done
if [ "$missing" = 1 ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$dir" \
    "nvidia-cuda-nvcc==13.0.88" "nvidia-cuda-crt==13.0.*" "nvidia-nvvm==13.0.*" \
    "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-cccl==13.0.*" "nvidia-cuda-nvrtc==13.0.*" >&2
fi
for f in "${need[@]}"; do
  [ -e "$f" ] || { echo "install-cuda-tools: $f is missing after the install into $dir" >&2; exit 1; }
done
echo "export NVCC='$cu/bin/nvcc'"
echo "export CUDA_HOME='$cu'"
echo "export PATH='$cu/bin'\${PATH:+:\$PATH}"
echo "export LD_LIBRARY_PATH='$cu/lib'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
