//! Records the commit and the build time for `getVersionInfo`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for p in ["HEAD", "refs/heads", "packed-refs"] {
            println!("cargo:rerun-if-changed={dir}/{p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=LEDGERSTORE_COMMIT={commit}");
    println!(
        "cargo:rustc-env=LEDGERSTORE_BUILD_TIME={}",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now())
    );
}
