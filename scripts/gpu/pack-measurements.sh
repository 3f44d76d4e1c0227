#!/usr/bin/env bash
# Builds, on the build machine (no GPU, no CUDA toolkit), everything that
# run-measurements.sh runs on a GPU machine without cargo, and packs it small: binaries
# stripped of host debug info (the kernels' line info is in their PTX or fatbins, which
# strip leaves alone), each part xz-compressed: 28 MB in all (candle's archive 17 MB of
# it), against 390 MB as built. The first build takes 20-30 minutes on two cores, candle's
# kernels about 12 of them.
#
# usage: scripts/gpu/pack-measurements.sh DEST
#
# DEST (new or empty) receives:
#   cargo-kprof.xz     cargo-kprof, release
#   bins.tar.xz        bins/libkprof_tracer.so and bins/tracer-tests/deps/tracer-gpu-tests
#                      (stage-binaries.sh)
#   zoo.tar.xz         zoo/<bench> for the zoo's six benches (zoo/build.sh)
#   zooarch.tar.xz     zooarch.tar: `cargo kprof archive --workspace` of examples/zoo
#   hgemm.tar.xz       hgemm.tar: the demo's hgemm and hgemm_tiled
#   burn.tar.xz        burn.tar (third-party/build-burn.sh)
#   candle.tar.xz      candle.tar (third-party/build-candle.sh, with link-stand-ins.sh)
#   build/             what was built as is, and the logs
# Environment: CARGO_BUILD_JOBS (default 2).
set -euo pipefail

dest="${1:?usage: scripts/gpu/pack-measurements.sh DEST}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
if [ -n "$(ls -A "$dest")" ]; then
  echo "pack-measurements: $dest is not empty: give a new DEST" >&2
  exit 2
fi
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
b="$dest/build"
mkdir -p "$b"
step() { echo "pack-measurements: $*" >&2; }

step "cargo-kprof (release)"
cargo build --release --locked --manifest-path "$repo/Cargo.toml" -p cargo-kprof > "$b/kprof-build.log" 2>&1
kprof="$repo/target/release/cargo-kprof"
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  kprof="$CARGO_TARGET_DIR/release/cargo-kprof"
fi

step "the tracer and its GPU test (stage-binaries.sh)"
"$repo/scripts/gpu/stage-binaries.sh" "$b/bins" > "$b/stage-binaries.log" 2>&1
step "the zoo's benches (zoo/build.sh)"
"$repo/scripts/gpu/zoo/build.sh" "$b/zoo" > "$b/zoo-build.log" 2>&1
step "the zoo's and hgemm's archives"
"$kprof" kprof archive --manifest-path "$repo/examples/zoo/Cargo.toml" --workspace --clock-control none \
  -o "$b/zooarch.tar" > "$b/zooarch.log" 2>&1
"$kprof" kprof archive --manifest-path "$repo/examples/demo/Cargo.toml" --kernel hgemm --kernel hgemm_tiled \
  --clock-control none -o "$b/hgemm.tar" > "$b/hgemm.log" 2>&1
step "burn (third-party/build-burn.sh)"
KPROF_BIN="$kprof" "$repo/scripts/gpu/third-party/build-burn.sh" "$b/burn" >> "$b/burn.log" 2>&1
step "candle (link-stand-ins.sh, third-party/build-candle.sh)"
"$repo/scripts/gpu/third-party/link-stand-ins.sh" "$b/cuda-root" > "$b/stand-ins.log" 2>&1
CUDA_ROOT="$b/cuda-root" KPROF_BIN="$kprof" "$repo/scripts/gpu/third-party/build-candle.sh" \
  "$b/candle-build" "$b/candle.tar" > "$b/candle.log" 2>&1

step "stripping and packing"
strip -o "$b/cargo-kprof.stripped" "$kprof"
xz -T2 -6 -c "$b/cargo-kprof.stripped" > "$dest/cargo-kprof.xz"
p="$b/pack"
mkdir -p "$p/bins/tracer-tests/deps" "$p/zoo"
cp "$b/bins/libkprof_tracer.so" "$p/bins/"
strip -o "$p/bins/tracer-tests/deps/tracer-gpu-tests" "$b/bins/tracer-tests/deps/tracer-gpu-tests"
for bench in memory compute latency occupancy heldout mio; do
  strip -o "$p/zoo/$bench" "$b/zoo/$bench"
done
(cd "$p" && tar cf - bins | xz -T2 -6 > "$dest/bins.tar.xz" && tar cf - zoo | xz -T2 -6 > "$dest/zoo.tar.xz")
# An archive's entries as written, its binaries stripped: the same names, the same plan.
for name in zooarch hgemm burn/burn candle; do
  a="$b/$name.tar"
  u="$p/unpacked-${name##*/}"
  mkdir -p "$u"
  tar xf "$a" -C "$u"
  for f in "$u"/bin/*; do
    strip "$f" 2>/dev/null || true
  done
  mapfile -t entries < <(tar tf "$a")
  (cd "$u" && tar cf - --no-recursion "${entries[@]}") | xz -T2 -6 > "$dest/${name##*/}.tar.xz"
done
ls -la "$dest" >&2
step "done: on the GPU machine, scripts/gpu/run-measurements.sh $dest OUT"
