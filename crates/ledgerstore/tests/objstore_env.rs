//! The standard S3 endpoint variables (`AWS_ENDPOINT_URL_S3`,
//! `AWS_ENDPOINT_URL`, `AWS_ENDPOINT`), against a real versitygw on
//! 127.0.0.1: an `s3://` lake is read from the server they name, the most
//! specific one wins, a configured `--lake.endpoint` wins over all of them,
//! and one that cannot be used is refused by name, never replaced by AWS.

mod common;
mod lake_util;

use std::path::Path;
use std::process::Output;

use common::*;
use lake_util::*;

const LAKE: &str = "s3://lake/v1.1/pubnet";

/// Every variable that could send a request elsewhere, removed from the
/// host's environment.
const HOST_VARS: [&str; 12] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT",
    "AWS_ALLOW_HTTP",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
];

/// `ingest --stellar-datalake s3://lake/v1.1/pubnet` of the last two
/// ledgers, with `extra` flags and exactly `env` set.
fn ingest(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = bin();
    c.args(["ingest", "--no-progress", "--data-dir"])
        .arg(dir)
        .args(["--stellar-datalake", LAKE, "--from", "63093000"])
        // A request sent to the wrong place fails fast.
        .args([
            "--lake.max-retries",
            "0",
            "--lake.connect-timeout-ms",
            "2000",
        ])
        .args(extra)
        .args(small_engine_flags());
    for v in HOST_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    run(c)
}

fn ok(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what}: {}\n{}", stdout(o), stderr(o));
    let out = stdout(o);
    assert!(
        out.contains("2 files, ledgers 63093000..=63093001"),
        "{what}: {out}"
    );
    out
}

#[test]
fn the_standard_endpoint_variables_send_s3_requests_to_the_server_they_name() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("s3");
    write_lake(&root.join("lake").join("v1.1/pubnet"), LAST);
    let server = s3_server(&versitygw, &root);
    let url = server.url();
    // Nothing listens here: a request sent to it fails.
    let dead = format!("http://127.0.0.1:{}", free_port());
    let keys = [
        ("AWS_ACCESS_KEY_ID", S3_KEY),
        ("AWS_SECRET_ACCESS_KEY", S3_SECRET),
    ];
    let with = |extra: &[(&'static str, &str)]| -> Vec<(&str, String)> {
        keys.iter()
            .map(|(k, v)| (*k, v.to_string()))
            .chain(extra.iter().map(|(k, v)| (*k, v.to_string())))
            .collect()
    };
    let run_with = |name: &str, flags: &[&str], env: Vec<(&str, String)>| {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        ingest(&tmp.path().join(name), flags, &env)
    };
    let allow = ["--lake.allow-http"];

    // Only AWS_ENDPOINT_URL and the keys: read from the local server, in
    // the default mode (auto) and in env.
    ok(
        &run_with("a", &allow, with(&[("AWS_ENDPOINT_URL", &url)])),
        "AWS_ENDPOINT_URL, auto",
    );
    ok(
        &run_with(
            "b",
            &[&allow[..], &["--lake.credentials", "env"]].concat(),
            with(&[("AWS_ENDPOINT_URL", &url)]),
        ),
        "AWS_ENDPOINT_URL, env",
    );
    // The older name.
    ok(
        &run_with("c", &allow, with(&[("AWS_ENDPOINT", &url)])),
        "AWS_ENDPOINT",
    );
    // The service-specific variable wins over the general one.
    ok(
        &run_with(
            "d",
            &allow,
            with(&[("AWS_ENDPOINT_URL_S3", &url), ("AWS_ENDPOINT_URL", &dead)]),
        ),
        "AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL",
    );
    // A configured endpoint wins over every variable.
    ok(
        &run_with(
            "e",
            &[&allow[..], &["--lake.endpoint", &url]].concat(),
            with(&[("AWS_ENDPOINT_URL_S3", &dead), ("AWS_ENDPOINT_URL", &dead)]),
        ),
        "--lake.endpoint over the variables",
    );

    // Plain http needs --lake.allow-http whichever way it was set; the
    // refusal names the variable, and nothing goes anywhere else.
    let o = run_with("f", &[], with(&[("AWS_ENDPOINT_URL", &url)]));
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("AWS_ENDPOINT_URL"), "{err}");
    assert!(err.contains("lake.allow_http"), "{err}");
    assert!(!err.contains("amazonaws.com"), "{err}");
    let o = run_with("g", &allow, with(&[("AWS_ENDPOINT_URL", "127.0.0.1:1")]));
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("AWS_ENDPOINT_URL = \"127.0.0.1:1\" is not an http:// or https:// URL"),
        "{err}"
    );
}
