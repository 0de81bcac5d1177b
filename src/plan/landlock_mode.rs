//! `run` without namespaces (`--isolation landlock`, or `auto` where user
//! namespaces or mounts are refused): the same policy, held by Landlock
//! and seccomp alone over the host's own view. What it gives up — a
//! private /tmp, /dev, IPC and mount view, the cache overlays, the git
//! guard's copies — is said in the layers and in docs/security.md.

use super::fds::FdPlan;
use super::filter_rules::Profile;
use super::spec::{Entry, Identity, SandboxSpec};
use super::{AllowRules, Ambient, Confinement, Filter, Layers, Seal, Shape, StartWarden, Step};
use crate::host::HostFacts;
use crate::host::landlock_only::{Lists, Request};
use crate::plan::{DropCapabilities, MakePrivateDir, PrepareCaches};
use crate::policy::{CacheMode, HomeMode, NetworkMode, PidMode, Policy, RootReason, TmpMode, ViewMode};
use std::path::PathBuf;

/// Landlock's first ABI that confines truncate(2): below it a command
/// could empty any file of the caller's that no mount keeps read-only.
pub const LANDLOCK_ONLY_ABI: u32 = 3;

/// The devices every program writes, writable in this mode (the rest of
/// the host's /dev is read-only).
pub const WRITABLE_DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];

/// The command's own temporary directory (its TMPDIR): a new one per run.
pub fn private_tmp(policy: &Policy, host: &HostFacts) -> Option<PathBuf> {
    (policy.settings.tmp.value == TmpMode::Private)
        .then(|| PathBuf::from(format!("/tmp/qwrap-{}-{}", host.uid, host.landlock_only.run)))
}

/// Where tools that follow `$XDG_CACHE_HOME` write: the workspace's own
/// directory beside its cache layers (written through, kept between runs).
pub fn cache_home(policy: &Policy) -> Option<PathBuf> {
    (policy.settings.cache.value != CacheMode::Shared)
        .then(|| policy.cache_set.as_ref().map(|s| s.join("xdg-cache")))
        .flatten()
}

/// What the host's directories must be listed for.
pub fn request(policy: &Policy, host: &HostFacts) -> Request {
    let mut read_excluded: Vec<PathBuf> = policy.hidden.iter().map(|h| h.path.clone()).collect();
    // No redacted copy can be shown without a mount: the file is hidden.
    read_excluded.extend(policy.redacted_rc.iter().map(|r| r.path.clone()));
    if policy.settings.tmp.value == TmpMode::Private {
        read_excluded.push(PathBuf::from("/tmp"));
    }
    // /dev as the namespaces mode shows it: the devices every program
    // opens (WRITABLE_DEVICES, read and written) and the caller's terminal,
    // not the user's other terminals or a disk.
    read_excluded.push(PathBuf::from("/dev"));
    let shared_memory = ["/dev/shm", "/dev/mqueue"].map(PathBuf::from).to_vec();
    let mut write_roots: Vec<PathBuf> = policy
        .writable_roots
        .iter()
        .filter(|r| {
            r.reason != RootReason::Cache || r.cache.as_ref().is_some_and(|c| c.mode == CacheMode::Shared)
        })
        .map(|r| r.path.clone())
        .collect();
    write_roots.extend(private_tmp(policy, host));
    write_roots.extend(cache_home(policy));
    let mut write_excluded: Vec<PathBuf> = policy.read_only.iter().map(|r| r.path.clone()).collect();
    // A hidden path inside a writable root: the root's grant reads too, so
    // it is left out of that grant as well (neither read nor written).
    write_excluded.extend(
        read_excluded
            .iter()
            .filter(|p| write_roots.iter().any(|r| p.starts_with(r)))
            .cloned(),
    );
    if !policy.settings.allow_git_config.value {
        write_excluded.extend(policy.git_layouts.iter().map(|g| g.dir.clone()));
        write_excluded.extend(policy.protected.iter().cloned());
        write_excluded.extend(policy.pinned.iter().cloned());
    }
    Request {
        read_roots: vec![PathBuf::from("/")],
        read_excluded,
        // The host's POSIX shared memory and message queues: other
        // programs' of the caller's would be readable. Empty at the start,
        // nothing is there to keep out (and /dev's every entry would cost a
        // rule).
        read_excluded_if_held: shared_memory,
        write_roots,
        write_excluded,
        write_files: WRITABLE_DEVICES.iter().map(PathBuf::from).collect(),
        read_listed: read_listed(policy),
    }
}

/// The listed home (and `/home`) as Landlock reads them: only the entries,
/// the writable roots and the directories on the way.
fn read_listed(policy: &Policy) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let Some(l) = &policy.home_listing else {
        return Vec::new();
    };
    let roots = policy.writable_roots.iter().map(|r| r.path.clone());
    let mut keep: Vec<PathBuf> = l.entries.iter().map(|e| e.path.clone()).chain(roots).collect();
    let mut out = Vec::new();
    if let Some(h) = &l.homes {
        let mut at_homes = keep.clone();
        at_homes.push(l.home.clone());
        at_homes.extend(l.tops.iter().cloned());
        out.push((h.clone(), at_homes));
    }
    keep.retain(|k| k.starts_with(&l.home));
    out.push((l.home.clone(), keep));
    out
}

/// What this mode cannot give the policy, or the host cannot give this
/// mode: the sandbox is refused (fail closed) with why and what to do.
pub fn refused(policy: &Policy, host: &HostFacts, abi: u32) -> Option<String> {
    let s = &policy.settings;
    let conflict = |what: String| {
        Some(format!(
            "{what}, which --isolation landlock cannot give (no mount or network namespace); use namespaces, or leave it out"
        ))
    };
    if policy.settings.landlock.value == crate::policy::LandlockMode::Off {
        return Some(format!(
            "--isolation landlock with --landlock off (from {}): nothing would confine the command",
            s.landlock.source
        ));
    }
    if abi < LANDLOCK_ONLY_ABI {
        return Some(format!(
            "--isolation landlock needs Landlock ABI {LANDLOCK_ONLY_ABI} (Linux 6.2: truncate(2) confined); this kernel offers {}",
            if abi == 0 {
                "none".to_string()
            } else {
                format!("ABI {abi}")
            }
        ));
    }
    if policy.settings.network.value == NetworkMode::Proxied {
        return conflict(format!("--network proxied (from {})", s.network.source));
    }
    if s.pid.value == PidMode::Private {
        return conflict(format!("--pid private (from {})", s.pid.source));
    }
    if policy.settings.view.value == ViewMode::Minimal {
        return conflict(format!("--view minimal (from {})", s.view.source));
    }
    if s.home.value == HomeMode::Overlay {
        return conflict(format!("--home overlay (from {})", s.home.source));
    }
    if s.review.value {
        return conflict(format!("--review (from {})", s.review.source));
    }
    if let Some(a) = policy.allowed_sockets.first() {
        return conflict(format!(
            "a reachable host socket ({} from {}): no Unix socket can be made in this mode",
            a.value.display(),
            a.source
        ));
    }
    match &host.landlock_only.lists {
        Some(Ok(_)) => None,
        Some(Err(e)) => Some(format!("--isolation landlock: {e}")),
        None => Some("--isolation landlock: the host's directories were not listed".into()),
    }
}

/// The spec of a Landlock-only sandbox.
pub(super) fn spec(
    policy: &Policy,
    host: &HostFacts,
    layers: &Layers,
    d: &super::Decisions,
    lists: &Lists,
    fds: FdPlan,
    limits: super::limits::Limits,
) -> SandboxSpec {
    let super::Decisions { scoped, root, .. } = *d;
    let tmp = private_tmp(policy, host);
    let cache = cache_home(policy);
    let mut prepare = Vec::new();
    if let Some(c) = &cache {
        prepare.push(Step::PrepareCaches(PrepareCaches {
            create: vec![c.clone()],
            layers: Vec::new(),
            marked: Vec::new(),
            lock: None,
        }));
    }
    prepare.extend(
        tmp.iter()
            .map(|t| Step::MakePrivateDir(MakePrivateDir { path: t.clone() })),
    );
    prepare.push(warden(policy, layers, d, lists, tmp.clone(), limits.watch));
    prepare.extend(limits.make);
    let env = environment(policy, tmp.as_ref(), cache.as_ref());
    let (new_session, detach_terminal) = super::layers::session(policy, host, false);
    SandboxSpec {
        host: prepare,
        join_cgroup: limits.join,
        ns: Default::default(),
        entry: Entry::None,
        identity: Identity::None,
        disable_userns: false,
        hostname: None,
        egress_port: None,
        inherited: Vec::new(),
        mounts: Vec::new(),
        mount_api: host.mount_api,
        shape: Shape::RUN,
        seal_root: false,
        resolve_in_root: false,
        in_root: Vec::new(),
        confinement: Confinement {
            chdir: vec![policy.workspace.clone()],
            inside: Vec::new(),
            // Without a user namespace only root holds CAP_SETPCAP, which
            // cutting the bounding set needs; no_new_privs keeps anyone else
            // from gaining what it holds.
            capabilities: vec![Step::DropCapabilities(DropCapabilities {
                keep: Vec::new(),
                bounding: root,
                ambient: Ambient::Lower,
            })],
            seal: Some(Seal {
                keep: fds.keep,
                closed: fds.closed,
            }),
            landlock: None,
            allow_list: Some(AllowRules {
                abi: layers.landlock_abi,
                read: lists.read.beneath.clone(),
                list: lists.read.levels.clone(),
                write: lists.write.beneath.clone(),
                // FIFOs in the command's own TMPDIR and the caches, never
                // where a host tool reads later.
                fifo: super::layers::fifo_roots(policy)
                    .into_iter()
                    .chain(tmp.iter().cloned())
                    .chain(cache.iter().cloned())
                    .collect(),
                write_files: lists.write_files.clone(),
                scoped,
                no_tcp: policy.settings.network.value == NetworkMode::Closed && layers.landlock_abi >= 4,
            }),
            landlock_only_filter: Some(policy.settings.network.value == NetworkMode::Closed),
            reaper: d.reaper(),
            // The second filter refuses the keyring calls already.
            refuse_keyrings: false,
            filter: Filter::Seccomp(Profile {
                warden: true,
                unscoped: !scoped,
                root,
                landlock_only: true,
                explain: d.explain,
            }),
            caller_filters: Vec::new(),
            die_with_parent: policy.die_with_parent,
            new_session,
            detach_terminal,
            pid_one: None,
            block_fd: None,
            argv: policy.command.clone(),
            argv0: None,
            env,
        },
    }
}

/// The warden's orders without namespaces: the command's own TMPDIR
/// removed at the end, the mode bits and times set where Landlock lets the
/// command write.
fn warden(
    policy: &Policy,
    layers: &Layers,
    d: &super::Decisions,
    lists: &Lists,
    tmp: Option<PathBuf>,
    limits: Option<super::LimitWatch>,
) -> Step {
    let super::Decisions {
        keep_background,
        scoped,
        root,
        ..
    } = *d;
    Step::StartWarden(StartWarden {
        keep_background,
        egress: None,
        git: Vec::new(),
        scoped: scoped && !keep_background,
        notes: false,
        remove: tmp,
        // Where Landlock lets it write: the mode bits and times it may set.
        writable: lists.write.beneath.clone(),
        watch: if keep_background {
            Vec::new()
        } else {
            policy.watched.clone()
        },
        review: None,
        explain: super::explain::orders(policy, layers, !scoped, root, true).map(|mut e| {
            // Where Landlock lets the command write.
            e.writable = lists.write.beneath.clone();
            e.writable.extend(lists.write_files.iter().cloned());
            Box::new(e)
        }),
        limits,
        repos: super::run_spec::repo_scan(policy).map(Box::new),
    })
}

/// The command's environment: the policy's rules, its own temporary
/// directory and cache home, and the variables that name a Unix socket
/// unset.
fn environment(policy: &Policy, tmp: Option<&PathBuf>, cache: Option<&PathBuf>) -> crate::policy::EnvRules {
    let mut env = policy.env.clone();
    let mut set = |k: &str, v: &PathBuf| {
        let said = policy.user_env_names.iter().any(|n| n == k);
        if !said {
            env.unset.retain(|u| u != k);
            env.set.retain(|(s, _)| s != k);
            env.set.push((k.into(), v.into()));
        }
    };
    if let Some(t) = tmp {
        for k in ["TMPDIR", "TMP", "TEMP"] {
            set(k, t);
        }
    }
    if let Some(c) = cache {
        set("XDG_CACHE_HOME", c);
    }
    // No Unix socket can be made: every variable that names one goes.
    for (v, _) in &policy.socket_vars {
        if !env.unset.iter().any(|u| u == v.as_str()) && !env.set.iter().any(|(k, _)| k == v.as_str()) {
            env.unset.push(v.into());
        }
    }
    env
}
