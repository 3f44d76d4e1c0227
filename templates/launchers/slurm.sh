#!/usr/bin/env bash
#SBATCH --job-name={{job_name}}
#SBATCH --array=1-{{shards}}
#SBATCH --ntasks=1
{{gres_line}}#SBATCH --time={{time}}
#
# Profiles the kprof archive {{archive}} on a Slurm cluster: a job array of {{shards}}
# task(s), one GPU each, task I profiling shard I of {{shards}} of its {{kernels}} kernel(s),
# then one job that merges the shards. Written by `cargo kprof archive --emit slurm`.
#
#   ./{{script}} submit     submit the array and the merge job that waits for it (afterany);
#                           prints both job ids
#   sbatch {{script}}       only the array (from this folder); then `./{{script}} merge`
#   ./{{script}} merge      merge the shards into $RESULTS/merged
#
# Each task unpacks the archive into its own $RESULTS/shard-I (which must not exist:
# move a failed task's folder aside, then `sbatch --array=I {{script}}` reruns it).
# The nodes need ncu and counter access: see "Clusters and CI matrices" in kprof's README.
set -euo pipefail

# Under sbatch the script runs from a copy: its folder comes from `submit`, else from the
# folder sbatch was called in.
HERE="${KPROF_LAUNCH_DIR:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "$0")" && pwd)}}"
KPROF_BIN="${KPROF_BIN:-cargo-kprof}"
ARCHIVE="$HERE/{{archive}}"
RESULTS="$HERE/{{results}}"
SHARDS={{shards}}

case "${1:-}" in
  submit)
    mkdir -p "$RESULTS/logs"
    export KPROF_LAUNCH_DIR="$HERE"
    array=$(sbatch --parsable --output="$RESULTS/logs/shard-%a.out" "$HERE/{{script}}")
    array="${array%%;*}"
    merge=$(sbatch --parsable --dependency="afterany:$array" --job-name={{job_name}}-merge \
      --ntasks=1 --time={{time}} --output="$RESULTS/logs/merge.out" \
      --wrap="$(printf '%q ' bash "$HERE/{{script}}" merge)")
    merge="${merge%%;*}"
    echo "array job: $array"
    echo "merge job: $merge"
    echo "results:   $RESULTS/merged (logs in $RESULTS/logs)"
    ;;
  merge)
    shards=()
    for i in $(seq 1 "$SHARDS"); do shards+=("$RESULTS/shard-$i"); done
    exec "$KPROF_BIN" kprof merge "${shards[@]}" --output-dir "$RESULTS/merged"
    ;;
  "")
    if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
      echo "usage: ./{{script}} submit | merge   (or: sbatch {{script}})" >&2
      exit 2
    fi
    # The shard is named outright, so that a rerun of one task (--array=I) profiles shard I.
    mkdir -p "$RESULTS"
    exec "$KPROF_BIN" kprof run --archive "$ARCHIVE" \
      --workspace-remap "$RESULTS/shard-$SLURM_ARRAY_TASK_ID" \
      --partition "count:$SLURM_ARRAY_TASK_ID/$SHARDS"
    ;;
  *)
    echo "usage: ./{{script}} submit | merge   (or: sbatch {{script}})" >&2
    exit 2
    ;;
esac
