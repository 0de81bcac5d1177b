//! One-line summaries in the reports: the boundary, how a cache is mounted.

use crate::plan::{Isolation, Layers};

/// What the sandbox confines, in one line, from the layers that hold.
pub fn boundary(l: &Layers) -> String {
    if let Isolation::LandlockOnly { .. } = l.kind {
        return landlock_only_boundary(l);
    }
    let mut parts = vec![if l.home_overlay.is_some() {
        "filesystem mounts (the host read-only outside the writable roots; the home overlaid: its writes stay in the workspace's layer)".to_string()
    } else {
        "filesystem mounts (the host read-only outside the writable roots)".to_string()
    }];
    if l.landlock_filesystem.is_applied() {
        parts.push("Landlock (writes only beneath the writable roots)".into());
    }
    parts.push(if l.private_pid {
        "host processes invisible (a PID namespace of its own)".to_string()
    } else {
        "host processes visible but not signalable".to_string()
    });
    parts.push(if l.landlock_scopes.is_applied() {
        "host abstract sockets unreachable".to_string()
    } else {
        "host abstract sockets reachable with the network open".to_string()
    });
    parts.push(format!(
        "{} host Unix sockets masked, {} reachable",
        l.masked_sockets.len(),
        l.reachable_sockets.len()
    ));
    if l.seccomp.is_applied() {
        parts.push("terminal injection (TIOCSTI) refused".into());
    }
    if l.protected_paths.is_applied() {
        parts.push("git hooks and config read-only".into());
    }
    parts.join("; ")
}

/// `--isolation landlock`'s boundary: no mount, Landlock's rules alone.
fn landlock_only_boundary(l: &Layers) -> String {
    let mut parts = vec![
        "no namespaces: Landlock and seccomp alone".to_string(),
        if l.landlock_filesystem.is_applied() {
            "Landlock (writes only beneath the writable roots; the hidden paths and the host's /tmp unreadable)"
                .to_string()
        } else {
            "no Landlock: this mode does not start".to_string()
        },
        "host processes visible but not signalable".into(),
        "no Unix socket can be made".into(),
    ];
    if l.protected_paths.is_applied() {
        parts.push("the git dirs read-only".into());
    }
    parts.join("; ")
}

/// A cache root without namespaces: read-only unless written through.
pub(super) fn landlock_only_root(l: &Layers, r: &crate::policy::WritableRoot) -> String {
    let shared = r
        .cache
        .as_ref()
        .is_some_and(|c| c.mode == crate::policy::CacheMode::Shared);
    if l.kind.landlock_only() && r.reason == crate::policy::RootReason::Cache && !shared {
        "; read-only here: no overlay without a mount namespace".into()
    } else {
        String::new()
    }
}

/// How a cache root is mounted, for its line under "Writable roots".
pub(super) fn cache_text(c: &crate::plan::CacheMount) -> String {
    use crate::plan::CacheHow;
    let created = if c.created {
        "; created empty on the host"
    } else {
        ""
    };
    match &c.how {
        CacheHow::Overlay { upper, .. } => format!(
            "; overlay, writes kept in {}{created}",
            upper.parent().unwrap_or(upper).display()
        ),
        CacheHow::InHome(h) => format!(
            "; overlay (one overlay of the home serves every cache in it), writes kept in {}{created}",
            h.upper.parent().unwrap_or(&h.upper).display()
        ),
        CacheHow::Bare { upper } => format!(
            "; overlay (the host's is empty: its layer alone), writes kept in {}{created}",
            // `LAYER/upper`, or `LAYER/upper/REL` in the home's layer.
            upper
                .ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == "upper"))
                .and_then(std::path::Path::parent)
                .unwrap_or(upper)
                .display()
        ),
        CacheHow::Private { why: None } => format!("; private tmpfs{created}"),
        CacheHow::Private { why: Some(w) } => format!("; private tmpfs, not overlaid: {w}{created}"),
        CacheHow::Shared => format!("; shared: written through to the host{created}"),
    }
}
