//! Toolchain profiles the workspace calls for, and where the workspace's
//! cache layers are kept.

use super::profile::{self, ProfileDef};
use super::{CacheMode, Dropped, Settings, Sourced, WritableRoot};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Profile definitions by name, with where each came from.
pub(super) type Defs = BTreeMap<String, Sourced<ProfileDef>>;

/// The named profiles, then each profile with a `detect` file present at
/// the workspace's top (unless detection is off), and the definitions of
/// them all. Only the files' presence is looked at: a detected profile
/// adds caches, which are overlaid, and registry destinations. The shipped
/// profiles are parsed only when one of their files is there.
pub(super) fn with_detected<'a>(s: &'a Settings, workspace: &Path) -> (Vec<Sourced<String>>, Cow<'a, Defs>) {
    let mut profiles = s.profiles.clone();
    let mut defs = Cow::Borrowed(&s.profile_defs);
    if !s.detect.value {
        return (profiles, defs);
    }
    let present = |f: &str| !f.contains('/') && std::fs::symlink_metadata(workspace.join(f)).is_ok();
    if profile::shipped_detect_files().iter().any(|f| present(f)) {
        let shipped = profile::shipped();
        if shipped.keys().any(|k| !defs.contains_key(k)) {
            let mut all: Defs = shipped
                .into_iter()
                .map(|(k, v)| (k, Sourced::new(v, "shipped")))
                .collect();
            all.extend(s.profile_defs.iter().map(|(k, v)| (k.clone(), v.clone())));
            defs = Cow::Owned(all);
        }
    }
    for (name, def) in defs.iter() {
        if profiles.iter().any(|p| &p.value == name) {
            continue;
        }
        if let Some(f) = def.value.detect.iter().find(|f| present(f)) {
            profiles.push(Sourced::new(name.clone(), format!("detected {f}")));
        }
    }
    (profiles, defs)
}

/// The directory holding this workspace's cache layers, out of the
/// command's reach: `${XDG_STATE_HOME:-~/.local/state}/qwrap/caches/NAME-HASH`.
/// Where no such place exists, overlaid caches become private tmpfs.
pub(super) fn layer_set(
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
    workspace: &Path,
    roots: &mut [WritableRoot],
    dropped: &mut Vec<Dropped>,
    home_overlay: bool,
) -> Option<PathBuf> {
    let overlaid = |r: &WritableRoot| r.cache.as_ref().is_some_and(|c| c.mode == CacheMode::Overlay);
    if !home_overlay && !roots.iter().any(overlaid) {
        return None;
    }
    let set = state_dir(home, env("XDG_STATE_HOME")).map(|s| s.join("caches").join(set_name(workspace)));
    let why = match &set {
        None => Some("no home directory to keep cache layers in".to_string()),
        Some(set) => roots
            .iter()
            .find(|r| set.starts_with(&r.path) || r.path.starts_with(set))
            .map(|r| {
                format!(
                    "the layer directory {} is in the writable root {}",
                    set.display(),
                    r.path.display()
                )
            }),
    };
    let Some(why) = why else { return set };
    for r in roots.iter_mut().filter(|r| overlaid(r)) {
        if let Some(c) = r.cache.as_mut() {
            c.mode = CacheMode::Private;
        }
        dropped.push(Dropped {
            path: r.path.clone(),
            why: format!("{}: not overlaid ({why}): a private tmpfs instead", r.source),
        });
    }
    None
}

/// qwrap's state directory, `${XDG_STATE_HOME:-~/.local/state}/qwrap`
/// (its existing part canonical), where the cache layers are kept; None
/// without a home directory.
pub fn state_dir(home: Option<&Path>, state_home: Option<OsString>) -> Option<PathBuf> {
    let state = state_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".local/state")))?;
    Some(canonical_prefix(&state).join("qwrap"))
}

/// `NAME-HASH`: the workspace's last component and a hash of its path, so
/// that two checkouts named alike keep separate layers.
pub fn set_name(workspace: &Path) -> String {
    // FNV-1a, 64 bits: stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workspace.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!("{name}-{h:016x}")
}

/// `p` with its longest existing prefix canonicalised.
pub(super) fn canonical_prefix(p: &Path) -> PathBuf {
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut existing = p;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |acc, c| acc.join(c));
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_names_are_stable_and_distinct() {
        let a = set_name(Path::new("/home/u/src/proj"));
        assert!(a.starts_with("proj-") && a.len() == "proj-".len() + 16, "{a}");
        assert_eq!(a, set_name(Path::new("/home/u/src/proj")));
        assert_ne!(a, set_name(Path::new("/home/u/other/proj")));
        assert!(set_name(Path::new("/w/a b:c")).starts_with("a_b_c-"));
    }
}
