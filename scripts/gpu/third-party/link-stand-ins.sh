#!/usr/bin/env bash
# Makes the link-time libraries a candle build needs on a machine without CUDA, for
# build-candle.sh's CUDA_ROOT: candle-core forces cudarc's `dynamic-linking`, so the
# linker wants libcuda, libcublas, libcublasLt, libcurand, libcudart and libnvrtc.
#
# usage: scripts/gpu/third-party/link-stand-ins.sh DIR [MANIFEST]
#
#   DIR       new or existing folder; DIR/lib receives the libraries (CUDA_ROOT=DIR)
#   MANIFEST  the Cargo.toml whose cudarc names the driver symbols
#             (default: examples/third-party/candle-block/Cargo.toml)
#
# - libcuda.so / libcuda.so.1: a stand-in with soname libcuda.so.1 made of empty
#   functions, one per `cu*` driver function cudarc's bindings declare. It only satisfies
#   the linker: at run time the GPU machine's own libcuda.so.1 is loaded by that soname.
# - the others: links to NVIDIA's CUDA 13 wheels from PyPI (nvidia-cublas, nvidia-curand,
#   nvidia-cuda-runtime, nvidia-cuda-nvrtc), installed into DIR/wheels. Their sonames
#   (libcublas.so.13, libcurand.so.10, ...) are what the binary then asks for.
# Needs cargo (the dependency graph, fetched), python3 with pip and cc.
set -euo pipefail

dir="${1:?usage: link-stand-ins.sh DIR [MANIFEST]}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
manifest="${2:-$repo/examples/third-party/candle-block/Cargo.toml}"
mkdir -p "$dir/lib" "$dir/wheels"
dir="$(cd "$dir" && pwd)"

if [ -z "$(find "$dir/wheels" -name 'libcublas.so.*' -print -quit)" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$dir/wheels" \
    "nvidia-cublas==13.0.*" "nvidia-curand==10.4.0.*" "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-nvrtc==13.0.*" >&2
fi
for lib in cublas cublasLt curand cudart nvrtc; do
  found="$(find "$dir/wheels" -name "lib$lib.so.*" ! -name '*alt*' | sort | head -n 1)"
  [ -n "$found" ] || { echo "link-stand-ins: no lib$lib.so.* in the wheels under $dir/wheels" >&2; exit 1; }
  ln -sf "$found" "$dir/lib/lib$lib.so"
  ln -sf "$found" "$dir/lib/$(basename "$found")"
done

cudarc="$(cargo metadata --locked --format-version 1 --manifest-path "$manifest" |
  python3 -c 'import json, sys, os
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "cudarc":
        print(os.path.dirname(p["manifest_path"])); break')"
[ -n "$cudarc" ] || { echo "link-stand-ins: $manifest does not depend on cudarc" >&2; exit 1; }
bindings="$cudarc/src/driver/sys/mod.rs"
symbols="$(grep -oE '^pub unsafe fn cu[A-Za-z0-9_]+' "$bindings" | sed 's/^pub unsafe fn //' | sort -u)"
[ -n "$symbols" ] || { echo "link-stand-ins: no driver functions found in $bindings" >&2; exit 1; }
mapfile -t names <<< "$symbols"
printf 'void %s(void) {}\n' "${names[@]}" > "$dir/libcuda-stand-in.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$dir/lib/libcuda.so.1" "$dir/libcuda-stand-in.c"
ln -sf libcuda.so.1 "$dir/lib/libcuda.so"
echo "link-stand-ins: ${#names[@]} driver functions stood in for; CUDA_ROOT=$dir" >&2
