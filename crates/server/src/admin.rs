//! The Admin service: online backup.

use std::path::PathBuf;
use std::sync::Arc;

use ledgerstore_proto::v1 as pb;
use tonic::{Request, Response, Status};

use crate::ingest::Authorizer;
use crate::state::AppState;
use crate::status::{from_store, internal_join};

/// Admin service.
pub struct AdminService {
    state: Arc<AppState>,
    auth: Authorizer,
}

impl AdminService {
    /// A service over `state`, guarded like Ingest by `token`.
    pub fn new(state: Arc<AppState>, token: Option<String>) -> Self {
        Self {
            state,
            auth: Authorizer::new(token),
        }
    }
}

#[tonic::async_trait]
impl pb::admin_server::Admin for AdminService {
    async fn backup(
        &self,
        req: Request<pb::BackupRequest>,
    ) -> Result<Response<pb::BackupResponse>, Status> {
        self.auth.check(&req)?;
        let dest = PathBuf::from(&req.get_ref().dest);
        if !dest.is_absolute() {
            return Err(Status::invalid_argument(format!(
                "dest: must be an absolute path on the daemon's host, got {:?}",
                req.get_ref().dest
            )));
        }
        let store = self.state.store()?;
        tracing::info!(dest = %dest.display(), "backup started");
        let info = tokio::task::spawn_blocking(move || store.backup(&dest))
            .await
            .map_err(internal_join)?
            .map_err(|e| from_store(&e))?;
        tracing::info!(
            mark = ?info.mark,
            bytes = info.bytes,
            pause_s = info.pause_s,
            total_s = info.total_s,
            "backup written"
        );
        Ok(Response::new(pb::BackupResponse {
            dest: req.get_ref().dest.clone(),
            layout: info.layout.name().to_string(),
            has_mark: info.mark.is_some(),
            mark: info.mark.unwrap_or(0),
            txs: info.txs,
            bytes: info.bytes,
            pause_seconds: info.pause_s,
            total_seconds: info.total_s,
        }))
    }
}
