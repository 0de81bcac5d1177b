//! Overlays: the options overlayfs is given, with its escaping, and the
//! one overlay of the home that serves every cache inside it.

use super::step::{OverlayPart, OverlayUpper, TreeId};
use super::{Builder, MountOp, Step};
use crate::plan::HomeCaches;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::path::PathBuf;

/// `(key, value)` pairs for fsconfig, in order. `tmp_root` names the tmpfs
/// that holds `upper` and `work` for `OverlayUpper::Tmpfs`.
pub fn overlay_config(
    lower: &[PathBuf],
    upper: &OverlayUpper,
    userxattr: bool,
    tmp_root: &str,
) -> Vec<(&'static str, Vec<u8>)> {
    // overlayfs takes the top layer first; --overlay-src gives it last.
    let mut top_first: Vec<u8> = Vec::new();
    for (i, l) in lower.iter().rev().enumerate() {
        if i > 0 {
            top_first.push(b':');
        }
        top_first.extend(escape(l.as_os_str().as_bytes()));
    }
    let mut out = vec![("lowerdir", top_first)];
    match upper {
        OverlayUpper::Dirs { upper, work } | OverlayUpper::Volatile { upper, work } => {
            out.push(("upperdir", escape(upper.as_os_str().as_bytes())));
            out.push(("workdir", escape(work.as_os_str().as_bytes())));
        }
        OverlayUpper::Tmpfs => {
            out.push(("upperdir", escape(format!("{tmp_root}/upper").as_bytes())));
            out.push(("workdir", escape(format!("{tmp_root}/work").as_bytes())));
        }
        OverlayUpper::ReadOnly => {}
    }
    if userxattr {
        out.push(("userxattr", Vec::new()));
    }
    if let OverlayUpper::Volatile { .. } = upper {
        out.push(("volatile", Vec::new()));
    }
    out
}

impl Builder {
    /// The trees of the caches inside the home (`MountOp::InHomeLayer`),
    /// by operation index: one overlay of the home, made and split into
    /// them now, while every host path is as named. `host` maps a path to
    /// where the host's tree is (the legacy path's old root).
    pub(super) fn split_home_overlay(
        &mut self,
        ops: &[MountOp],
        host: &dyn Fn(&Path) -> PathBuf,
        userxattr: bool,
    ) -> HashMap<usize, TreeId> {
        let mut trees = HashMap::new();
        let mut parts = Vec::new();
        let mut layer = None;
        for (i, op) in ops.iter().enumerate() {
            if let MountOp::InHomeLayer { path, layer: l } = op {
                layer.get_or_insert(l);
                trees.insert(i, self.trees);
                parts.push(OverlayPart {
                    tree: self.trees,
                    path: host(path),
                });
                self.trees += 1;
            }
        }
        if let Some(l) = layer {
            self.push(Step::HomeCaches(HomeCaches {
                home: host(&l.home),
                upper: host(&l.upper),
                work: host(&l.work),
                userxattr,
                parts,
            }));
        }
        trees
    }
}

/// The options as one mount(2)-style string, for the printed plan.
pub fn overlay_options(lower: &[PathBuf], upper: &OverlayUpper, userxattr: bool, tmp_root: &str) -> String {
    overlay_config(lower, upper, userxattr, tmp_root)
        .into_iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.to_string()
            } else {
                format!("{k}={}", String::from_utf8_lossy(&v))
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// overlayfs splits layers on `:` and options on `,` and unescapes every
/// path, so each of those and the backslash itself is escaped.
fn escape(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        if matches!(b, b'\\' | b':' | b',') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_top_first_and_paths_escaped() {
        let lower = vec![PathBuf::from("/l1"), PathBuf::from("/lower \":,\\")];
        let upper = OverlayUpper::Dirs {
            upper: "/u,p".into(),
            work: "/w".into(),
        };
        assert_eq!(
            overlay_options(&lower, &upper, true, ""),
            "lowerdir=/lower \"\\:\\,\\\\:/l1,upperdir=/u\\,p,workdir=/w,userxattr"
        );
        assert_eq!(
            overlay_options(&lower[..1], &OverlayUpper::Tmpfs, false, "/proc/self/fd/9"),
            "lowerdir=/l1,upperdir=/proc/self/fd/9/upper,workdir=/proc/self/fd/9/work"
        );
        assert_eq!(
            overlay_options(&lower, &OverlayUpper::ReadOnly, false, ""),
            "lowerdir=/lower \"\\:\\,\\\\:/l1"
        );
        let volatile = OverlayUpper::Volatile {
            upper: "/u".into(),
            work: "/w".into(),
        };
        assert_eq!(
            overlay_options(&lower[..1], &volatile, true, ""),
            "lowerdir=/l1,upperdir=/u,workdir=/w,userxattr,volatile"
        );
    }
}
