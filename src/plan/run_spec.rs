//! `run`'s front end: a Policy and the host's facts, with the layers as
//! assessed, become the sandbox's spec (spec.rs lowers it).

use super::caches;
use super::fds::FdPlan;
use super::filter_rules::Profile;
use super::spec::{Entry, Identity, SandboxSpec};
use super::{
    Ambient, Confinement, Decisions, Egress, Filter, Flags, LandlockRules, Layers, PidOne, RepoScan, Role,
    Seal, Shape, StartWarden, Step, landlock_paths, layout,
};
use crate::host::{HostFacts, MountApi};
use crate::plan::{
    BindMount, CreateHostDir, DropCapabilities, HandGitDirs, Remount, ReopenFd, WriteHostFile,
};
use crate::policy::{Policy, ViewMode};

/// The spec of `run`'s sandbox.
pub(super) fn run_spec(
    policy: &Policy,
    host: &HostFacts,
    layers: &Layers,
    d: &Decisions,
    fds: FdPlan,
    limits: super::limits::Limits,
) -> SandboxSpec {
    let mut prepare: Vec<Step> = policy
        .create_before
        .iter()
        .map(|path| Step::CreateHostDir(CreateHostDir { path: path.clone() }))
        .collect();
    prepare.extend(caches::prepare(
        policy,
        host,
        &layers.caches,
        layers.home_overlay.as_ref(),
    ));
    prepare.extend(layers.review.as_ref().map(|l| super::review::prepare(policy, l)));
    prepare.extend(policy.redacted_rc.iter().map(|r| {
        Step::WriteHostFile(WriteHostFile {
            path: r.copy.clone(),
            text: r.text.clone(),
        })
    }));
    prepare.push(warden(policy, layers, d, limits.watch));
    // The sandbox's cgroups, once the warden (which stays out) runs.
    prepare.extend(limits.make);

    let inherited = inherited(fds.binds, fds.reopen);

    // The minimal view assembles a new root, as the legacy path does.
    let minimal = policy.settings.view.value == ViewMode::Minimal;
    let mut mounts = layout(
        policy,
        &layers.masked_sockets,
        fds.console.as_deref(),
        &layers.caches,
        layers.home_overlay.as_ref(),
        host.uid == 0,
        policy.settings.tmpfs_size.value.bytes(host.mem_total),
    );
    if let Some(l) = &layers.review {
        super::review::overlay_trees(&mut mounts, l);
    }
    SandboxSpec {
        host: prepare,
        join_cgroup: limits.join,
        ns: super::Namespaces {
            user: true,
            pid: d.private_pid,
            net: policy.settings.network.value.private(),
            ipc: !policy.settings.share_ipc.value,
            ..Default::default()
        },
        // With a PID namespace of its own qwrap stays outside as the
        // command's stand-in: it relays signals and exits as the command
        // does. It dies with its parent, and PID 1 with it.
        entry: if d.private_pid {
            Entry::Monitor {
                die_with_parent: policy.die_with_parent,
                info_fd: None,
                json_status_fd: None,
                forward_signals: true,
                join: None,
                explain: None,
            }
        } else {
            Entry::Unshare
        },
        identity: Identity::Map {
            uid: (host.uid, host.uid),
            gid: (host.gid, host.gid),
        },
        disable_userns: false,
        hostname: None,
        egress_port: d.proxied.then_some(crate::egress::PROXY_PORT),
        inherited,
        mounts,
        mount_api: if minimal { MountApi::Legacy } else { host.mount_api },
        shape: Shape::RUN,
        seal_root: minimal,
        resolve_in_root: false,
        in_root: if policy.git_layouts.is_empty() {
            Vec::new()
        } else {
            vec![Step::HandGitDirs(HandGitDirs {
                dirs: policy.git_layouts.iter().flat_map(|g| g.own()).collect(),
            })]
        },
        confinement: confinement(
            policy,
            host,
            layers,
            d,
            Seal {
                keep: fds.keep,
                closed: fds.closed,
            },
        ),
    }
}

/// Inherited devices bound read-only over themselves, files reopened.
fn inherited(binds: Vec<std::path::PathBuf>, reopen: Vec<(i32, std::path::PathBuf)>) -> Vec<Step> {
    let mut steps = Vec::new();
    for path in binds {
        steps.push(Step::BindMount(BindMount {
            role: Role::InheritedDevice,
            source: path.clone(),
            target: path.clone(),
            recursive: false,
        }));
        steps.push(Step::Remount(Remount {
            target: path,
            flags: Flags {
                rdonly: true,
                nosuid: true,
                noexec: true,
                nodev: false,
            },
        }));
    }
    steps.extend(
        reopen
            .into_iter()
            .map(|(fd, path)| Step::ReopenFd(ReopenFd { fd, path })),
    );
    steps
}

/// The warden's orders in `run`.
fn warden(policy: &Policy, layers: &Layers, d: &Decisions, limits: Option<super::LimitWatch>) -> Step {
    let Decisions {
        private_pid,
        keep_background,
        scoped,
        ..
    } = *d;
    Step::StartWarden(StartWarden {
        keep_background,
        egress: d.proxied.then(|| {
            Box::new(Egress {
                allow: crate::egress::AllowList(
                    policy.allowed_domains.iter().map(|d| d.value.clone()).collect(),
                ),
                log: policy.egress_log.clone(),
                say: !policy.quiet && !keep_background,
            })
        }),
        git: policy.git_layouts.iter().flat_map(|g| g.own()).collect(),
        scoped: scoped && !keep_background,
        notes: !policy.quiet && !keep_background && !private_pid,
        remove: None,
        writable: vec![],
        // What the warden says at exit goes to a stderr it holds: not with
        // --keep-background, where it would hold the caller's pipe open.
        watch: if keep_background {
            Vec::new()
        } else {
            policy.watched.clone()
        },
        review: layers.review.as_ref().map(|l| l.dir.clone()),
        explain: (!private_pid)
            .then(|| super::explain::orders(policy, layers, !scoped, d.root, false))
            .flatten()
            .map(Box::new),
        limits,
        repos: repo_scan(policy).map(Box::new),
    })
}

/// What `run` confines the command with once its root is in place.
fn confinement(policy: &Policy, host: &HostFacts, layers: &Layers, d: &Decisions, seal: Seal) -> Confinement {
    let Decisions {
        private_pid,
        keep_background,
        scoped,
        root,
        ..
    } = *d;
    let (new_session, detach_terminal) = super::layers::session(policy, host, private_pid);
    Confinement {
        chdir: vec![policy.workspace.clone()],
        inside: Vec::new(),
        capabilities: vec![Step::DropCapabilities(DropCapabilities {
            keep: Vec::new(),
            bounding: true,
            ambient: Ambient::Lower,
        })],
        seal: Some(seal),
        // With a private PID namespace only the scopes: a domain that
        // handles filesystem access forbids mount(2) to nested sandboxes.
        landlock: (layers.landlock_abi > 0 && (!private_pid || scoped)).then(|| LandlockRules {
            abi: layers.landlock_abi,
            paths: landlock_paths(policy, layers.home_overlay.as_ref()),
            fifo: super::layers::fifo_paths(policy, layers.home_overlay.as_ref()),
            scoped,
            filesystem: !private_pid,
        }),
        allow_list: None,
        landlock_only_filter: None,
        // A private PID namespace's leftovers die with its PID 1.
        reaper: d.reaper(),
        refuse_keyrings: !policy.settings.share_keyring.value,
        // One filter, the warden's rules included. Signals are the
        // kernel's to refuse where Landlock scopes them, and every call
        // aimed at a process where host processes cannot be named.
        filter: Filter::Seccomp(Profile {
            warden: !private_pid,
            unscoped: !scoped,
            root,
            landlock_only: false,
            explain: d.explain && !private_pid,
        }),
        caller_filters: Vec::new(),
        // With a monitor, armed before its fork.
        die_with_parent: policy.die_with_parent && !private_pid,
        new_session,
        detach_terminal,
        pid_one: private_pid.then_some(PidOne {
            forward_signals: true,
            wait_all: keep_background,
            hand_to_warden: true,
        }),
        block_fd: None,
        argv: policy.command.clone(),
        argv0: None,
        env: environment(policy, layers, d.proxied),
    }
}

/// The command's environment: the policy's rules, the proxy's variables
/// and the masked sockets' variables unset.
fn environment(policy: &Policy, layers: &Layers, proxied: bool) -> crate::policy::EnvRules {
    let mut env = policy.env.clone();
    if proxied {
        // The proxy's variables, but where the user said otherwise with
        // --setenv or --unsetenv (docs/security.md: --setenv always wins).
        for (k, v) in crate::egress::proxy_variables() {
            let said = policy.user_env_names.iter().any(|n| n == k);
            if !said {
                env.unset.retain(|u| u != k);
                env.set.retain(|(s, _)| s != k);
                env.set.push((k.into(), v.into()));
            }
        }
    }
    for v in &layers.masked_variables {
        if !env.unset.iter().any(|u| u == v.as_str()) && !env.set.iter().any(|(k, _)| k == v.as_str()) {
            env.unset.push(v.into());
        }
    }
    env
}

/// The writable roots (caches and a shared temp aside) walked for repositories the command
/// makes, and the `.git`s there at the start; none with
/// `--allow-git-config`, where git dirs are the command's anyway, nor in
/// review mode, where nothing reaches the host before `review apply`.
pub(super) fn repo_scan(policy: &Policy) -> Option<RepoScan> {
    let off = policy.settings.allow_git_config.value || policy.review.is_some();
    (!off).then(|| RepoScan {
        roots: crate::policy::scanned(&policy.writable_roots),
        known: policy
            .repos
            .dot_gits
            .iter()
            .chain(&policy.repos.bare)
            .chain(&policy.repos.linked)
            .chain(&policy.repos.hg)
            .cloned()
            .collect(),
        lfs: policy
            .git_layouts
            .iter()
            .flat_map(|l| l.shared.iter().filter(|s| s.ends_with("lfs")).cloned())
            .collect(),
        absent: in_roots(policy, &policy.repos.absent),
        trusted: in_roots(policy, &policy.repos.trusted),
        ways: in_roots(policy, &policy.repos.ways),
        cut: policy.repos.note.is_some(),
    })
}

/// The paths that lie in a writable root (the command can change no other).
fn in_roots(policy: &Policy, paths: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    paths
        .iter()
        .filter(|p| policy.writable_roots.iter().any(|r| p.starts_with(&r.path)))
        .cloned()
        .collect()
}
