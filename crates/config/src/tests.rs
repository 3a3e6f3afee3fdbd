use super::*;

/// Held by every test that loads a config: `Config::load` reads the
/// process environment, which `file_then_env_then_flags` sets, and tests
/// run on parallel threads (an example config loaded while that test's
/// variable is set would take its value).
fn env_lock() -> std::sync::MutexGuard<'static, ()> {
    static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ENV.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn defaults_are_valid_and_secure() {
    let c = Config::default();
    c.validate().expect("defaults validate");
    assert!(c.grpc.listen.starts_with("127.0.0.1:"));
    assert!(c.metrics.listen.starts_with("127.0.0.1:"));
    assert_eq!(c.db.path, PathBuf::from("./ledgerstore-data"));
    // The rendered default parses back to itself.
    let back: Config = toml::from_str(&c.to_toml()).expect("toml");
    assert_eq!(back, c);
}

#[test]
#[allow(unsafe_code)]
fn file_then_env_then_flags() {
    let _env = env_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "[db]\npath = \"/from/file\"\nzstd_level = 5\n[grpc]\nlisten = \"127.0.0.1:1\"\n[ingest]\nbulk_batch_ledgers = 7\n",
    )
    .expect("write");
    // Env and flags are set through figment's Jail-free path: the env
    // provider reads the process env, so use a key no other test touches.
    // SAFETY: every test that reads the environment holds `env_lock`.
    unsafe { std::env::set_var("LEDGERSTORE_INGEST__BULK_BATCH_LEDGERS", "9") };
    // A client's variable with the same prefix is not config.
    unsafe { std::env::set_var("LEDGERSTORE_INGEST_TOKEN", "for-the-push-client") };
    let c = Config::load(
        Some(&file),
        &[("db.path", toml::Value::String("/from/flag".into()))],
    )
    .expect("load");
    unsafe { std::env::remove_var("LEDGERSTORE_INGEST__BULK_BATCH_LEDGERS") };
    unsafe { std::env::remove_var("LEDGERSTORE_INGEST_TOKEN") };
    assert_eq!(c.db.path, PathBuf::from("/from/flag"), "flag beats file");
    assert_eq!(c.db.zstd_level, 5, "file beats default");
    assert_eq!(c.ingest.bulk_batch_ledgers, 9, "env beats file");
    assert_eq!(c.grpc.listen, "127.0.0.1:1");
}

/// The error `Config::load` refuses `toml` (written to `file`) with.
fn refused(file: &std::path::Path, toml: &str) -> String {
    std::fs::write(file, toml).expect("write");
    match Config::load(Some(file), &[]) {
        Ok(_) => panic!("accepted: {toml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_values_name_the_key_and_the_expected_range() {
    let _env = env_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.toml");
    let e = refused(&file, "[grpc]\nlisten = \"localhost\"\n");
    assert!(e.contains("grpc.listen = localhost: an IP:port"), "{e}");

    let e = refused(&file, "[db]\nzstd_level = 40\n");
    assert!(e.contains("db.zstd_level = 40: 1 to 22"), "{e}");

    for n in ["0", "19", "-2", "1048577"] {
        let e = refused(&file, &format!("[rocksdb]\nmax_open_files = {n}\n"));
        assert!(
            e.contains(&format!(
                "rocksdb.max_open_files = {n}: -1 (every file) or 20 to 1048576"
            )),
            "{e}"
        );
    }
    for n in [-1, 20, 1 << 20] {
        std::fs::write(&file, format!("[rocksdb]\nmax_open_files = {n}\n")).expect("write");
        let c = Config::load(Some(&file), &[]).expect("a valid max_open_files");
        assert_eq!(c.rocksdb.max_open_files, Some(n));
    }

    let e = refused(&file, "[cold]\npublish_threads = 257\n");
    assert!(
        e.contains("cold.publish_threads = 257: 0 (automatic) to 256"),
        "{e}"
    );
    let e = refused(&file, "[cold]\npack_version = 5\n");
    assert!(e.contains("cold.pack_version = 5: 2 (a frame"), "{e}");
    std::fs::write(&file, "[cold]\npack_version = 4\n").expect("write");
    let c = Config::load(Some(&file), &[]).expect("version 4");
    assert_eq!((c.cold.pack_version, c.cold.pack_dict_kib), (4, 1024));
    std::fs::write(&file, "[cold]\n").expect("write");
    let c = Config::load(Some(&file), &[]).expect("unset");
    assert_eq!(c.cold.pack_version, 0, "unset: 0, the store's own");
    // `config show` prints it (0), and what it prints reads back.
    let shown = c.to_toml();
    assert!(shown.contains("\npack_version = 0\n"), "{shown}");
    std::fs::write(&file, &shown).expect("write");
    assert_eq!(Config::load(Some(&file), &[]).expect("shown"), c);
    std::fs::write(&file, "[cold]\npack_version = 0\n").expect("write");
    let c = Config::load(Some(&file), &[]).expect("0: the store's own");
    assert_eq!(c.cold.pack_version, 0);
    let e = refused(&file, "[cold]\npack_version = 1\n");
    assert!(e.contains("or 0 or unset (the store's own"), "{e}");
    for kib in [0, 63, 16385] {
        let e = refused(&file, &format!("[cold]\npack_dict_kib = {kib}\n"));
        assert!(
            e.contains(&format!("cold.pack_dict_kib = {kib}: 64 to 16384 (KiB)")),
            "{e}"
        );
    }
    let e = refused(&file, "[cold]\npack_zstd_level = 0\n");
    assert!(
        e.contains("cold.pack_zstd_level = 0: a zstd level, 1 to 22"),
        "{e}"
    );
    std::fs::write(&file, "[cold]\npublish_threads = 256\n").expect("write");
    let c = Config::load(Some(&file), &[]).expect("256 publish threads");
    assert_eq!(c.cold.publish_threads_for(false), 256);
    let auto = crate::ColdConfig::default();
    assert!(auto.publish_threads_for(true) >= auto.publish_threads_for(false));
    assert!(auto.publish_threads_for(false) >= 1);

    let e = refused(&file, "[db]\nnot_a_key = 1\n");
    assert!(e.contains("not_a_key"), "{e}");

    let e = refused(&file, "[stellar]\nnetwork = \"pubnett\"\n");
    assert!(e.contains("stellar.network = pubnett"), "{e}");
    assert!(e.contains("standalone"), "{e}");
    std::fs::write(&file, "[stellar]\nnetwork = \"My Net ; 2026\"\n").expect("write");
    assert!(
        Config::load(Some(&file), &[]).is_ok(),
        "a passphrase is a network"
    );

    let e = refused(
        &file,
        "[replica]\nstore = \"s3://b/p\"\ncache_dir = \"/srv/r\"\nevents_dir = \"/srv/r/events\"\n",
    );
    assert!(
        e.contains("replica.events_dir = /srv/r/events: a directory apart from replica.cache_dir"),
        "{e}"
    );

    let e = refused(&file, "[query]\nread_threads = 0\n");
    assert!(e.contains("query.read_threads = 0: 1 to 256"), "{e}");

    let e = refused(&file, "[replica]\ndict_memory_mb = 1048577\n");
    assert!(
        e.contains("replica.dict_memory_mb = 1048577: 0 to 1048576 (MiB)"),
        "{e}"
    );
    for mb in [0, 1048577] {
        let e = refused(&file, &format!("[replica]\nbatch_memory_mb = {mb}\n"));
        assert!(
            e.contains(&format!(
                "replica.batch_memory_mb = {mb}: 1 to 1048576 (MiB)"
            )),
            "{e}"
        );
    }
    for n in [0, 1025] {
        let e = refused(&file, &format!("[replica]\nbatch_gets_in_flight = {n}\n"));
        assert!(
            e.contains(&format!("replica.batch_gets_in_flight = {n}: 1 to 1024")),
            "{e}"
        );
    }
    std::fs::write(
        &file,
        "[replica]\nframe_memory_mb = 0\ndict_memory_mb = 512\nbatch_memory_mb = 1\n\
         batch_gets_in_flight = 1024\n",
    )
    .expect("write");
    let c = Config::load(Some(&file), &[]).expect("no frames kept, 512 MiB of dictionaries");
    assert_eq!(c.replica.frame_memory_bytes(), 0);
    assert_eq!(c.replica.dict_memory_bytes(), 512 << 20);
    assert_eq!(c.replica.batch_memory_bytes(), 1 << 20);
    assert_eq!(c.replica.batch_gets_in_flight, 1024);

    let e = Config::load(Some(&dir.path().join("missing.toml")), &[]).expect_err("missing");
    assert!(e.to_string().contains("an existing TOML file"), "{e}");

    for (toml, want) in [
        (
            "[lake]\ncredentials = \"iam\"\n",
            "lake.credentials = iam: auto, anonymous, env or instance",
        ),
        (
            "[lake]\nendpoint = \"127.0.0.1:7070\"\n",
            "lake.endpoint = 127.0.0.1:7070: an http:// or https:// URL",
        ),
        ("[lake]\nread_ahead = 0\n", "lake.read_ahead = 0: 1 to 256"),
        (
            "[lake]\ndecoded_ahead_mib = 0\n",
            "lake.decoded_ahead_mib = 0: 1 to 65536",
        ),
        (
            "[ingest]\nbulk_batch_mib = 0\n",
            "ingest.bulk_batch_mib = 0: 1 to 65536",
        ),
        (
            "[lake]\nbackoff_initial_ms = 500\nbackoff_max_ms = 100\n",
            "lake.backoff_max_ms = 100: at least lake.backoff_initial_ms (500)",
        ),
        (
            "[follow]\npoll_ms = 1\n",
            "follow.poll_ms = 1: 10 to 3600000",
        ),
        (
            "[lake]\naccess_key_id = \"AKIA\"\n",
            "both lake.access_key_id and lake.secret_access_key_file, or neither",
        ),
        (
            "[jsonrpc]\nmax_page_bytes = 100\n",
            "jsonrpc.max_page_bytes = 100: 65536 to jsonrpc.max_response_bytes (67108864)",
        ),
        (
            "[jsonrpc]\nmax_response_bytes = 2097152\nmax_page_bytes = 4194304\n",
            "jsonrpc.max_page_bytes = 4194304: 65536 to jsonrpc.max_response_bytes (2097152)",
        ),
        (
            "[jsonrpc]\nmax_response_bytes = 2097152\nmax_page_bytes = 1048576\nmax_batch_bytes = 4194304\n",
            "jsonrpc.max_batch_bytes = 4194304: 65536 to jsonrpc.max_response_bytes (2097152) less 1024 bytes for each of jsonrpc.max_batch_calls (100): 1994752",
        ),
        (
            "[jsonrpc]\nmax_response_bytes = 1048576\nmax_page_bytes = 1048576\nmax_batch_bytes = 1048576\n",
            "jsonrpc.max_batch_bytes = 1048576: 65536 to jsonrpc.max_response_bytes (1048576) less 1024 bytes for each of jsonrpc.max_batch_calls (100): 946176",
        ),
        (
            "[grpc]\nmax_connections = 0\n",
            "grpc.max_connections = 0: 1 to 1000000",
        ),
        (
            "[grpc]\nmax_message_bytes = 65536\nmax_unsent_bytes = 524288\n",
            "grpc.max_unsent_bytes = 524288: grpc.max_message_bytes + 1 MiB (1114112) to 1099511627776",
        ),
        (
            "[jsonrpc]\nmax_connections_per_ip = 1000001\n",
            "jsonrpc.max_connections_per_ip = 1000001: 0 (off) to 1000000",
        ),
        (
            "[grpc]\nmax_connections_per_ip = 1000001\n",
            "grpc.max_connections_per_ip = 1000001: 0 (off) to 1000000",
        ),
        (
            "[grpc]\nsend_timeout_ms = 100\n",
            "grpc.send_timeout_ms = 100: 1000 to 3600000",
        ),
        (
            "[grpc]\nhandshake_timeout_ms = 10\n",
            "grpc.handshake_timeout_ms = 10: 100 to 600000",
        ),
        (
            "[grpc]\nmax_message_bytes = 70000\n[query]\nmax_batch_hashes = 1001\n",
            "query.max_batch_hashes = 1001: at most grpc.max_message_bytes / 70 = 1000",
        ),
        (
            "[jsonrpc]\nmax_heavy_calls = 0\n",
            "jsonrpc.max_heavy_calls = 0: 1 to 1024",
        ),
        (
            "[jsonrpc]\nmax_page_ledgers = 0\n",
            "jsonrpc.max_page_ledgers = 0: 1 to 10000",
        ),
        (
            "[jsonrpc]\nmax_unsent_bytes = 8388608\n",
            "jsonrpc.max_unsent_bytes = 8388608: jsonrpc.max_page_bytes and jsonrpc.max_batch_bytes (16777216) to 1099511627776",
        ),
        (
            "[jsonrpc]\nsend_timeout_ms = 0\n",
            "jsonrpc.send_timeout_ms = 0: 100 to 3600000",
        ),
        (
            "[jsonrpc]\nmax_queued_heavy_calls = 100001\n",
            "jsonrpc.max_queued_heavy_calls = 100001: 0 to 100000",
        ),
        (
            "[events]\nfile_ledgers = 0\n",
            "events.file_ledgers = 0: 1 to 65536",
        ),
        (
            "[events]\nfile_ledgers = 70000\n",
            "events.file_ledgers = 70000: 1 to 65536",
        ),
        ("[events]\nfan_out = 1\n", "events.fan_out = 1: 2 to 1024"),
        (
            "[segments]\nblock_kib = 2\n",
            "segments.block_kib = 2: 4..=16384",
        ),
        (
            "[segments]\nbulk_block_kib = 32768\n",
            "segments.bulk_block_kib = 32768: 4..=16384",
        ),
        (
            "[segments]\nbulk_zstd_level = 0\n",
            "segments.bulk_zstd_level = 0: 1 to 22",
        ),
        (
            "[segments]\nbulk_block_kib = 2048\nblock_dict_kib = 64\n",
            "segments.bulk_block_kib = 2048: 4..=1024 while segments.block_dict_kib is above 0",
        ),
        (
            "[segments]\nblock_dict_kib = 2048\n",
            "segments.block_dict_kib = 2048: 0..=1024",
        ),
        (
            "[segments]\nblock_kib = 8192\nblock_dict_kib = 64\n",
            "segments.block_kib = 8192: 4..=4096 while segments.block_dict_kib is above 0",
        ),
        (
            "[segments]\nblock_dict = \"sample\"\n",
            "expected ``trained` or `samples`` for key \"default.segments.block_dict\"",
        ),
        (
            "[segments]\nbodies = \"block\"\n",
            "expected ``records` or `blocks`` for key \"default.segments.bodies\"",
        ),
    ] {
        std::fs::write(&file, toml).expect("write");
        let e = Config::load(Some(&file), &[]).expect_err(toml).to_string();
        assert!(e.contains(want), "{toml}: {e}");
    }
}

#[test]
fn the_example_config_is_the_defaults() {
    let _env = env_lock();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/ledgerstore.example.toml");
    let c = Config::load(Some(&example), &[]).expect("example loads");
    assert_eq!(
        c,
        Config::default(),
        "deploy/ledgerstore.example.toml drifted from the defaults"
    );
}
