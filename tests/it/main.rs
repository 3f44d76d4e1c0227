//! The integration tests: one binary, each file a module, shared helpers in `support`.
//!
//! They run the real `cargo-kprof` binary (or the library) on recordings from an H200
//! under `fixtures/`, on small cargo workspaces made in temporary directories, and with
//! stand-ins for ncu and sudo that replay those recordings and record the command line
//! they were given.

mod support;

mod ab;
mod ab_base;
mod advice_texts;
mod analysis_fixtures;
mod archive_options;
mod archive_runs;
mod archive_unpacking;
mod bad_input;
mod batching;
mod bisect;
mod bisect_archive;
mod browser;
mod census;
mod census_trace;
mod census_windows;
mod cli;
mod collect;
mod commands_script;
mod concurrent_runs;
mod config_manifests;
mod demo;
mod exit_codes;
mod export_shapes;
mod file_system;
mod fix_savings;
mod fuzz_inputs;
mod fuzz_parsers;
mod gate;
mod golden;
mod gpus;
mod html;
mod json_events;
mod json_inputs;
mod json_output;
mod launchers;
mod layout;
mod library_checks;
mod limiters;
mod linked_folders;
mod lock_platforms;
mod merge_inputs;
mod messages;
mod mio;
mod one_answer;
mod output_places;
mod page_values;
mod parse_fixtures;
mod planner;
mod printed_values;
mod privilege;
mod readme;
mod references;
mod released_schema;
mod sass_causes;
mod setup;
mod shards;
mod signals;
mod slurm;
mod stage_metrics;
mod staging;
mod templates;
mod third_party;
mod thresholds;
mod travel;
mod travel_size;
mod visual;
mod whole_programs;
mod workflow;
mod zoo;
