//! What the study reads from Linux's `/proc` and `/proc/sys`: the process's
//! resident memory (`/proc/self/status`), the bytes it caused to be read
//! from storage (`/proc/self/io`), and a page-cache drop for cold opens.

use serde::Serialize;

/// The process's resident memory at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MemSample {
    /// `RssAnon`: resident anonymous memory (heap, stacks, anonymous
    /// mmaps), in bytes. What the allocator and the engines hold.
    pub rss_anon_bytes: Option<u64>,
    /// `VmRSS`: all resident memory, file-backed mappings included (MDBX's
    /// mapped pages count here, not in `RssAnon`), in bytes.
    pub vm_rss_bytes: Option<u64>,
    /// `VmHWM`: the highest `VmRSS` so far (since the process started, so
    /// it carries over from one layout to the next), in bytes.
    pub vm_hwm_bytes: Option<u64>,
}

impl MemSample {
    /// Reads `/proc/self/status`; fields are `None` where it cannot be read.
    pub fn read() -> Self {
        std::fs::read_to_string("/proc/self/status")
            .map(|text| Self::parse(&text))
            .unwrap_or_default()
    }

    fn parse(status: &str) -> Self {
        Self {
            rss_anon_bytes: status_kb(status, "RssAnon:").map(|kb| kb * 1024),
            vm_rss_bytes: status_kb(status, "VmRSS:").map(|kb| kb * 1024),
            vm_hwm_bytes: status_kb(status, "VmHWM:").map(|kb| kb * 1024),
        }
    }
}

/// The value of a `Name:   123 kB` line of `/proc/self/status`, in kB.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub use ledgerstore_db_api::iostat::process_read_bytes;

/// Writes dirty pages back (`sync`) and drops the page cache, dentries and
/// inodes (`echo 3 > /proc/sys/vm/drop_caches`). False when either fails
/// (not root, read-only `/proc/sys`): the next reads are then warm.
pub fn drop_page_cache() -> bool {
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", b"3").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rss_lines_in_bytes() {
        let status = "Name:\tstudy\nVmHWM:\t  307200 kB\nVmRSS:\t  204800 kB\n\
                      RssAnon:\t   102400 kB\nRssFile:\t 1 kB\n";
        assert_eq!(
            MemSample::parse(status),
            MemSample {
                rss_anon_bytes: Some(100 << 20),
                vm_rss_bytes: Some(200 << 20),
                vm_hwm_bytes: Some(300 << 20),
            }
        );
        assert_eq!(MemSample::parse("Name:\tx\n"), MemSample::default());
    }

    #[test]
    fn reads_this_process() {
        let m = MemSample::read();
        assert!(m.vm_rss_bytes.is_some_and(|b| b > 0), "{m:?}");
        assert!(m.rss_anon_bytes.is_some_and(|b| b > 0), "{m:?}");
    }
}
