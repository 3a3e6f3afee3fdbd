//! A fault-injecting wrapper around the real engines, for the store's
//! tests: failures come from the real code paths, never from mocks.

use std::path::Path;
use std::sync::{Arc, Mutex};

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{
    Access, CommitTiming, DbError, DbResult, EngineFactory, EngineKind, EngineStats, KvStore,
    KvWrite, Layout, TableBackup, TableId, ValueCompression,
};

/// Faults a wrapped engine injects.
#[derive(Clone, Default)]
pub(crate) struct Faults {
    /// The next commit to this table fails with ENOSPC.
    pub(crate) fail_commit: Arc<Mutex<Option<TableId>>>,
    /// The next commit to this table goes through in the engine, then
    /// reports ENOSPC (the store must roll back what the engine took).
    pub(crate) fail_after_commit: Arc<Mutex<Option<TableId>>>,
    /// The next put to this table panics.
    pub(crate) panic_put: Arc<Mutex<Option<TableId>>>,
    /// A cold page cache under `mdbx.max_read_txn_ms`: a read transaction
    /// that asks for more keys than one bound's worth of random reads
    /// (5 s at 1 ms a read) gives up, as the real engine would.
    pub(crate) max_keys_per_read: Option<usize>,
}

/// Takes the fault armed for `id` in `slot`, if any.
fn take(slot: &Mutex<Option<TableId>>, id: TableId) -> bool {
    slot.lock().is_ok_and(|mut t| {
        let hit = *t == Some(id);
        if hit {
            *t = None;
        }
        hit
    })
}

/// The real engines, wrapped to inject [`Faults`].
pub(crate) struct FaultyEngines {
    pub(crate) inner: Backends,
    pub(crate) faults: Faults,
}

struct FaultyStore {
    inner: Box<dyn KvStore>,
    id: TableId,
    faults: Faults,
}

struct FaultyWrite<'a> {
    inner: Box<dyn KvWrite + 'a>,
    id: TableId,
    faults: Faults,
}

impl KvWrite for FaultyWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> DbResult<()> {
        assert!(
            !take(&self.faults.panic_put, self.id),
            "injected: a writer panics"
        );
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &[u8]) -> DbResult<()> {
        self.inner.delete(key)
    }
    fn put_sorted(&mut self, pairs: &[(&[u8], &[u8])]) -> DbResult<()> {
        assert!(
            !take(&self.faults.panic_put, self.id),
            "injected: a writer panics"
        );
        // The engine's own bulk path, not one put at a time.
        self.inner.put_sorted(pairs)
    }
    fn finish(&mut self) -> DbResult<()> {
        self.inner.finish()
    }
    fn commit(self: Box<Self>) -> DbResult<CommitTiming> {
        if take(&self.faults.fail_commit, self.id) {
            return Err(DbError::StorageFull {
                engine: "test",
                table: self.id.name().to_string(),
                detail: "injected: No space left on device".into(),
            });
        }
        let after = take(&self.faults.fail_after_commit, self.id);
        let timing = self.inner.commit()?;
        if after {
            return Err(DbError::StorageFull {
                engine: "test",
                table: self.id.name().to_string(),
                detail: "injected after the commit: No space left on device".into(),
            });
        }
        Ok(timing)
    }
}

impl KvStore for FaultyStore {
    fn table(&self) -> &str {
        self.inner.table()
    }
    fn engine(&self) -> EngineKind {
        self.inner.engine()
    }
    fn durable_only_on_commit(&self) -> bool {
        self.inner.durable_only_on_commit()
    }
    fn begin_write(&self) -> DbResult<Box<dyn KvWrite + '_>> {
        Ok(Box::new(FaultyWrite {
            inner: self.inner.begin_write()?,
            id: self.id,
            faults: self.faults.clone(),
        }))
    }
    fn get(&self, key: &[u8]) -> DbResult<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn multi_get(&self, keys: &[&[u8]]) -> DbResult<Vec<Option<Vec<u8>>>> {
        if let Some(max) = self.faults.max_keys_per_read
            && keys.len() > max
        {
            return Err(DbError::ReadTimeout {
                table: self.inner.table().to_string(),
                held_ms: keys.len() as u64,
                max_ms: max as u64,
            });
        }
        self.inner.multi_get(keys)
    }
    fn scan(&self, from: &[u8], limit: usize) -> DbResult<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.scan(from, limit)
    }
    fn stats(&self) -> DbResult<EngineStats> {
        self.inner.stats()
    }
    fn begin_backup(&self, dest: &Path) -> DbResult<Box<dyn TableBackup + '_>> {
        self.inner.begin_backup(dest)
    }
}

impl EngineFactory for FaultyEngines {
    fn open_table(
        &self,
        layout: Layout,
        id: TableId,
        path: &Path,
        access: Access,
        compression: ValueCompression,
    ) -> DbResult<Box<dyn KvStore>> {
        Ok(Box::new(FaultyStore {
            inner: self
                .inner
                .open_table(layout, id, path, access, compression)?,
            id,
            faults: self.faults.clone(),
        }))
    }
}
