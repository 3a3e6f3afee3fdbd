//! One module per subcommand.

pub mod bench_query;
pub mod get;
pub mod ingest;
pub mod ingest_stellar;
pub mod ops;
pub mod print;
pub mod publish;
pub mod push;
pub mod remote;
pub mod repair;
pub mod serve;
pub mod source;
pub mod stats;
pub mod writer;
