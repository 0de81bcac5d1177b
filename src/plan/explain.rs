//! `--explain` and `--denials FILE`: what the warden is told so that it can
//! say, for each call the sandbox refuses, what was refused and which
//! option would allow it (supervise/explain.rs judges and records). It
//! observes only: the filter hands the calls that can be refused to the
//! warden, which answers each as the filters without `--explain` would
//! (their errno, or CONTINUE: the kernel then runs the call and enforces as
//! always), so no judgment of its can let anything through.

use super::Layers;
use crate::policy::{Policy, TmpMode, ViewMode};
use serde::Serialize;
use std::path::PathBuf;

/// What the warden needs to judge the trapped calls and say the refusals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explain {
    /// `--explain`: one line per distinct refusal on qwrap's stderr at exit.
    pub say: bool,
    /// `--denials FILE`: one JSON object per refusal, opened by qwrap with
    /// the caller's rights.
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub denials: Option<PathBuf>,
    /// The filter the warden answers by: `run`'s, without `--explain`.
    pub signals: bool,
    pub root: bool,
    /// No namespaces: Landlock refuses writes (EACCES), not a read-only
    /// mount (EROFS); the second filter's calls are the warden's to refuse.
    pub landlock_only: bool,
    /// The keyring filter's calls, folded into the one filter (EPERM from
    /// the warden) unless `--share-keyring`.
    pub keyrings: bool,
    /// `--isolation landlock`: the second filter, folded (`Some(closed)`).
    pub second: Option<bool>,
    /// Where writes go through: the writable roots, and the sandbox's own
    /// /dev and /tmp. A write elsewhere is asked of the kernel's view
    /// (is its mount read-only?) before it is called refused.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub writable: Vec<PathBuf>,
    /// Read-only paths inside the roots, with what made them so.
    pub read_only: Vec<Marked>,
    /// The hidden paths, with `--hide` or the default set as their source.
    pub hidden: Vec<Marked>,
    /// The minimal view's entries (directories shown beneath them too);
    /// None: the host view.
    pub view: Option<Vec<Marked>>,
    /// The listed home's entries and the roots in it (what of the home
    /// exists inside); None: the home is shown whole.
    pub home_listed: Option<Vec<Marked>>,
    /// The host sockets masked.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub sockets: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub home: Option<PathBuf>,
    /// bwrap mode (`QWRAP_EXPLAIN`): the monitor hears the calls, and the
    /// filter it answers by is bwrap mode's layers' (`Some(true)`) or none
    /// (`Some(false)`). None: `run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bwrap: Option<bool>,
}

/// What a view shows: its entries (a directory: beneath it too) and the
/// writable roots.
fn shown(entries: &[crate::policy::view::ViewEntry], policy: &Policy) -> Vec<Marked> {
    entries
        .iter()
        .map(|e| Marked {
            path: e.path.clone(),
            dir: e.kind == crate::policy::view::EntryKind::Dir,
            why: e.why.clone(),
            allow: None,
        })
        .chain(policy.writable_roots.iter().map(|r| Marked {
            path: r.path.clone(),
            dir: true,
            why: "a writable root".into(),
            allow: None,
        }))
        .collect()
}

/// A path and what it is (a directory: beneath it counts), why it is so
/// and the option that would change it (None: only leaving out what the
/// user asked for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Marked {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub dir: bool,
    pub why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// `run`'s explain orders, None without `--explain` and `--denials`.
pub fn orders(
    policy: &Policy,
    layers: &Layers,
    signals: bool,
    root: bool,
    landlock_only: bool,
) -> Option<Explain> {
    if !policy.settings.explain.value && policy.denials.is_none() {
        return None;
    }
    let mut writable: Vec<PathBuf> = policy.writable_roots.iter().map(|r| r.path.clone()).collect();
    if !landlock_only {
        writable.push("/dev".into());
        if policy.settings.tmp.value == TmpMode::Private {
            writable.push("/tmp".into());
        }
    }
    let mut read_only: Vec<Marked> = policy
        .read_only
        .iter()
        .map(|r| Marked {
            path: r.path.clone(),
            dir: true,
            why: format!("made read-only by {}", r.source),
            allow: None,
        })
        .collect();
    read_only.extend(policy.protected.iter().map(|p| Marked {
        path: p.clone(),
        dir: true,
        why: "git's hooks, config or pointer files, read-only inside".into(),
        allow: Some("--allow-git-config".into()),
    }));
    Some(Explain {
        say: policy.settings.explain.value,
        denials: policy.denials.clone(),
        signals,
        root,
        landlock_only,
        keyrings: !landlock_only && !policy.settings.share_keyring.value,
        second: landlock_only.then_some(policy.settings.network.value == crate::policy::NetworkMode::Closed),
        writable,
        read_only,
        hidden: policy
            .hidden
            .iter()
            .map(|h| {
                // A default entry's why is its reason; what the user hid
                // names its source (--hide, a config file, a profile).
                let asked = h.why == "--hide" || h.why.starts_with("profile ") || h.why.starts_with('/');
                Marked {
                    path: h.path.clone(),
                    dir: h.dir,
                    why: if asked {
                        format!("hidden by {}", h.why)
                    } else {
                        format!("hidden: {}", h.why)
                    },
                    allow: (!asked).then(|| format!("--show {}", h.path.display())),
                }
            })
            .collect(),
        view: (policy.settings.view.value == ViewMode::Minimal).then(|| shown(&policy.view_entries, policy)),
        home_listed: policy.home_listing.as_ref().map(|l| shown(&l.entries, policy)),
        sockets: layers.masked_sockets.clone(),
        home: policy.home.clone(),
        bwrap: None,
    })
}

/// bwrap mode's orders, when the caller sets `QWRAP_EXPLAIN`: writes
/// refused by a read-only mount of its view, and, with its layers
/// (`layers`), the calls their filter refuses. Nothing is hidden and no
/// listed view is kept, so reads are not judged.
pub fn bwrap_orders(layers: bool, root: bool) -> Explain {
    Explain {
        say: true,
        denials: None,
        signals: false,
        root,
        landlock_only: false,
        keyrings: false,
        second: None,
        writable: Vec::new(),
        read_only: Vec::new(),
        hidden: Vec::new(),
        view: None,
        home_listed: None,
        sockets: Vec::new(),
        home: None,
        bwrap: Some(layers),
    }
}

/// Why `--explain` cannot be had here (fail closed: exit 125), None where
/// it can: it needs the warden's notifications and SECCOMP_USER_NOTIF_FLAG_CONTINUE
/// (Linux 5.5), and `--pid private` has no notifications.
pub fn unavailable(policy: &Policy, kernel: (u32, u32)) -> Option<String> {
    if !policy.settings.explain.value && policy.denials.is_none() {
        return None;
    }
    let what = if policy.settings.explain.value {
        "--explain"
    } else {
        "--denials"
    };
    if kernel < (5, 5) {
        return Some(format!(
            "{what}: Linux {}.{} cannot let a call the warden watched go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE came with Linux 5.5): run without it",
            kernel.0, kernel.1
        ));
    }
    if policy.settings.pid.value == crate::policy::PidMode::Private {
        return Some(format!(
            "{what}: not with --pid private, whose filter hands no call to the warden: run without one of them"
        ));
    }
    None
}
