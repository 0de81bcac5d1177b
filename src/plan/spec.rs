//! The sandbox both front ends ask for, before it is steps: `run` builds
//! one from a Policy (run_spec.rs), bwrap mode from bubblewrap's options
//! (bwrap/mod.rs), and [`lower`] is the one function that turns either
//! into the executor's steps — the namespace prologue, the mounts on the
//! host's mount API, the switch of root and the confinement, always in
//! the same order.

use super::{Builder, Confinement, MountOp, Namespaces, Plan, Shape, Step, identity};
use crate::host::MountApi;
use crate::plan::{
    BlockOnFd, CloneMonitor, EnterRoot, ForkIntoPidNamespace, JoinNamespace, ListenEgress, Remount,
    SetHostname, Unshare,
};

/// One sandbox, as a front end describes it.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// Work on the host before anything is unshared, in order (`run`: the
    /// host directories, the caches' layers, redacted rc files, the warden,
    /// the sandbox's cgroups).
    pub host: Vec<Step>,
    /// `run` with a limit that needs a cgroup: the process that becomes the
    /// command joins the sandbox's groups, after the host steps (or, with a
    /// monitor, in the monitor's child), before it forks anything.
    pub join_cgroup: Option<Step>,
    pub ns: Namespaces,
    pub entry: Entry,
    pub identity: Identity,
    /// bwrap's `--disable-userns`: no user namespace past this one.
    pub disable_userns: bool,
    pub hostname: Option<std::ffi::OsString>,
    /// `--network proxied`: the port the proxy listens on inside.
    pub egress_port: Option<u16>,
    /// Inherited descriptors' steps, after the mounts turn slave and before
    /// the layout (`run`: devices bound read-only, files reopened).
    pub inherited: Vec<Step>,
    pub mounts: Vec<MountOp>,
    pub mount_api: MountApi,
    pub shape: Shape,
    /// The assembled root made read-only before it is entered (`run`'s
    /// minimal view: nothing lands in its throwaway tmpfs).
    pub seal_root: bool,
    /// Destinations are resolved inside the assembled root
    /// (`RESOLVE_IN_ROOT`): bwrap mode's caller names them, and a symlink
    /// its own binds put there must not lead out.
    pub resolve_in_root: bool,
    /// Steps once the root is the sandbox's (`run`: the git dirs handed to
    /// the warden).
    pub in_root: Vec<Step>,
    pub confinement: Confinement,
}

/// How the namespaces are entered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// No namespaces at all (`--isolation landlock`): no mounts either;
    /// Landlock and seccomp confine the host's own view.
    None,
    /// unshare(2) in qwrap's own process, which becomes the command.
    Unshare,
    /// A monitor stays outside and the child goes on (a PID namespace of
    /// the sandbox's own, or bubblewrap's model).
    Monitor {
        /// The monitor dies with its parent (armed before the fork).
        die_with_parent: bool,
        info_fd: Option<i32>,
        json_status_fd: Option<i32>,
        /// The monitor relays signals to the sandbox.
        forward_signals: bool,
        /// Namespaces joined rather than made (bwrap's `--userns`,
        /// `--pidns`): the child unshares after joining and reports when
        /// it is ready.
        join: Option<Join>,
        /// bwrap mode with `QWRAP_EXPLAIN`: the monitor judges the calls
        /// that can be refused (the filter hands them over) and says the
        /// refusals when the sandbox is gone.
        explain: Option<Box<super::explain::Explain>>,
    },
}

/// Namespaces joined by descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Join {
    pub userns_fd: Option<i32>,
    pub pidns_fd: Option<i32>,
}

/// Who the sandbox is in its user namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// No maps of qwrap's: no user namespace made, or one joined.
    None,
    /// One id each, (inside, outside), setgroups denied.
    Map { uid: (u32, u32), gid: (u32, u32) },
    /// The caller writes the maps, then writes to this descriptor.
    CallerMaps { block_fd: i32 },
}

/// The executor's steps for a sandbox, whichever front end described it.
pub fn lower(spec: SandboxSpec) -> Plan {
    let mut b = Builder::default();
    b.steps.extend(spec.host);
    let ns = spec.ns;
    let join_cgroup = spec.join_cgroup;
    let join = match &spec.entry {
        Entry::None => {
            b.steps.extend(join_cgroup);
            b.steps.extend(spec.confinement.steps());
            return Plan {
                mount_api: spec.mount_api,
                new_root: None,
                steps: b.steps,
            };
        }
        Entry::Unshare => {
            b.steps.extend(join_cgroup);
            b.push(Step::Unshare(Unshare { ns }));
            None
        }
        Entry::Monitor {
            die_with_parent,
            info_fd,
            json_status_fd,
            forward_signals,
            join,
            explain,
        } => {
            if *die_with_parent {
                // The monitor, and every child that goes on from here.
                b.push(Step::DieWithParent);
            }
            b.push(Step::CloneMonitor(CloneMonitor {
                ns,
                info_fd: *info_fd,
                json_status_fd: *json_status_fd,
                join: join.is_some(),
                forward_signals: *forward_signals,
                explain: explain.clone(),
            }));
            // The monitor stays out of the groups; its child goes in.
            b.steps.extend(join_cgroup);
            *join
        }
    };
    if let Some(j) = join {
        if let Some(fd) = j.userns_fd {
            b.push(Step::JoinNamespace(JoinNamespace { fd, pid: false }));
        }
        // Joining needs the namespaces made in order (setns before
        // unshare); the PID namespace is made by the fork into it.
        b.push(Step::Unshare(Unshare {
            ns: Namespaces { pid: false, ..ns },
        }));
    }
    match spec.identity {
        Identity::None => {}
        Identity::Map { uid, gid } => b.steps.extend(identity(uid, gid)),
        // The caller reads the child's pid from --info-fd, writes its id
        // maps, then writes to this fd.
        Identity::CallerMaps { block_fd } => b.push(Step::BlockOnFd(BlockOnFd { fd: block_fd })),
    }
    if let Some(j) = join {
        if let Some(fd) = j.pidns_fd {
            b.push(Step::JoinNamespace(JoinNamespace { fd, pid: true }));
        }
        if ns.pid || j.pidns_fd.is_some() {
            b.push(Step::ForkIntoPidNamespace(ForkIntoPidNamespace {
                new_pidns: ns.pid,
            }));
        } else {
            b.push(Step::NotifyMonitor);
        }
    }
    if spec.disable_userns {
        b.push(Step::DisableUserns);
    }
    if ns.net {
        b.push(Step::LoopbackUp);
    }
    if let Some(port) = spec.egress_port {
        b.push(Step::ListenEgress(ListenEgress { port }));
    }
    if let Some(name) = spec.hostname {
        b.push(Step::SetHostname(SetHostname { name }));
    }
    b.push(Step::MakeMountsSlave);
    b.steps.extend(spec.inherited);
    let new_root = match spec.mount_api {
        MountApi::New => b.mounts_new_api(&spec.mounts, spec.shape),
        MountApi::Legacy => Some(b.mounts_legacy(&spec.mounts, spec.shape)),
    };
    if let Some(root) = &new_root {
        if spec.seal_root {
            b.push(Step::Remount(Remount {
                target: root.clone(),
                flags: super::Flags::RDONLY_NOSUID_NODEV,
            }));
        }
        b.push(Step::EnterRoot(EnterRoot {
            new_root: root.clone(),
        }));
    }
    b.steps.extend(spec.in_root);
    b.steps.extend(spec.confinement.steps());
    Plan {
        mount_api: spec.mount_api,
        new_root: new_root.filter(|_| spec.resolve_in_root),
        steps: b.steps,
    }
}
