//! Storage-write accounting from Linux's per-process I/O counters
//! (`/proc/self/io`). `write_bytes` counts bytes the process caused to be
//! sent to storage, charged when a page is dirtied, background threads
//! included.

/// Bytes this process has caused to be written to storage so far; `None`
/// where the kernel does not expose task I/O accounting.
pub fn process_write_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    parse_write_bytes(&text)
}

fn parse_write_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_write_bytes_line() {
        let text =
            "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_write_bytes(text), Some(8192));
        assert_eq!(parse_write_bytes("rchar: 1\n"), None);
    }
}
