//! Online backup of one MDBX environment: a compacting copy made from a
//! read transaction, so it is exactly the snapshot that transaction saw,
//! while the writer keeps committing.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use ledgerstore_db_api::{DbError, DbResult, TableBackup, dir_size};
use libmdbx::{NoWriteMap, RO, Transaction};

use crate::{MdbxStore, err};

/// File name of an environment's data file (`MDBX_DATANAME`).
pub const DATA_FILE: &str = "mdbx.dat";

/// A snapshot fixed by a read transaction, copied by [`TableBackup::finish`].
pub(crate) struct MdbxBackup<'a> {
    pub(crate) store: &'a MdbxStore,
    /// Registered as a reader (shown as the oldest), never timed out.
    pub(crate) _read: crate::readers::ReadGuard<'a>,
    pub(crate) txn: Transaction<'a, RO, NoWriteMap>,
    pub(crate) dest: PathBuf,
}

impl TableBackup for MdbxBackup<'_> {
    fn finish(self: Box<Self>) -> DbResult<u64> {
        std::fs::create_dir_all(&self.dest).map_err(|source| DbError::Io {
            context: format!("creating {}", self.dest.display()),
            source,
        })?;
        let file = self.dest.join(DATA_FILE);
        copy(&self.txn, &file).map_err(|e| err(&self.store.table, e))?;
        Ok(dir_size(&self.dest))
    }
}

/// `mdbx_txn_copy2pathname` with `MDBX_CP_COMPACT`: writes the pages the
/// transaction can see, in order, without free pages, then fsyncs.
#[allow(unsafe_code)]
fn copy(txn: &Transaction<'_, RO, NoWriteMap>, file: &Path) -> Result<(), libmdbx::Error> {
    let path =
        CString::new(file.as_os_str().as_encoded_bytes()).map_err(|_| libmdbx::Error::Invalid)?;
    // SAFETY: the transaction is live for the whole call and used by this
    // thread only (we hold `&txn` and never share it); `path` is a valid
    // NUL-terminated string that outlives the call.
    let rc = unsafe {
        mdbx_sys::mdbx_txn_copy2pathname(txn.txn().0, path.as_ptr(), mdbx_sys::MDBX_CP_COMPACT)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(libmdbx::Error::from_err_code(rc))
    }
}
