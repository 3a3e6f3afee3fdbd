//! The degradation study (`cargo bench --workspace -- study`): the field study's
//! experiment for every layout in one run. Knobs are environment variables
//! (`STUDY_BATCHES`, `STUDY_LEDGERS`, `STUDY_TX`, ...; see docs/benchmarks.md).
//! Output goes to `target/tmp/study/` unless `STUDY_OUT` says otherwise.

use std::path::Path;
use std::process::ExitCode;

use ledgerstore_benches::study::{StudyConfig, run_study};

fn main() -> ExitCode {
    // `cargo bench -- FILTER` hands FILTER to every bench target: run the
    // study only when it matches, so filtering for a micro-bench skips it.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !ledgerstore_benches::selected_by_filters(&["study".to_string()]) {
        return ExitCode::SUCCESS;
    }
    // `cargo test --benches` runs bench targets with `--test`: the study is
    // exercised by its smoke test instead.
    if args.iter().any(|a| a == "--test") {
        println!("study: skipped under --test (see benches/tests/study_smoke.rs)");
        return ExitCode::SUCCESS;
    }
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let cfg = match StudyConfig::from_env(root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("study: {e}");
            return ExitCode::from(2);
        }
    };
    match run_study(&cfg, &mut |line| println!("{line}")) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("study failed: {e}");
            ExitCode::FAILURE
        }
    }
}
