//! How each cache root is mounted: an overlay whose upper layer belongs to
//! the workspace, a private tmpfs, or the host's directory written through.

use super::{LayerState, Step};
use crate::host::HostFacts;
use crate::plan::PrepareCaches;
use crate::policy::{CacheMode, HomeMode, Policy};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One cache root and how it is mounted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheMount {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub source: String,
    /// Created on the host (empty, 0700) before the sandbox starts.
    pub created: bool,
    pub how: CacheHow,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum CacheHow {
    /// The host's directory is the read-only lower layer.
    Overlay {
        #[serde(serialize_with = "crate::lossy::path")]
        upper: PathBuf,
        #[serde(serialize_with = "crate::lossy::path")]
        work: PathBuf,
    },
    /// A subtree of the one overlay of the home directory: one overlay
    /// mount serves every cache inside the home.
    #[serde(rename = "home_overlay")]
    InHome(HomeOverlay),
    /// The host's directory is empty and the layer was never overlaid: the
    /// layer's `upper` alone, bound writable (an overlay of nothing, for
    /// a fraction of its cost).
    Bare {
        #[serde(serialize_with = "crate::lossy::path")]
        upper: PathBuf,
    },
    /// A fresh tmpfs; `why` when an overlay was wanted.
    Private { why: Option<String> },
    /// The host's directory, writable.
    Shared,
}

/// The one overlay of the home: its layer's `upper` and `work`. Mounted at
/// the home itself with `--home overlay`; else the caches inside the home
/// are subtrees of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HomeOverlay {
    #[serde(serialize_with = "crate::lossy::path")]
    pub home: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub upper: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub work: PathBuf,
}

/// The home directory as a layer: read-only, or overlaid (`--home
/// overlay`), or read-only because the overlay cannot be had (degraded).
pub fn home_layer(policy: &Policy, host: &HostFacts) -> (LayerState, Option<HomeOverlay>) {
    let setting = &policy.settings.home;
    if let Some(l) = &policy.home_listing {
        return (
            LayerState::Applied(format!(
                "listed (--home listed from {}): {} entr{} of the home shown read-only, the writable roots and caches; every other name is absent{}",
                setting.source,
                l.entries.len(),
                if l.entries.len() == 1 { "y" } else { "ies" },
                match &l.homes {
                    Some(h) => format!(", and so are other users' homes under {}", h.display()),
                    None => String::new(),
                }
            )),
            None,
        );
    }
    if setting.value != HomeMode::Overlay {
        return (
            LayerState::Applied("read-only: the host's, outside the writable roots and caches".into()),
            None,
        );
    }
    let facts = &host.caches;
    let why = match (&policy.home, &policy.cache_set, facts.slot, &facts.whole_home) {
        (None, ..) => "no home directory".to_string(),
        (_, None, ..) => "no place for the workspace's layers".to_string(),
        (_, _, _, Some(mounts)) if !mounts.is_empty() => format!(
            "the host has mounts beneath the home ({}), which an overlay in a user namespace may not hide",
            mounts
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (Some(home), Some(set), Some(slot), Some(_)) if facts.overlay_unavailable.is_none() => {
            let layer = set.join(slot.to_string()).join(crate::host::caches::HOME_LAYER);
            return (
                LayerState::Applied(format!(
                    "overlay (--home overlay from {}): writes land in {}, never in the host's home; hidden paths, the workspace and the roots are mounted above it",
                    setting.source,
                    layer.display()
                )),
                Some(HomeOverlay {
                    home: home.clone(),
                    upper: layer.join("upper"),
                    work: layer.join("work"),
                }),
            );
        }
        _ => facts
            .overlay_unavailable
            .clone()
            .unwrap_or_else(|| "no layer slot".into()),
    };
    (
        LayerState::Degraded(format!(
            "--home overlay (from {}) cannot be had: {why}; the home is read-only instead",
            setting.source
        )),
        None,
    )
}

/// The cache roots of a policy as mounted on this host.
pub fn cache_mounts(policy: &Policy, host: &HostFacts) -> Vec<CacheMount> {
    let facts = &host.caches;
    policy
        .writable_roots
        .iter()
        .filter_map(|r| {
            let c = r.cache.as_ref()?;
            let how = match c.mode {
                CacheMode::Shared => CacheHow::Shared,
                CacheMode::Private => CacheHow::Private { why: None },
                CacheMode::Overlay => match (&policy.cache_set, facts.slot) {
                    (Some(set), Some(slot)) if facts.overlay_unavailable.is_none() => in_slot(
                        &set.join(slot.to_string()),
                        policy.home.as_ref().filter(|_| facts.in_home.contains(&r.path)),
                        facts.bare.contains(&r.path),
                        &r.path,
                        &c.layer,
                    ),
                    _ => CacheHow::Private {
                        why: Some(
                            facts
                                .overlay_unavailable
                                .clone()
                                .unwrap_or_else(|| "no place for the workspace's layers".into()),
                        ),
                    },
                },
            };
            // In the listed home a missing cache's mount point is made in
            // the home's tmpfs, and its directory in its layer: nothing
            // is made in the host's home.
            let in_tmpfs = policy
                .home_listing
                .as_ref()
                .is_some_and(|l| r.path.starts_with(&l.home))
                && matches!(
                    how,
                    CacheHow::InHome(_) | CacheHow::Bare { .. } | CacheHow::Private { .. }
                );
            Some(CacheMount {
                path: r.path.clone(),
                source: r.source.clone(),
                created: c.missing && !in_tmpfs,
                how,
            })
        })
        .collect()
}

/// An overlaid cache's mount in its `slot`: a subtree of the home's one
/// layer when it lies inside the `home` (on its mount), else a layer of its
/// own (`layer`); its layer's directory alone while the host's is empty
/// (`bare`).
fn in_slot(slot: &Path, home: Option<&PathBuf>, bare: bool, path: &Path, layer: &str) -> CacheHow {
    match home {
        Some(home) => {
            let layer = slot.join(crate::host::caches::HOME_LAYER);
            if bare {
                CacheHow::Bare {
                    upper: layer.join("upper").join(path.strip_prefix(home).unwrap_or(path)),
                }
            } else {
                CacheHow::InHome(HomeOverlay {
                    home: home.clone(),
                    upper: layer.join("upper"),
                    work: layer.join("work"),
                })
            }
        }
        None if bare => CacheHow::Bare {
            upper: slot.join(layer).join("upper"),
        },
        None => CacheHow::Overlay {
            upper: slot.join(layer).join("upper"),
            work: slot.join(layer).join("work"),
        },
    }
}

/// The step that makes what the caches need on the host before the
/// sandbox starts: missing cache directories, the layers' directories, and
/// the slot's lock.
pub(super) fn prepare(
    policy: &Policy,
    host: &HostFacts,
    mounts: &[CacheMount],
    home: Option<&HomeOverlay>,
) -> Option<Step> {
    let missing = |p: &Path| {
        policy
            .writable_roots
            .iter()
            .any(|r| r.path == p && r.cache.as_ref().is_some_and(|c| c.missing))
    };
    // A bare layer is its upper directory alone, made like a missing cache;
    // a missing cache in the home's overlay is made in its upper layer.
    let create: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m.created)
        .map(|m| m.path.clone())
        .chain(mounts.iter().filter_map(|m| match &m.how {
            CacheHow::Bare { upper } => Some(upper.clone()),
            CacheHow::InHome(h) if !m.created && missing(&m.path) => {
                Some(h.upper.join(m.path.strip_prefix(&h.home).ok()?))
            }
            _ => None,
        }))
        .collect();
    // The home's overlay, whole or split, has one layer.
    let mut layers: Vec<PathBuf> = home
        .and_then(|h| h.upper.parent())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    for m in mounts {
        if let CacheHow::Overlay { upper, .. } | CacheHow::InHome(HomeOverlay { upper, .. }) = &m.how
            && let Some(l) = upper.parent()
            && !layers.iter().any(|x| x == l)
        {
            layers.push(l.to_path_buf());
        }
    }
    let marked: Vec<PathBuf> = layers
        .iter()
        .map(|l| l.join(crate::host::caches::OVERLAID))
        .collect();
    let layered = !layers.is_empty()
        || mounts.iter().any(|m| {
            matches!(
                m.how,
                CacheHow::Overlay { .. } | CacheHow::InHome(_) | CacheHow::Bare { .. }
            )
        });
    let lock = match (&policy.cache_set, host.caches.slot) {
        (Some(set), Some(slot)) if layered => Some(set.join(format!("{slot}.lock"))),
        _ => None,
    };
    (!create.is_empty() || lock.is_some()).then_some(Step::PrepareCaches(PrepareCaches {
        create,
        layers,
        marked,
        lock,
    }))
}

/// The caches as one layer: applied when every cache is overlaid (or
/// private by choice), degraded when an overlay could not be had, off when
/// they are written through.
pub fn cache_layer(mounts: &[CacheMount]) -> LayerState {
    if mounts.is_empty() {
        return LayerState::Off("no cache directory outside the workspace".into());
    }
    if let Some(why) = mounts.iter().find_map(|m| match &m.how {
        CacheHow::Private { why: Some(w) } => Some(w),
        _ => None,
    }) {
        return LayerState::Degraded(format!(
            "caches in a private tmpfs, kept for this run only: {why}"
        ));
    }
    let shared = mounts.iter().filter(|m| m.how == CacheHow::Shared).count();
    if shared > 0 {
        return LayerState::Off(format!(
            "--cache shared: {shared} cache{} written through to the host, where a later host tool reads what the command wrote",
            if shared == 1 { "" } else { "s" }
        ));
    }
    let overlaid = mounts
        .iter()
        .filter(|m| {
            matches!(
                m.how,
                CacheHow::Overlay { .. } | CacheHow::InHome(_) | CacheHow::Bare { .. }
            )
        })
        .count();
    let mounts_made = mounts
        .iter()
        .filter(|m| matches!(m.how, CacheHow::Overlay { .. }))
        .count()
        + usize::from(mounts.iter().any(|m| matches!(m.how, CacheHow::InHome(_))));
    LayerState::Applied(if overlaid > 0 {
        format!(
            "{overlaid} overlaid ({mounts_made} overlay mount{}): writes stay in the workspace's layer, the host's caches are unchanged",
            if mounts_made == 1 { "" } else { "s" }
        )
    } else {
        "private tmpfs: writes are discarded when the command exits".into()
    })
}
