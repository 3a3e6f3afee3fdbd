//! Storage I/O accounting from Linux's per-process I/O counters
//! (`/proc/self/io`). `write_bytes` counts bytes the process caused to be
//! sent to storage, charged when a page is dirtied; `read_bytes`, bytes it
//! caused to be read from storage (page-cache misses, not `read()` calls).
//! Background threads are included in both.

/// Bytes this process has caused to be written to storage so far; `None`
/// where the kernel does not expose task I/O accounting.
pub fn process_write_bytes() -> Option<u64> {
    io_counter("write_bytes:")
}

/// Bytes this process has caused to be read from storage so far; `None`
/// where the kernel does not expose task I/O accounting.
pub fn process_read_bytes() -> Option<u64> {
    io_counter("read_bytes:")
}

fn io_counter(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    parse_counter(&text, field)
}

fn parse_counter(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_write_bytes_line() {
        let text =
            "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_counter(text, "write_bytes:"), Some(8192));
        assert_eq!(parse_counter(text, "read_bytes:"), Some(4096));
        assert_eq!(parse_counter("rchar: 1\n", "write_bytes:"), None);
    }
}
