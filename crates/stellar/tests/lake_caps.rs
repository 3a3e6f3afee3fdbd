//! A lake's objects are read whole only up to a bound: a `.config.json`
//! past [`MAX_CONFIG_BYTES`] is refused before its bytes are read.

use ledgerstore_stellar::DataLake;
use ledgerstore_stellar::lake::MAX_CONFIG_BYTES;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_config_is_refused_naming_its_size_and_the_bound() {
    let dir = tempfile::tempdir().expect("tmp");
    // Valid JSON, padded past the bound: read whole, it would parse.
    let mut json =
        b"{\"networkPassphrase\": \"Test SDF Network ; September 2015\", \"pad\": \"".to_vec();
    json.resize(MAX_CONFIG_BYTES as usize + 10, b' ');
    json.extend_from_slice(b"\"}");
    std::fs::write(dir.path().join(".config.json"), &json).expect("config");
    let lake = DataLake::local(dir.path()).expect("lake");
    let e = lake.manifest().await.expect_err("too big").to_string();
    assert!(
        e.contains(".config.json")
            && e.contains(&format!("{} bytes or more", json.len()))
            && e.contains(&format!("read only up to {MAX_CONFIG_BYTES} bytes")),
        "{e}"
    );
}
