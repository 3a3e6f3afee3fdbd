//! Generates the ledgerstore.v1 gRPC code. protoc comes from the
//! protoc-bin-vendored crate unless PROTOC is set: no manual install step.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = match std::env::var_os("PROTOC") {
        Some(p) => PathBuf::from(p),
        None => protoc_bin_vendored::protoc_bin_path()?,
    };
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let proto = root.join("ledgerstore/v1/ledgerstore.proto");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("ledgerstore_v1_descriptor.bin"))
        .compile_with_config(config, std::slice::from_ref(&proto), &[root])?;
    println!("cargo:rerun-if-changed={}", proto.display());
    Ok(())
}
