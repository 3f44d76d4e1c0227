#!/usr/bin/env bash
# Builds the archives for trying cargo kprof on third-party code in one sitting on a GPU machine:
# cudarc's own examples (examples/third-party/cudarc) and the Python targets
# (examples/python). Runs on the build machine (no GPU, no CUDA needed); run.sh beside this
# script then profiles them on a GPU machine without cargo.
#
# usage: scripts/gpu/third-party/build.sh DEST
#
# DEST (new or empty) receives:
#   cargo-kprof           the kprof binary the archives were made with (KPROF_BIN for run.sh)
#   run.sh                a copy of run.sh
#   <name>.tar            one archive per row below, written by this repository's own
#                         `cargo kprof archive` (always --clock-control none: `run --archive`
#                         takes the clock control from the archived plan)
#   <name>.archive.log    what `cargo kprof archive` printed
#   contents.txt          each archive's entries and its plan's kernels (name, filter, window)
#
#   name               package        selection
#   matmul             cudarc         --example matmul-kernel --kernel matmul
#   sin_kernel         cudarc         --example 03-launch-kernel --kernel sin_kernel
#   sin_kernel-exact   cudarc         --example 03-launch-kernel --kernel =sin_kernel  (exact hint)
#   matmul-window      cudarc         as matmul, with --launch-skip 0 --launch-count 1: the
#                                     control for the window adaptation (each example launches
#                                     its kernel once)
#   triton_softmax     python         --kernel triton_softmax  (configured entry)
#   torch_layernorm    python         --kernel torch_layernorm (configured entry)
#
# Then checks, without a GPU: the cudarc examples build with cargo alone; each archive
# holds what its program reads at run time (examples/sin.ptx for the cudarc archives, the
# .py file for the Python ones; packed through `include` in [package.metadata.kprof]); each
# plan names the expected kernel, filter and clock control. A failing archive or check does
# not stop the others; the exit status is 1 if any failed.
set -uo pipefail

dest="${1:?usage: scripts/gpu/third-party/build.sh DEST}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cudarc="$repo/examples/third-party/cudarc/Cargo.toml"
python="$repo/examples/python/Cargo.toml"
mkdir -p "$dest" || exit 1
dest="$(cd "$dest" && pwd)"
if [ -n "$(ls -A "$dest")" ]; then
  echo "third-party build: $dest is not empty; archives are never overwritten: give a new DEST" >&2
  exit 2
fi
failed=()

echo "third-party build: building cargo-kprof (release)" >&2
if ! cargo build --release --manifest-path "$repo/Cargo.toml" --message-format=json-render-diagnostics \
    > "$dest/kprof-build.json"; then
  echo "third-party build: cargo-kprof did not build" >&2
  exit 1
fi
kprof="$(python3 - "$dest/kprof-build.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "cargo-kprof":
        print(msg["executable"])
PY
)"
rm -f "$dest/kprof-build.json"
if [ -z "$kprof" ]; then
  echo "third-party build: cargo built no cargo-kprof executable" >&2
  exit 1
fi
cp "$kprof" "$dest/cargo-kprof"
cp "$here/run.sh" "$dest/run.sh"

echo "third-party build: cargo build --release --examples (cudarc examples, as a user would)" >&2
if ! cargo build --release --examples --manifest-path "$cudarc" >&2; then
  failed+=("cudarc examples: cargo build")
fi

# archive NAME MANIFEST SELECTION...: one archive, made the way the README says.
archive() {
  local name=$1 manifest=$2
  shift 2
  echo "third-party build: $name: cargo kprof archive --manifest-path ${manifest#"$repo"/} $* --clock-control none" >&2
  if cargo run --release --quiet --manifest-path "$repo/Cargo.toml" -- kprof archive \
      --manifest-path "$manifest" "$@" --clock-control none -o "$dest/$name.tar" \
      > "$dest/$name.archive.log" 2>&1; then
    echo "third-party build: $name: ok" >&2
  else
    echo "third-party build: $name: FAILED (exit $?):" >&2
    sed 's/^/    /' "$dest/$name.archive.log" >&2
    failed+=("$name: archive")
  fi
}

archive matmul "$cudarc" --example matmul-kernel --kernel matmul
archive sin_kernel "$cudarc" --example 03-launch-kernel --kernel sin_kernel
archive sin_kernel-exact "$cudarc" --example 03-launch-kernel --kernel =sin_kernel
archive matmul-window "$cudarc" --example matmul-kernel --kernel matmul --launch-skip 0 --launch-count 1
archive matmul-discover "$cudarc" --example matmul-kernel
demo="$repo/examples/demo/Cargo.toml"
archive gemm-several "$demo" --bench hgemm --kernel gemm
archive hgemm_tiled-exact "$demo" --bench hgemm --kernel =hgemm_tiled
archive triton_softmax "$python" --kernel triton_softmax
archive torch_layernorm "$python" --kernel torch_layernorm

# What each archive holds (contents.txt), and whether it is what run.sh needs: the file its
# program reads at run time (relative to the unpacked workspace), the kernel name, the
# filter (any of the listed forms) and the clock control.
if ! problems="$(python3 - "$dest" <<'PY'
import json, os, sys, tarfile
dest = sys.argv[1]
regex = lambda p: {"mode": "regex", "pattern": p}
exact = lambda p: {"mode": "exact", "pattern": p}
expected = {
    # name: (file read at run time or None, kernel names, filters)
    "matmul": (None, ["matmul"], [regex(".*matmul.*")]),
    "sin_kernel": ("examples/sin.ptx", ["sin_kernel"], [regex(".*sin_kernel.*")]),
    "sin_kernel-exact": ("examples/sin.ptx", ["sin_kernel", "=sin_kernel"],
                         [regex("(^|[ :])sin_kernel($|[<(])")]),
    "matmul-window": (None, ["matmul"], [regex(".*matmul.*")]),
    "triton_softmax": ("triton_softmax.py", ["triton_softmax"], [regex("softmax_kernel")]),
    "torch_layernorm": ("torch_layernorm.py", ["torch_layernorm"], [regex("layer_norm|LayerNorm")]),
}
problems = []
with open(os.path.join(dest, "contents.txt"), "w") as out:
    for name, (want_file, want_names, want_filters) in expected.items():
        path = os.path.join(dest, name + ".tar")
        if not os.path.exists(path):
            continue
        try:
            with tarfile.open(path) as tar:
                names = tar.getnames()
                plan = json.load(tar.extractfile("kprof-archive.json"))
        except (OSError, tarfile.TarError, KeyError, ValueError) as e:
            problems.append(f"{name}: the archive could not be read: {e}")
            continue
        print(f"== {name}.tar", file=out)
        for n in names:
            print(f"   {n}", file=out)
        kernels = plan.get("kernels", [])
        for k in kernels:
            print(f"   kernel {k.get('name')}: target {json.dumps(k.get('target'))} runtime {k.get('runtime')} "
                  f"filter {json.dumps(k.get('filter'))} window {json.dumps(k.get('window'))} "
                  f"clock_control {k.get('clock_control')}", file=out)
        if want_file and f"workspace/{want_file}" not in names:
            problems.append(f"{name}: no workspace/{want_file} in the archive, so the program cannot find it "
                            "on the GPU machine (is `include` of [package.metadata.kprof] supported?)")
        if len(kernels) != 1:
            problems.append(f"{name}: {len(kernels)} kernels in the plan, expected 1")
        for k in kernels:
            if k.get("name") not in want_names:
                problems.append(f"{name}: kernel name {k.get('name')!r}, expected {want_names[0]!r}")
            if k.get("filter") not in want_filters:
                problems.append(f"{name}: filter {json.dumps(k.get('filter'))}, expected "
                                + " or ".join(json.dumps(f) for f in want_filters))
            if str(k.get("clock_control")).lower() != "none":
                problems.append(f"{name}: clock control {k.get('clock_control')!r}, expected none")
print("\n".join(problems))
PY
)"; then
  failed+=("the archive check itself failed")
fi
if [ -n "$problems" ]; then
  while IFS= read -r p; do
    echo "third-party build: $p" >&2
    failed+=("$p")
  done <<< "$problems"
else
  echo "third-party build: every archive holds what its run needs (contents.txt)" >&2
fi

ls -l "$dest" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "third-party build: ${#failed[@]} problem(s):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "third-party build: all archives written and checked in $dest; on the GPU machine:" >&2
echo "  ./run.sh ./cargo-kprof . OUT_DIR" >&2
