//! The `cache-isolated` check: a file written inside to each cache that is
//! not written through must not appear in the host's directory. The probe
//! writes it (inside); verify looks for it on the host afterwards and takes
//! it out of the workspace's layer again.

use super::Check;
use crate::plan::{CacheHow, CacheMount};
use std::path::{Path, PathBuf};

const N: &str = "cache-isolated";
const T: &str = "a write to a cache stays off the host";

/// The caches, and the home when it is overlaid (`--home overlay`: its
/// writes must stay off the host as a cache's do).
pub(super) fn with_home(layers: &crate::plan::Layers) -> Vec<CacheMount> {
    let mut v = layers.caches.clone();
    if let Some(h) = &layers.home_overlay {
        v.push(CacheMount {
            path: h.home.clone(),
            source: "--home overlay".into(),
            created: false,
            how: CacheHow::InHome(h.clone()),
        });
    }
    v
}

/// The caches to write into from inside (all but the shared ones).
pub(super) fn targets(caches: &[CacheMount]) -> Vec<PathBuf> {
    caches
        .iter()
        .filter(|c| c.how != CacheHow::Shared)
        .map(|c| c.path.clone())
        .collect()
}

/// Inside: writes `tag` into each cache.
pub(super) fn write(roots: &[PathBuf], tag: &str) -> Check {
    for r in roots {
        if let Err(e) = std::fs::write(r.join(tag), "qwrap-verify\n") {
            return Check::fail(
                N,
                T,
                "a file written in each cache",
                format!("{}: {e}", r.display()),
            );
        }
    }
    Check::pass(N, T)
}

/// On the host, after the probe: FAIL when a tag reached a host cache;
/// SKIP when there is nothing to check. The tags are removed either way.
pub(super) fn settle(checks: &mut Vec<Check>, caches: &[CacheMount], tag: &str) {
    let mut reached = Vec::new();
    for c in caches {
        let on_host = c.path.join(tag);
        if c.how != CacheHow::Shared && on_host.exists() {
            reached.push(on_host.display().to_string());
            let _ = std::fs::remove_file(&on_host);
        }
        match &c.how {
            CacheHow::Overlay { upper, .. } | CacheHow::Bare { upper } => {
                let _ = std::fs::remove_file(Path::new(upper).join(tag));
            }
            CacheHow::InHome(h) => {
                let rel = c.path.strip_prefix(&h.home).unwrap_or(Path::new(""));
                let _ = std::fs::remove_file(h.upper.join(rel).join(tag));
            }
            _ => {}
        }
    }
    let check = if caches.is_empty() {
        Check::skip(N, T, "no cache outside the workspace".into())
    } else if caches.iter().all(|c| c.how == CacheHow::Shared) {
        Check::skip(
            N,
            T,
            "--cache shared: the caches are written through by choice".into(),
        )
    } else if !reached.is_empty() {
        Check::fail(N, T, "no file on the host", reached.join(", "))
    } else {
        match checks.iter().position(|c| c.name == N) {
            Some(i) => checks.remove(i),
            None => Check::fail(N, T, "the probe's write", "the probe did not write".into()),
        }
    };
    checks.retain(|c| c.name != N);
    checks.push(check);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Outcome;

    fn mount(path: &Path, how: CacheHow) -> CacheMount {
        CacheMount {
            path: path.to_path_buf(),
            source: "test".into(),
            created: false,
            how,
        }
    }

    #[test]
    fn a_tag_on_the_host_fails_and_every_tag_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let (host, upper) = (d.path().join("host"), d.path().join("layer/upper"));
        std::fs::create_dir_all(&host).unwrap();
        std::fs::create_dir_all(&upper).unwrap();
        let caches = vec![mount(&host, CacheHow::Bare { upper: upper.clone() })];
        std::fs::write(upper.join(".t"), "x").unwrap();
        let mut checks = vec![Check::pass(N, T)];
        settle(&mut checks, &caches, ".t");
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].outcome, Outcome::Pass);
        assert!(!upper.join(".t").exists(), "removed from the layer");
        // The same write seen on the host: a FAIL naming it, and removed.
        std::fs::write(host.join(".t"), "x").unwrap();
        let mut checks = vec![Check::pass(N, T)];
        settle(&mut checks, &caches, ".t");
        assert_eq!(checks[0].outcome, Outcome::Fail);
        assert!(!host.join(".t").exists());
        let mut checks = vec![];
        settle(&mut checks, &[mount(&host, CacheHow::Shared)], ".t");
        assert_eq!(checks[0].outcome, Outcome::Skip);
    }
}
