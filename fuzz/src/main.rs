//! The AFL++ harness: `ledgerstore-fuzz-afl <target>` runs one of
//! `ledgerstore_fuzz::TARGETS` in AFL++'s persistent mode;
//! `ledgerstore-fuzz-afl seeds <target> <dir>` writes its seed corpus.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names = ledgerstore_fuzz::target_names;
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["seeds", target, dir] => match write_seeds(target, dir) {
            Ok(n) => {
                println!("{target}: {n} seeds in {dir}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("seeds for {target}: {e}");
                ExitCode::FAILURE
            }
        },
        [name] => match ledgerstore_fuzz::target(name) {
            Some(t) => {
                let run = t.run;
                afl::fuzz!(|data: &[u8]| run(data));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("no target {name:?}; the targets are {}", names());
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!(
                "usage: ledgerstore-fuzz-afl <target> | seeds <target> <dir>; the targets are {}",
                names()
            );
            ExitCode::from(2)
        }
    }
}

fn write_seeds(target: &str, dir: &str) -> Result<usize, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let seeds = ledgerstore_fuzz::seeds::seeds(target)?;
    for (name, bytes) in &seeds {
        std::fs::write(std::path::Path::new(dir).join(name), bytes)?;
    }
    Ok(seeds.len())
}
