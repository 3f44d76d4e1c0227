//! The harness' hand-written PTX kernels (`src/l2_flush.ptx`, `src/clock_probe.ptx`)
//! assemble with ptxas, for sm_90 and for the lowest architecture that both the PTX's
//! `.target` and the installed ptxas allow. The driver JIT-compiles them at run time, so a
//! syntax error would otherwise only show on a GPU.
//!
//! Needs ptxas: next to `$NVCC`, in `$CUDA_HOME/bin`, on PATH or in /usr/local/cuda/bin.
//! Without it the tests print "skipped: ..." and pass, unless `KPROF_REQUIRE_NVCC=1`, when
//! they fail (CI sets it after `.ci/install-cuda-tools.sh`, which installs nvcc and ptxas).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Reports a skip on stderr directly, past the test harness' output capture, so that a
/// skipped test is visible in a plain `cargo test` run.
fn skip(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {message}");
}

fn find_ptxas() -> Option<PathBuf> {
    let beside_nvcc = std::env::var_os("NVCC")
        .filter(|p| !p.is_empty())
        .and_then(|nvcc| Path::new(&nvcc).parent().map(|d| d.join("ptxas")));
    let in_cuda_home = std::env::var_os("CUDA_HOME").map(|h| Path::new(&h).join("bin/ptxas"));
    let on_path = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("ptxas")).find(|p| p.is_file()));
    [beside_nvcc, in_cuda_home, on_path, Some(PathBuf::from("/usr/local/cuda/bin/ptxas"))]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
}

/// ptxas, or `None` after printing why the test skips; panics when it is required.
fn ptxas_or_skip(test: &str) -> Option<PathBuf> {
    let found = find_ptxas();
    if found.is_none() {
        assert!(
            std::env::var("KPROF_REQUIRE_NVCC").as_deref() != Ok("1"),
            "{test}: KPROF_REQUIRE_NVCC=1 but no ptxas (looked next to $NVCC, in $CUDA_HOME/bin, \
             on PATH and in /usr/local/cuda/bin): run `eval \"$(.ci/install-cuda-tools.sh DIR)\"`"
        );
        skip(&format!("{test}: ptxas not found (set NVCC, or put ptxas on PATH)"));
    }
    found
}

fn ptx_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(name)
}

/// The value of the PTX directive `directive` (`.version`, `.target`).
fn directive(ptx: &str, directive: &str) -> String {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(directive).filter(|rest| rest.starts_with(char::is_whitespace)))
        .map(|rest| rest.trim().to_string())
        .unwrap_or_else(|| panic!("no {directive} directive in the PTX"))
}

/// The number of `sm_NN`.
fn sm_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?.parse().ok()
}

/// The plain `sm_NN` architectures this ptxas accepts, from the "Allowed values" of
/// `--gpu-name` in its `--help`.
fn supported_archs(ptxas: &Path) -> Vec<u32> {
    let out = Command::new(ptxas).arg("--help").output().expect("ptxas --help runs");
    allowed_gpu_names(&String::from_utf8_lossy(&out.stdout))
}

/// The plain `sm_NN` values listed as allowed for `--gpu-name` in ptxas' help text, sorted.
fn allowed_gpu_names(help: &str) -> Vec<u32> {
    let Some(option) = help.find("--gpu-name") else {
        return Vec::new();
    };
    let section = &help[option..];
    let Some(start) = section.find("Allowed values for this option:") else {
        return Vec::new();
    };
    let list = &section[start..];
    let list = &list[..list.find("Default value").or_else(|| list.find("\n\n")).unwrap_or(list.len())];
    let mut archs: Vec<u32> = list.split('\'').filter_map(sm_number).collect();
    archs.sort_unstable();
    archs.dedup();
    archs
}

/// The lowest architecture to assemble `target` (`sm_50`) for: itself when this ptxas still
/// supports it, else the lowest newer one it does (CUDA 13's ptxas starts at sm_75).
fn lowest_arch(target: &str, supported: &[u32]) -> String {
    let want = sm_number(target).unwrap_or_else(|| panic!("unexpected .target {target}"));
    match supported.iter().find(|&&n| n >= want) {
        Some(n) => format!("sm_{n}"),
        None => target.to_string(),
    }
}

/// Assembles `ptx` for `arch` and checks that `entry` was compiled.
fn assemble(ptxas: &Path, ptx: &Path, arch: &str, entry: &str) {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let cubin = out_dir.join(format!("{entry}.{arch}.cubin"));
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .expect("ptxas runs");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "ptxas -arch={arch} {} failed ({}):\n{log}", ptx.display(), out.status);
    assert!(
        log.contains(&format!("Compiling entry function '{entry}' for '{arch}'")),
        "ptxas -arch={arch} {} did not compile {entry}:\n{log}",
        ptx.display()
    );
    println!("ptxas -arch={arch} {}: ok", ptx.display());
    let _ = std::fs::remove_file(&cubin);
}

#[test]
fn harness_ptx_kernels_assemble() {
    let test = "harness_ptx_kernels_assemble";
    let Some(ptxas) = ptxas_or_skip(test) else {
        return;
    };
    let supported = supported_archs(&ptxas);
    for (file, entry) in [("l2_flush.ptx", "kprof_l2_flush"), ("clock_probe.ptx", "kprof_clock_probe")] {
        let path = ptx_path(file);
        let ptx = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let lowest = lowest_arch(&directive(&ptx, ".target"), &supported);
        for arch in ["sm_90".to_string(), lowest] {
            assemble(&ptxas, &path, &arch, entry);
        }
    }
}

#[test]
fn the_clock_probe_asks_no_more_of_the_driver_than_the_l2_flush() {
    let read = |f: &str| std::fs::read_to_string(ptx_path(f)).unwrap();
    let (flush, probe) = (read("l2_flush.ptx"), read("clock_probe.ptx"));
    for d in [".version", ".target", ".address_size"] {
        assert_eq!(directive(&probe, d), directive(&flush, d), "{d}");
    }
}

#[test]
fn lowest_arch_falls_back_to_what_ptxas_supports() {
    assert_eq!(lowest_arch("sm_50", &[50, 52, 75, 90]), "sm_50");
    assert_eq!(lowest_arch("sm_50", &[75, 80, 90]), "sm_75");
    assert_eq!(lowest_arch("sm_50", &[]), "sm_50");
    assert_eq!(directive(".version 6.0\n.target sm_50\n", ".target"), "sm_50");
}

#[test]
fn allowed_gpu_names_come_from_the_gpu_name_option_only() {
    // Shaped like CUDA 13.0's ptxas --help, which also names sm_70 in another option.
    let help = "--gpu-name <gpu name>   (-arch)\n        Specify name of NVIDIA GPU.\n        \
                Allowed values for this option:  'compute_75','sm_100a','sm_120',\n        \
                'sm_75','sm_80','sm_90','sm_90a'.\n        Default value:  'sm_75'.\n\n\
                --legacy-option\n        Only for sm_70 or higher.\n";
    assert_eq!(allowed_gpu_names(help), [75, 80, 90, 120]);
    assert_eq!(allowed_gpu_names("no such option"), Vec::<u32>::new());
}
