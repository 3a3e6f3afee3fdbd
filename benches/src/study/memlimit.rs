//! The memory this process may use for data in the page cache: the
//! cgroup memory limit (v2 `memory.max` or v1 `memory.limit_in_bytes`) and
//! the machine's RAM. The study prints it, because whether the data fits in
//! the page cache decides the shape of the results.

use std::path::{Path, PathBuf};

/// The memory limit in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemLimit {
    /// The cgroup that sets the tightest limit, if any.
    pub cgroup: Option<String>,
    /// The tightest limit in bytes, if any.
    pub limit_bytes: Option<u64>,
    /// Physical RAM.
    pub ram_bytes: u64,
}

/// Limits at or above this mean "no limit" (cgroup v1 writes ~2^63).
const UNLIMITED: u64 = 1 << 60;

impl MemLimit {
    /// Reads the limit of the calling process.
    pub fn detect() -> Self {
        let ram_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024);
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut best: Option<(String, u64)> = None;
        for (path, file) in candidates(&cgroups) {
            if let Some(limit) = read_limit(&file)
                && best.as_ref().is_none_or(|(_, b)| limit < *b)
            {
                best = Some((path, limit));
            }
        }
        Self {
            cgroup: best.as_ref().map(|(p, _)| p.clone()),
            limit_bytes: best.map(|(_, l)| l),
            ram_bytes,
        }
    }

    /// The bytes the page cache can hold at most.
    pub fn effective_bytes(&self) -> u64 {
        self.limit_bytes
            .unwrap_or(self.ram_bytes)
            .min(self.ram_bytes)
    }

    /// One line for reports.
    pub fn render(&self) -> String {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        match (&self.cgroup, self.limit_bytes) {
            (Some(cg), Some(l)) => format!(
                "memory limit {:.1} GiB (cgroup {cg}) of {:.1} GiB RAM",
                gib(l),
                gib(self.ram_bytes)
            ),
            _ => format!("no memory limit; {:.1} GiB RAM", gib(self.ram_bytes)),
        }
    }
}

/// (cgroup path, limit file) for the process's cgroup and its ancestors,
/// from the text of `/proc/self/cgroup`.
fn candidates(proc_cgroup: &str) -> Vec<(String, PathBuf)> {
    let root = Path::new("/sys/fs/cgroup");
    let mut out = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (base, file) = match ctrl {
            "" => (root.to_path_buf(), "memory.max"),
            c if c.split(',').any(|c| c == "memory") => {
                (root.join("memory"), "memory.limit_in_bytes")
            }
            _ => continue,
        };
        let mut p = Path::new(path);
        loop {
            let rel = p.strip_prefix("/").unwrap_or(p);
            out.push((p.display().to_string(), base.join(rel).join(file)));
            match p.parent() {
                Some(parent) => p = parent,
                None => break,
            }
        }
    }
    out
}

fn read_limit(file: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let v: u64 = text.trim().parse().ok()?; // "max" does not parse: no limit
    (v < UNLIMITED).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_walk_up_both_cgroup_versions() {
        let c = candidates("4:memory:/a/b\n0::/x\n1:cpu:/y\n");
        let files: Vec<String> = c.iter().map(|(_, f)| f.display().to_string()).collect();
        assert_eq!(
            files,
            [
                "/sys/fs/cgroup/memory/a/b/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory/a/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "/sys/fs/cgroup/x/memory.max",
                "/sys/fs/cgroup/memory.max",
            ]
        );
    }

    #[test]
    fn detect_reports_ram_and_renders() {
        let m = MemLimit::detect();
        assert!(m.ram_bytes > 0);
        assert!(m.effective_bytes() <= m.ram_bytes);
        assert!(m.render().contains("GiB RAM"), "{}", m.render());
    }
}
