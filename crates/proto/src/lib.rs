//! Generated protobuf messages and gRPC stubs for `ledgerstore.v1`
//! (`proto/ledgerstore/v1/ledgerstore.proto`).
#![allow(clippy::all, missing_docs)]

/// `ledgerstore.v1` messages, clients and servers.
pub mod v1 {
    tonic::include_proto!("ledgerstore.v1");

    /// Encoded file descriptor set, for server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("ledgerstore_v1_descriptor");
}
