//! Which form a publish round writes new packs in: one the operator set
//! (`[cold] pack_version`), or the store's own (its newest pack's
//! version), so a store keeps its version across an upgrade and a new
//! store gets the smallest.

use ledgerstore_pack::format::{HEADER, MAGIC, VERSION_4};
use ledgerstore_pack::{Manifest, PackForm};

use crate::error::{ColdError, ColdResult};
use crate::remote::Remote;

/// What a publisher writes new packs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackChoice {
    /// Every new pack in this form (`[cold] pack_version` set).
    Fixed(PackForm),
    /// The version of the store's newest pack, read from its header;
    /// version 4 for a store with no pack yet. `level` and `dict_kib`
    /// (`pack_zstd_level`, `pack_dict_kib`) are used where the version
    /// has them.
    StoresOwn {
        /// The zstd level of version-3 and 4 frames.
        level: i32,
        /// Version 4's dictionary budget, KiB.
        dict_kib: u32,
    },
}

impl From<PackForm> for PackChoice {
    fn from(form: PackForm) -> Self {
        Self::Fixed(form)
    }
}

impl PackChoice {
    /// The form this round writes in, after `prev`, the store's newest
    /// manifest. A store's own version costs one read of its newest
    /// pack's header (64 bytes).
    pub(crate) async fn resolve(
        self,
        remote: &Remote,
        prev: Option<&Manifest>,
    ) -> ColdResult<PackForm> {
        let (level, dict_kib) = match self {
            Self::Fixed(form) => return Ok(form),
            Self::StoresOwn { level, dict_kib } => (level, dict_kib),
        };
        let Some(newest) = prev.and_then(|m| m.packs.last()) else {
            return Ok(PackForm::Frames { level, dict_kib });
        };
        let key = &newest.object.key;
        let bytes = remote.get_range(key, 0..HEADER).await.map_err(why)?;
        if bytes.starts_with(MAGIC)
            && let Some(v) = bytes.get(8..12).and_then(|b| <[u8; 4]>::try_from(b).ok())
            && u32::from_be_bytes(v) > VERSION_4
        {
            return Err(ColdError::NotReady(format!(
                "the store's newest pack {key} is version {}, which this build does not know (a \
                 newer build's pack, or a damaged header); it writes versions 2 to 4: set \
                 cold.pack_version to 2, 3 or 4 (one that every replica reads) to go on \
                 publishing",
                u32::from_be_bytes(v)
            )));
        }
        let header = newest
            .header(&bytes)
            .map_err(|e| why(ColdError::damaged(key, e)))?;
        Ok(Self::form_of(header.version, level, dict_kib))
    }

    /// The form that goes on writing packs of `version` (version 1, the
    /// first, goes on as version 2).
    fn form_of(version: u32, level: i32, dict_kib: u32) -> PackForm {
        match version {
            3 => PackForm::Frames { level, dict_kib: 0 },
            4 => PackForm::Frames { level, dict_kib },
            _ => PackForm::Entries,
        }
    }
}

/// `e`, from reading the newest pack's header, saying why it was read and
/// how to publish without it.
fn why(e: ColdError) -> ColdError {
    e.map_detail(|d| {
        format!(
            "{d} (read because cold.pack_version is unset or 0, so new packs go on in the \
             version of the store's newest pack; set cold.pack_version to 2, 3 or 4 to publish \
             without reading it)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_goes_on_as_itself() {
        let f = |v| PackChoice::form_of(v, 7, 512);
        assert_eq!(f(1), PackForm::Entries);
        assert_eq!(f(2), PackForm::Entries);
        assert_eq!(
            f(3),
            PackForm::Frames {
                level: 7,
                dict_kib: 0
            }
        );
        assert_eq!(
            f(4),
            PackForm::Frames {
                level: 7,
                dict_kib: 512
            }
        );
    }
}
