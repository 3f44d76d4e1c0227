//! What an analysis reads from a profile directory: its ncu pages, and where they came
//! from (the target spec of a run, or the record of an import).

use std::path::PathBuf;

use anyhow::Result;

use crate::analyze::crosscheck::NcuFinding;
use crate::analyze::summary::is_read_metric;
use crate::error::{ExitCode, Failure};
use crate::model::filter::KernelFilter;
use crate::model::kinds::Privilege;
use crate::model::stage::Stage;
use crate::ncu::parse::{DetailsPage, DetailsRow, RawPage, SourcePage};
use crate::process::shell_quote;
use crate::profile::dir::{PageFile, PageKind};
use crate::profile::fs::open_input;
use crate::profile::import::{read_shown, ImportRecord};
use crate::profile::target_spec::TargetSpec;
use crate::profile::ProfileDir;

/// Where the numbers come from and how they were taken: the report's header and
/// reproduction section.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// The title (the kernel name or hint).
    pub title: String,
    /// What was profiled and how (program, arguments, runtime), Markdown.
    pub target_summary: String,
    /// The kernel filter as given to ncu, or what the import kept.
    pub kernel_filter: String,
    /// ncu's version, when known.
    pub profiler_version: Option<String>,
    /// `none`, `full_sudo`, or `n/a`.
    pub privilege_mode: String,
    /// ncu's clock control, when known.
    pub clock_control: Option<String>,
    /// The commands, one per line.
    pub commands: String,
    /// What each input file is (`details/01_basic_raw.csv: basic stage, 1 launch, 301 columns`).
    pub collected: Vec<String>,
    /// Whether a source page was part of the inputs.
    pub source_collected: bool,
    /// The stages whose pages were part of the inputs (`basic`, `memory`, ...).
    pub stages_collected: Vec<String>,
    /// For a profile kprof ran: the `cargo kprof` command that selects the same kernel
    /// (`cargo kprof -p kprof-demo --bench hgemm --kernel hgemm`), to which a suggestion adds
    /// `--stages`. `None` for an import.
    pub selection: Option<String>,
    /// ncu's own rule findings from a details page, largest estimated speedup first.
    pub ncu_rules: Vec<String>,
    /// Every rule result of a details page, for checking a limiter against ncu's rules.
    pub ncu_findings: Vec<NcuFinding>,
}

/// One raw page and where it came from.
#[derive(Debug, Clone)]
pub struct RawInput {
    /// The stage (`memory`) or import (`imported_01`) it came from.
    pub label: String,
    /// Its path in the profile directory, for messages.
    pub origin: String,
    /// The file.
    pub path: PathBuf,
    /// The page, with the launch columns and the metrics the analysis reads
    /// ([`crate::analyze::summary::is_read_metric`]); the file keeps the rest.
    pub page: RawPage,
}

pub use crate::profile::fs::{check_size, DEFAULT_MAX_INPUT_MB};

/// The pages of a profile directory and their provenance.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// Stage raw pages and imported raw pages, in file-name order.
    pub raw: Vec<RawInput>,
    /// A source page, if one was collected or imported.
    pub source: Option<SourcePage>,
    /// The kernel filter the analysis keeps to (the run's, or the import's `--kernel`).
    pub kernel_filter: Option<regex::Regex>,
    /// Where they came from.
    pub provenance: Provenance,
}

fn ncu_rule_line(r: &DetailsRow) -> String {
    let first = r.rule_description.split(". ").next().unwrap_or(&r.rule_description);
    format!(
        "`{}` ({}, {}): estimated speedup {} % ({}). {}.",
        r.rule_name,
        r.section,
        r.kernel,
        crate::units::value(r.speedup.unwrap_or(0.0)),
        r.speedup_type.to_lowercase(),
        first.trim_end_matches('.')
    )
}

/// A page that does not parse: a configuration failure naming it.
fn invalid(e: crate::ncu::parse::ParseError) -> Failure {
    Failure::new(ExitCode::Config, e.to_string())
}

/// Reads every page of `dir` and what it says about itself; a raw page larger than
/// `max_input_mb` MiB is refused.
pub fn read_inputs(dir: &ProfileDir, max_input_mb: u64) -> Result<Inputs> {
    let (mut prov, kernel_filter) = describe(dir)?;
    let mut raw = Vec::new();
    let mut source = None;
    for file in dir.pages()? {
        match &file.kind {
            PageKind::Raw { stage, label } => {
                raw.push(read_raw_page(&file, stage.as_ref(), label, max_input_mb, &mut prov)?);
            }
            PageKind::Details => read_details_page(&file, &mut prov)?,
            PageKind::Source => source = Some(read_source_page(&file, &mut prov)?),
        }
    }
    if raw.is_empty() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("{} has no raw ncu pages to analyse", dir.details_dir().display()),
        )
        .help("import CSV exports with `cargo kprof import --raw FILE --output-dir DIR`")
        .into());
    }
    Ok(Inputs { raw, source, kernel_filter, provenance: prov })
}

/// What a profile directory says about itself without its pages: the title, target,
/// filter, privilege, clocks, commands and ncu version (from its import record, or from
/// `profile-target.yaml`, `commands.sh` and the environment), and the kernel filter the
/// inputs keep to. The page-derived fields of the [`Provenance`] stay empty.
pub fn describe(dir: &ProfileDir) -> Result<(Provenance, Option<regex::Regex>)> {
    let mut prov = Provenance { privilege_mode: "n/a".into(), ..Default::default() };
    let kernel_filter = if let Some(record) = ImportRecord::read(dir)? {
        describe_import(dir, &record, &mut prov)
    } else if dir.target_spec_path().is_file() {
        // A file that cannot be read (its filter no regex, say) is refused, naming it: its
        // kernels are not guessed at.
        describe_run(dir, &TargetSpec::read_from(&dir.target_spec_path())?, &mut prov)
    } else {
        None
    };
    if let Ok(env) = std::fs::read_to_string(dir.environment_path()) {
        prov.profiler_version = env.lines().find(|l| l.contains("Version")).map(|l| l.trim().to_string());
    }
    Ok((prov, kernel_filter))
}

/// Streams a raw page, keeping the metrics the analysis reads, and notes it in `prov`.
fn read_raw_page(
    file: &PageFile,
    stage: Option<&Stage>,
    label: &str,
    max_input_mb: u64,
    prov: &mut Provenance,
) -> Result<RawInput> {
    let origin = &file.origin;
    let input = open_input(&file.path, origin)?;
    check_size(&input, origin, max_input_mb)?;
    let reader = std::io::BufReader::new(input);
    let page = RawPage::read(reader, origin, &is_read_metric).map_err(|e| invalid(e.with_origin(origin)))?;
    refuse_negative_values(&page, origin)?;
    if let Some(s) = stage {
        prov.stages_collected.push(s.name().to_string());
    }
    prov.collected.push(format!(
        "`{origin}`: {} launch(es), {} columns",
        page.launches().count(),
        page.width
    ));
    Ok(RawInput { label: label.to_string(), origin: origin.clone(), path: file.path.clone(), page })
}

/// Refuses a page holding a negative value of a metric the analysis reads. ncu prints
/// none (they are durations, counts, sizes, rates and percentages: no recorded page holds
/// one), and one made a verdict of high confidence on a kernel that ran for -532640 ns.
fn refuse_negative_values(page: &RawPage, origin: &str) -> Result<(), Failure> {
    for launch in page.launches() {
        if let Some((column, value)) = page.negative_metric(launch.cells()) {
            return Err(crate::profile::import::negative_value(origin, launch.kernel_name(), column, value));
        }
    }
    Ok(())
}

/// Reads a details page into ncu's rule findings: the five largest speedups as lines, and
/// every finding for the limiter cross-check.
fn read_details_page(file: &PageFile, prov: &mut Provenance) -> Result<()> {
    let origin = &file.origin;
    let text = read_shown(&file.path, origin)?;
    let page = DetailsPage::parse(&text, origin).map_err(invalid)?;
    let mut rules: Vec<&DetailsRow> = page.rules().filter(|r| r.speedup.is_some_and(|v| v > 0.0)).collect();
    rules.sort_by(|a, b| b.speedup.unwrap_or(0.0).total_cmp(&a.speedup.unwrap_or(0.0)));
    prov.ncu_rules.extend(rules.iter().take(5).map(|r| ncu_rule_line(r)));
    prov.ncu_findings.extend(page.rules().map(NcuFinding::from_row));
    prov.collected.push(format!("`{origin}`: details page ({} rule findings)", page.rules().count()));
    Ok(())
}

/// Reads a source page and notes it in `prov`.
fn read_source_page(file: &PageFile, prov: &mut Provenance) -> Result<SourcePage> {
    let origin = &file.origin;
    let text = read_shown(&file.path, origin)?;
    let page = SourcePage::parse(&text, origin).map_err(invalid)?;
    prov.collected.push(format!("`{origin}`: source page"));
    prov.stages_collected.push("source".into());
    prov.source_collected = true;
    Ok(page)
}

/// The provenance of an import: its files, its `--kernel` and the command that repeats it;
/// returns the kernel filter the import kept to.
fn describe_import(dir: &ProfileDir, record: &ImportRecord, prov: &mut Provenance) -> Option<regex::Regex> {
    let files: Vec<String> =
        record.files.iter().map(|f| format!("`{}` ({})", f.original.display(), f.page)).collect();
    prov.target_summary = format!("Imported from ncu CSV exports: {}.", files.join(", "));
    let mut kernel_filter = None;
    prov.kernel_filter = match &record.kernel {
        Some(k) => {
            let f = KernelFilter::from_hint(k);
            kernel_filter = f.compiled().cloned();
            format!("`{}` (from --kernel {k})", f.to_ncu_arg())
        }
        None => "none: every kernel in the files".into(),
    };
    prov.title = record.kernel.as_ref().map_or_else(|| "imported kernels".into(), |k| k.to_string());
    prov.commands = format!(
        "cargo kprof import {} --output-dir {}",
        record
            .files
            .iter()
            .map(|f| format!("--{} {}", f.page, shell_quote(&f.original.to_string_lossy())))
            .collect::<Vec<_>>()
            .join(" "),
        shell_quote(&dir.shown_path().to_string_lossy())
    ) + &record.kernel.as_ref().map(|k| format!(" --kernel {k}")).unwrap_or_default();
    kernel_filter
}

/// The provenance of a run: its target, filter, privilege, clocks and `commands.sh`;
/// returns the run's kernel filter.
fn describe_run(dir: &ProfileDir, spec: &TargetSpec, prov: &mut Provenance) -> Option<regex::Regex> {
    prov.title = spec.kernel.name.clone();
    prov.target_summary = format!(
        "`{}` {} (runtime `{}`, cwd `{}`)",
        spec.target.executable,
        spec.target.args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
        spec.target.runtime.name(),
        spec.target.cwd.display()
    );
    prov.kernel_filter = format!("`{}:{}`", spec.kernel.filter.mode, spec.kernel.filter.pattern);
    prov.privilege_mode = match spec.privilege.mode {
        Privilege::None => "none".into(),
        Privilege::Sudo => "full_sudo".into(),
    };
    prov.clock_control = Some(spec.profiling.clock_control.name().to_string());
    prov.commands = std::fs::read_to_string(dir.commands_script_path()).unwrap_or_default();
    prov.selection = Some(selection(spec));
    spec.kernel.filter.compiled().cloned()
}

/// The `cargo kprof` command that selects the kernel of `spec` again: its cargo target
/// when it has one (which selects a configured entry of that target and name as well as
/// an ad-hoc kernel), and its name, the configured entry or the hint as given.
fn selection(spec: &TargetSpec) -> String {
    let mut words: Vec<String> = vec!["cargo".into(), "kprof".into()];
    if let (Some(package), Some(target)) = (&spec.target.package, &spec.target.cargo_target) {
        words.extend(["-p".into(), package.clone(), target.kind.cargo_flag().into(), target.name.clone()]);
    }
    words.extend(["--kernel".into(), spec.kernel.name.clone()]);
    words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ")
}
