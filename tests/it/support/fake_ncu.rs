//! A stand-in for ncu that only replays recordings and records how it was called.
//!
//! It appends its arguments (one per line, then `---`) to `$FAKE_NCU_ARGV`, and for each
//! call that writes a page, the harness's PTX cache it was given to `$FAKE_NCU_ARGV.env`
//! (`KPROF_PTX_CACHE=<value> dir|absent`, whether that folder existed then); it copies
//! `$FAKE_NCU_REPLAY/<file name of --log-file>` to the log file (or, for the K-th call
//! that writes a page of that name, `$FAKE_NCU_REPLAY/nth-K/<file name>`, else for the
//! N-th call that writes a page, `$FAKE_NCU_REPLAY/call-N/<file name>`, when it exists: a
//! run that writes the same page twice), and prints
//! `$FAKE_NCU_CONSOLE` (when set) as the profiled program's own output. `--version`
//! answers as the H200's ncu 2025.3.1 did; with `$FAKE_NCU_VERSION_EXIT` set, it fails
//! with that code.
//!
//! With `--export FILE` it writes a placeholder report there (no test reads it); with
//! `--import FILE` it fails as ncu does when FILE does not exist.
//!
//! It is strict about what it was asked: when the page it would replay is a raw page
//! (its header starts with `"ID",`), every `--metrics` name must be one of its columns,
//! and a `--kernel-name` filter (or the names of a `--kernel-id ::regex:NAMES:N`) must
//! match one of its kernels when it has any. Otherwise
//! it exits 97 naming the mismatch: the test asked for a page that does not answer the
//! command kprof ran. Metrics added since most recordings were made are let
//! through: [`ADDED_SINCE_THE_RECORDINGS`].

use std::path::{Path, PathBuf};

use super::write_script;

/// What the H200's ncu printed for `--version` (fixtures/h200/*/details/00_environment.txt).
pub const RECORDED_VERSION: &str = "NVIDIA (R) Nsight Compute Command Line Profiler\n\
Copyright (c) 2018-2025 NVIDIA Corporation\n\
Version 2025.3.1.0 (build 36398880) (public-release)\n";

/// Metrics the stages ask for that were added after the 2026-11-29 recordings
/// (`demo-stages`, which most tests replay): those pages lack their columns, which the
/// fake lets pass. Every other requested metric must be a column of the page. Re-recording
/// `demo-stages` with the current stages would empty this list.
pub const ADDED_SINCE_THE_RECORDINGS: &[&str] = &[
    // The MIO causes (divergent constant loads, dynamic branches, shared atomics, too
    // many shared accesses), added to the compute and memory stages in December 2026:
    // the ADU pipe, the instruction counts they are shares of, shared atomics' wavefronts.
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_op_branch.sum",
    "smsp__inst_executed_op_ldc.sum",
    "idc__requests.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
];

/// Metrics the stages ask for that were added after the planner's recordings
/// (`planner/`, 2026-12-02): the constant cache's requests, evidence for divergent
/// constant loads (December 2026). Left out of both sides where a test compares kprof's
/// command with those recordings'.
pub const ADDED_SINCE_THE_PLANNER_RECORDINGS: &[&str] = &["idc__requests.sum"];

/// Metrics the stages ask for that were added after the H200 runs whose `commands.sh` the
/// tests compare kprof's ncu argv with (`archive-runs/`, 2026-11-30): the MIO causes'
/// metrics of December 2026. They are left out of both sides of that comparison
/// ([`super::recorded_argv::normalised`]); every other metric must be as recorded.
pub const ADDED_SINCE_THE_RECORDED_ARGV: &[&str] = &[
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_op_branch.sum",
    "smsp__inst_executed_op_ldc.sum",
    "idc__requests.sum",
];

/// Writes the fake `ncu` into `dir` and returns its path.
pub fn write(dir: &Path) -> PathBuf {
    write_script(
        &dir.join("ncu"),
        &format!(
            r#"for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_NCU_ARGV"; done
printf -- '---\n' >> "$FAKE_NCU_ARGV"
if [ "$1" = --version ]; then
  if [ -n "${{FAKE_NCU_VERSION_EXIT:-}}" ]; then echo "ncu: no license" >&2; exit "$FAKE_NCU_VERSION_EXIT"; fi
  printf '%s' '{RECORDED_VERSION}'
  exit 0
fi
log=""; prev=""; kn=""; metrics=""; export_to=""; import_from=""
for a in "$@"; do
  if [ "$prev" = "--log-file" ]; then log="$a"; fi
  if [ "$prev" = "--kernel-name" ] || [ "$prev" = "--kernel-id" ]; then kn="$a"; fi
  if [ "$prev" = "--metrics" ]; then metrics="$a"; fi
  if [ "$prev" = "--export" ]; then export_to="$a"; fi
  if [ "$prev" = "--import" ]; then import_from="$a"; fi
  prev="$a"
done
if [ -n "$import_from" ] && [ ! -f "$import_from" ]; then
  echo "==ERROR== fake ncu: no report $import_from to import" >&2; exit 1
fi
if [ -n "$export_to" ]; then printf 'a report of the fake ncu\n' > "$export_to"; fi
if [ -n "$log" ]; then
  if [ -d "${{KPROF_PTX_CACHE:-}}" ]; then there=dir; else there=absent; fi
  printf 'KPROF_PTX_CACHE=%s %s\n' "${{KPROF_PTX_CACHE:-}}" "$there" >> "$FAKE_NCU_ARGV.env"
  n=$(( $(cat "$FAKE_NCU_ARGV.pages" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$FAKE_NCU_ARGV.pages"
  name=$(basename "$log")
  k=$(( $(cat "$FAKE_NCU_ARGV.$name.n" 2>/dev/null || echo 0) + 1 ))
  echo "$k" > "$FAKE_NCU_ARGV.$name.n"
  by_filter="$FAKE_NCU_REPLAY/by-filter/$(printf '%s' "$kn" | tr -c 'A-Za-z0-9' '_')/$(basename "$log")"
  if [ -e "$FAKE_NCU_REPLAY/nth-$k/$name" ]; then
    page="$FAKE_NCU_REPLAY/nth-$k/$name"
  elif [ -e "$FAKE_NCU_REPLAY/call-$n/$(basename "$log")" ]; then
    page="$FAKE_NCU_REPLAY/call-$n/$(basename "$log")"
  elif [ -n "$kn" ] && [ -e "$by_filter" ]; then
    page="$by_filter"
  else
    page="$FAKE_NCU_REPLAY/$(basename "$log")"
  fi
  cp "$page" "$log"
  header=$(grep -m1 '^"ID",' "$page" || true)
  if [ -n "$header" ]; then
    for m in $(printf '%s' "$metrics" | tr ',' ' '); do
      case " {added} " in *" $m "*) continue ;; esac
      case "$header" in
        *"\"$m\""*) ;;
        *) echo "fake ncu: --metrics $m is not a column of $page" >&2; exit 97 ;;
      esac
    done
    names=$(awk -F'","' '/^"ID",/ && !col {{ for (i = 1; i <= NF; i++) if ($i == "Kernel Name") col = i; next }} col && /^"[0-9]/ {{ print $col }}' "$page")
    if [ -n "$kn" ] && [ -n "$names" ]; then
      case "$kn" in
        regex:*) printf '%s\n' "$names" | grep -Eq -- "$(printf '%s' "${{kn#regex:}}" | sed 's/(?:/(/g')" ;;
        ::regex:*) ids="${{kn#::regex:}}"; printf '%s\n' "$names" | grep -Eq -- "$(printf '%s' "${{ids%:*}}" | sed 's/\\x3A/:/g')" ;;
        *) printf '%s\n' "$names" | grep -Fq -- "$kn" ;;
      esac || {{ echo "fake ncu: --kernel-name $kn matches no kernel of $page" >&2; exit 97; }}
    fi
  fi
fi
if [ -n "${{FAKE_NCU_CONSOLE:-}}" ]; then cat "$FAKE_NCU_CONSOLE" >&2; fi
exit 0
"#,
            added = ADDED_SINCE_THE_RECORDINGS.join(" ")
        ),
    )
}

/// The folder name under `$FAKE_NCU_REPLAY/by-filter/` for the `--kernel-name` value `filter`.
pub fn filter_key(filter: &str) -> String {
    filter.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Each recorded call of a fake tool, from its argv file: its arguments.
pub fn calls(argv_file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(argv_file)
        .unwrap_or_default()
        .split("---\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.lines().map(String::from).collect())
        .collect()
}

/// Writes a fake `ncu` that misbehaves as `$FAKE_NCU_MODE` says, and returns its path.
/// `--version` always answers. Each process it is made of appends its pid to
/// `$FAKE_NCU_PIDS`, so a test can check that none survives.
///
/// - `block`: like ncu running a program: the ncu process starts a child (the "program")
///   in its process group; the child touches `$FAKE_NCU_STARTED` and blocks opening the
///   fifo `$FAKE_NCU_FIFO` until someone opens it for writing or kills it.
/// - `block-alone`: the ncu process itself touches the file and blocks, with no child.
/// - `no-file`, `empty-file`, `garbage`: exit 0 having written no `--log-file`, an empty
///   one, or one that is not a CSV page (with terminal escape sequences in it).
/// - `killed`: kills itself with SIGKILL, as the OOM killer would.
/// - `escapes`: prints terminal escape sequences and a 100 KB word, then exits 1, as a
///   program that fails under ncu.
pub fn write_misbehaving(dir: &Path) -> PathBuf {
    write_script(
        &dir.join("ncu"),
        r#"if [ "$1" = --version ]; then echo "Version 2025.3.1.0 (fake)"; exit 0; fi
echo $$ >> "$FAKE_NCU_PIDS"
log=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--log-file" ]; then log="$a"; fi
  prev="$a"
done
case "$FAKE_NCU_MODE" in
  block)
    sh -c 'echo $$ >> "$FAKE_NCU_PIDS"; touch "$FAKE_NCU_STARTED"; read x < "$FAKE_NCU_FIFO"' &
    wait ;;
  block-alone)
    touch "$FAKE_NCU_STARTED"; read x < "$FAKE_NCU_FIFO" ;;
  no-file) ;;
  empty-file) : > "$log" ;;
  garbage) printf 'not a page \033[31mred\033[0m\n\033]0;title\007\n' > "$log" ;;
  killed) kill -9 $$ ;;
  escapes)
    printf 'program says \033[2J\033]0;pwned\007 boom\r\n' >&2
    head -c 100000 /dev/zero | tr '\0' 'w' >&2
    exit 1 ;;
esac
exit 0
"#,
    )
}

/// The fake refuses what the page it would replay cannot answer, and answers `--version`
/// as the recording did.
#[test]
fn the_fake_ncu_fails_on_a_metric_or_filter_its_page_does_not_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let ncu = write(tmp.path());
    let replay = super::fixture_details("copy_20261129_213211");
    let argv = tmp.path().join("argv");
    let run = |args: &[&str]| {
        std::process::Command::new(&ncu)
            .args(args)
            .env("FAKE_NCU_ARGV", &argv)
            .env("FAKE_NCU_REPLAY", &replay)
            .output()
            .unwrap()
    };
    let version = run(&["--version"]);
    assert_eq!(String::from_utf8_lossy(&version.stdout), RECORDED_VERSION);
    let log = tmp.path().join("01_basic_raw.csv");
    let log = log.to_str().unwrap();
    let page = |filter: &str, metrics: &str| {
        run(&[
            "--kernel-name",
            filter,
            "--metrics",
            metrics,
            "--csv",
            "--page",
            "raw",
            "--log-file",
            log,
            "prog",
        ])
    };
    assert_eq!(page("regex:.*copy.*", "gpu__time_duration.sum").status.code(), Some(0));
    let bad_metric = page("regex:.*copy.*", "gpu__time_duration.sum,gpu__time_duratoin.sum");
    assert_eq!(bad_metric.status.code(), Some(97));
    assert!(String::from_utf8_lossy(&bad_metric.stderr).contains("gpu__time_duratoin.sum is not a column"));
    let bad_filter = page("regex:.*hgemm.*", "gpu__time_duration.sum");
    assert_eq!(bad_filter.status.code(), Some(97));
    assert!(String::from_utf8_lossy(&bad_filter.stderr).contains("matches no kernel"));
    assert_eq!(page("regex:(?:.*hgemm.*)|(?:.*copy.*)", "gpu__time_duration.sum").status.code(), Some(0));
}
