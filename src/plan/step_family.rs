//! The four families of steps, by where they act: on the host before
//! anything is unshared, on the namespaces and ids, on the mounts, on the
//! process that becomes the command. Each family's module holds its
//! steps' types, their text, purpose and hint (step_host.rs,
//! step_namespace.rs, step_mount.rs, step_process.rs); the executor runs
//! each family in a module of its own (exec/*_steps.rs); the JSON plan
//! names each step's.

use super::step::Step;
use super::{HostStep, MountStep, NamespaceStep, ProcessStep};
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// On the host, before the namespaces: directories, files, the caches'
    /// layers, the warden.
    Host,
    /// Namespaces, id maps, the monitor and the forks into a PID namespace.
    Namespace,
    /// Mounts: the new root, its trees, /dev, /proc, hidden paths.
    Mount,
    /// The process: privileges, Landlock, seccomp, descriptors, the command.
    Process,
}

/// A step seen as one of its family's (each family's text, purpose and
/// hint match on their own steps alone).
#[derive(Debug, Clone, Copy)]
pub enum View<'a> {
    Host(HostStep<'a>),
    Namespace(NamespaceStep<'a>),
    Mount(MountStep<'a>),
    Process(ProcessStep<'a>),
}

impl Step {
    /// The step as its family's.
    pub fn view(&self) -> View<'_> {
        match self {
            Step::CreateHostDir(s) => View::Host(HostStep::CreateHostDir(s)),
            Step::WriteHostFile(s) => View::Host(HostStep::WriteHostFile(s)),
            Step::PrepareCaches(s) => View::Host(HostStep::PrepareCaches(s)),
            Step::PrepareReview(s) => View::Host(HostStep::PrepareReview(s)),
            Step::StartWarden(s) => View::Host(HostStep::StartWarden(s)),
            Step::MakeCgroup(s) => View::Host(HostStep::MakeCgroup(s)),
            Step::MakePrivateDir(s) => View::Host(HostStep::MakePrivateDir(s)),
            Step::Unshare(s) => View::Namespace(NamespaceStep::Unshare(s)),
            Step::DenySetgroups => View::Namespace(NamespaceStep::DenySetgroups),
            Step::WriteIdMap(s) => View::Namespace(NamespaceStep::WriteIdMap(s)),
            Step::LoopbackUp => View::Namespace(NamespaceStep::LoopbackUp),
            Step::CloneMonitor(s) => View::Namespace(NamespaceStep::CloneMonitor(s)),
            Step::JoinNamespace(s) => View::Namespace(NamespaceStep::JoinNamespace(s)),
            Step::ForkIntoPidNamespace(s) => View::Namespace(NamespaceStep::ForkIntoPidNamespace(s)),
            Step::NotifyMonitor => View::Namespace(NamespaceStep::NotifyMonitor),
            Step::AssertUsernsDisabled => View::Namespace(NamespaceStep::AssertUsernsDisabled),
            Step::SetHostname(s) => View::Namespace(NamespaceStep::SetHostname(s)),
            Step::DisableUserns => View::Namespace(NamespaceStep::DisableUserns),
            Step::NestUserNamespace(s) => View::Namespace(NamespaceStep::NestUserNamespace(s)),
            Step::MakeMountsSlave => View::Mount(MountStep::MakeMountsSlave),
            Step::CloneTree(s) => View::Mount(MountStep::CloneTree(s)),
            Step::SetTreeAttr(s) => View::Mount(MountStep::SetTreeAttr(s)),
            Step::MountTmpfs(s) => View::Mount(MountStep::MountTmpfs(s)),
            Step::AttachTree(s) => View::Mount(MountStep::AttachTree(s)),
            Step::MakeMountPoint(s) => View::Mount(MountStep::MakeMountPoint(s)),
            Step::Symlink(s) => View::Mount(MountStep::Symlink(s)),
            Step::MountDevpts(s) => View::Mount(MountStep::MountDevpts(s)),
            Step::ClaimPty(s) => View::Mount(MountStep::ClaimPty(s)),
            Step::SetPathAttr(s) => View::Mount(MountStep::SetPathAttr(s)),
            Step::BindMount(s) => View::Mount(MountStep::BindMount(s)),
            Step::MakeTreePrivate(s) => View::Mount(MountStep::MakeTreePrivate(s)),
            Step::RemountTree(s) => View::Mount(MountStep::RemountTree(s)),
            Step::Remount(s) => View::Mount(MountStep::Remount(s)),
            Step::PivotRoot(s) => View::Mount(MountStep::PivotRoot(s)),
            Step::EnterRoot(s) => View::Mount(MountStep::EnterRoot(s)),
            Step::MakeHiddenSource(s) => View::Mount(MountStep::MakeHiddenSource(s)),
            Step::AttachHidden(s) => View::Mount(MountStep::AttachHidden(s)),
            Step::MountProc(s) => View::Mount(MountStep::MountProc(s)),
            Step::MountMqueue(s) => View::Mount(MountStep::MountMqueue(s)),
            Step::ReadOnlyInPlace(s) => View::Mount(MountStep::ReadOnlyInPlace(s)),
            Step::CopyFdToFile(s) => View::Mount(MountStep::CopyFdToFile(s)),
            Step::Chmod(s) => View::Mount(MountStep::Chmod(s)),
            Step::MakeOverlay(s) => View::Mount(MountStep::MakeOverlay(s)),
            Step::HomeCaches(s) => View::Mount(MountStep::HomeCaches(s)),
            Step::ListenEgress(s) => View::Process(ProcessStep::ListenEgress(s)),
            Step::SeccompToMonitor(s) => View::Process(ProcessStep::SeccompToMonitor(s)),
            Step::Chdir(s) => View::Process(ProcessStep::Chdir(s)),
            Step::DropCapabilities(s) => View::Process(ProcessStep::DropCapabilities(s)),
            Step::NoNewPrivs => View::Process(ProcessStep::NoNewPrivs),
            Step::Landlock(s) => View::Process(ProcessStep::Landlock(s)),
            Step::Seccomp(s) => View::Process(ProcessStep::Seccomp(s)),
            Step::StartReaper => View::Process(ProcessStep::StartReaper),
            Step::LandlockAllowList(s) => View::Process(ProcessStep::LandlockAllowList(s)),
            Step::LandlockOnlyFilter(s) => View::Process(ProcessStep::LandlockOnlyFilter(s)),
            Step::RefuseKeyrings => View::Process(ProcessStep::RefuseKeyrings),
            Step::HandGitDirs(s) => View::Process(ProcessStep::HandGitDirs(s)),
            Step::CallerSeccomp(s) => View::Process(ProcessStep::CallerSeccomp(s)),
            Step::ReopenFd(s) => View::Process(ProcessStep::ReopenFd(s)),
            Step::SealFds(s) => View::Process(ProcessStep::SealFds(s)),
            Step::DieWithParent => View::Process(ProcessStep::DieWithParent),
            Step::NewSession => View::Process(ProcessStep::NewSession),
            Step::StayInit => View::Process(ProcessStep::StayInit),
            Step::DetachTerminal => View::Process(ProcessStep::DetachTerminal),
            Step::PidOneInit(s) => View::Process(ProcessStep::PidOneInit(s)),
            Step::HandInit => View::Process(ProcessStep::HandInit),
            Step::LandlockScopes(s) => View::Process(ProcessStep::LandlockScopes(s)),
            Step::BlockOnFd(s) => View::Process(ProcessStep::BlockOnFd(s)),
            Step::LockFile(s) => View::Process(ProcessStep::LockFile(s)),
            Step::JoinCgroup(s) => View::Process(ProcessStep::JoinCgroup(s)),
            Step::Exec(s) => View::Process(ProcessStep::Exec(s)),
        }
    }

    pub fn family(&self) -> Family {
        match self.view() {
            View::Host(_) => Family::Host,
            View::Namespace(_) => Family::Namespace,
            View::Mount(_) => Family::Mount,
            View::Process(_) => Family::Process,
        }
    }
}

/// How a step reads: the syscalls `qwrap plan` prints for it, one line
/// each (tests/plan_calls.rs holds them to a trace, exec/fake_tests.rs to
/// the executor's code), its family's to say.
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.view() {
            View::Host(s) => s.fmt(f),
            View::Namespace(s) => s.fmt(f),
            View::Mount(s) => s.fmt(f),
            View::Process(s) => s.fmt(f),
        }
    }
}

impl Step {
    /// A short phrase naming what the step is for, used in error messages.
    pub fn purpose(&self) -> String {
        match self.view() {
            View::Host(s) => s.purpose(),
            View::Namespace(s) => s.purpose(),
            View::Mount(s) => s.purpose(),
            View::Process(s) => s.purpose(),
        }
    }
}
