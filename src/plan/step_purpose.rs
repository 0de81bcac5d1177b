//! What each step is for, in a few words: how error messages name it.

use super::step::{IdMap, Role, Step};

impl Step {
    /// A short phrase naming what the step is for, used in error messages.
    pub fn purpose(&self) -> String {
        match self {
            Step::PrepareCaches { .. }
            | Step::WriteHostFile { .. }
            | Step::CreateHostDir { .. }
            | Step::StartWarden { .. }
            | Step::PrepareReview { .. }
            | Step::MakeCgroup { .. }
            | Step::JoinCgroup { .. } => host_purpose(self),
            Step::ListenEgress { .. } => "hand the egress proxy's socket to the warden".into(),
            Step::Unshare { ns } if ns.user && !ns.net => "create user and mount namespaces".into(),
            Step::Unshare { ns } if ns.user => "create user, mount and network namespaces".into(),
            Step::Unshare { .. } => "create the sandbox's namespaces".into(),
            Step::RefuseKeyrings => "refuse the keyring calls".into(),
            Step::Seccomp(p) if p.warden && p.explain => {
                "install the seccomp filter, handing calls aimed at other processes and every call that can be refused to the warden".into()
            }
            Step::Seccomp(p) if p.warden => {
                "install the seccomp filter, handing calls aimed at other processes to the warden".into()
            }
            Step::SeccompToMonitor { .. } => TO_MONITOR.into(),
            Step::DenySetgroups => "deny setgroups in the user namespace".into(),
            Step::WriteIdMap { map, inside, .. } => {
                format!(
                    "map {} {inside} to itself",
                    if *map == IdMap::Uid { "uid" } else { "gid" }
                )
            }
            Step::LoopbackUp => "bring up lo in the new network namespace".into(),
            Step::MakeMountsSlave => "keep the sandbox's mounts from propagating to the host".into(),
            Step::CloneTree { .. }
            | Step::SetTreeAttr { .. }
            | Step::MountTmpfs { .. }
            | Step::AttachTree { .. }
            | Step::BindMount { .. }
            | Step::MakeMountPoint { .. }
            | Step::Symlink { .. }
            | Step::ClaimPty { .. }
            | Step::MountDevpts { .. }
            | Step::SetPathAttr { .. }
            | Step::Remount { .. }
            | Step::MakeTreePrivate { .. }
            | Step::RemountTree { .. }
            | Step::PivotRoot { .. }
            | Step::EnterRoot { .. } => tree_purpose(self),
            Step::Chdir { candidates } if candidates.len() == 1 => {
                format!("enter {}", candidates[0].display())
            }
            Step::Chdir { .. } => "enter the working directory".into(),
            Step::DropCapabilities { keep, .. } if keep.is_empty() => "drop every capability".into(),
            Step::DropCapabilities { .. } => "drop every capability but those kept".into(),
            Step::NoNewPrivs => "set no_new_privs".into(),
            Step::Landlock { .. } => "apply the Landlock ruleset".into(),
            Step::HandGitDirs { .. } => "hand the sandbox's own git dir levels to the warden".into(),
            Step::StartReaper => "start the reaper that ends the sandbox with the command".into(),
            Step::Seccomp(_) => "install the seccomp filter".into(),
            Step::MakePrivateDir { path } => format!("make the command's own directory {}", path.display()),
            Step::LandlockAllowList { .. } => "apply the Landlock rules over the host's view".into(),
            Step::LandlockOnlyFilter { .. } => {
                "install the filter for what the host shares without namespaces".into()
            }
            Step::ReopenFd { fd, path } => format!("open fd {fd} again through {}", path.display()),
            Step::MakeHiddenSource { .. } => "make the empty tmpfs that hides paths".into(),
            Step::AttachHidden { target, .. } => format!("hide {}", target.display()),
            Step::SealFds { .. } => "close the inherited descriptors the command must not have".into(),
            Step::DieWithParent => "die with the parent process".into(),
            Step::NewSession => "start a new session".into(),
            Step::DetachTerminal => "give up the caller's controlling terminal".into(),
            Step::StayInit => "stay as PID 1 until every process has ended (its end would kill the warden)".into(),
            Step::Exec { .. } => "run the command".into(),
            Step::CloneMonitor { join: false, .. } => "create the sandbox's namespaces".into(),
            Step::CloneMonitor { join: true, .. } => "start the sandbox's process".into(),
            Step::JoinNamespace { pid: false, .. } => "join the user namespace".into(),
            Step::JoinNamespace { pid: true, .. } => "join the PID namespace".into(),
            Step::ForkIntoPidNamespace { .. } => "enter the PID namespace".into(),
            Step::NotifyMonitor => "report to the monitor".into(),
            Step::AssertUsernsDisabled => "check that user namespaces are disabled".into(),
            Step::SetHostname { .. } => "set the hostname".into(),
            Step::MountProc { target } => format!("mount proc on {}", target.display()),
            Step::MountMqueue { target } => format!("mount mqueue on {}", target.display()),
            Step::ReadOnlyInPlace { path, .. } => format!("make {} read-only", path.display()),
            Step::CopyFdToFile { path, .. } => format!("write {}", path.display()),
            Step::Chmod { path, .. } => format!("change the mode of {}", path.display()),
            Step::CallerSeccomp { .. } => "install the caller's seccomp filters".into(),
            Step::PidOneInit { .. } => "start the PID 1 reaper".into(),
            Step::HandInit => "hand PID 1 to the warden".into(),
            Step::LandlockScopes { .. } => "apply the Landlock scopes".into(),
            Step::BlockOnFd { fd } => format!("wait for data on fd {fd}"),
            Step::LockFile { path } => format!("lock {}", path.display()),
            Step::DisableUserns => "disable user namespaces inside".into(),
            Step::NestUserNamespace { .. } => "enter the nested user namespace".into(),
            Step::HomeCaches { home, parts, .. } => format!(
                "make one overlay of {2} for its {0} cache{1}",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" },
                home.display()
            ),
            Step::MakeOverlay { lower, .. } => format!(
                "make an overlay of {}",
                lower
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a step that builds the sandbox's mount tree is for.
fn tree_purpose(step: &Step) -> String {
    match step {
        Step::CloneTree { role, source, .. } => match role {
            Role::HostRoot => "clone the host tree".into(),
            _ => format!("clone {} {}", role.noun(), source.display()),
        },
        Step::SetTreeAttr { set, .. } if set.rdonly => "make the cloned tree read-only".into(),
        Step::SetTreeAttr { .. } => "make the cloned tree private".into(),
        Step::MountTmpfs { target, .. } => format!("mount a tmpfs on {}", target.display()),
        Step::AttachTree { role, target, .. } | Step::BindMount { role, target, .. } => match role {
            Role::HostRoot => format!("attach the read-only host tree at {}", target.display()),
            _ => format!("attach {} at {}", role.noun(), target.display()),
        },
        Step::MakeMountPoint { path, dir: true, .. } => format!("create directory {}", path.display()),
        Step::MakeMountPoint { path, .. } => format!("create mount point {}", path.display()),
        Step::Symlink { link, .. } => format!("create symlink {}", link.display()),
        Step::ClaimPty { target, .. } => format!("claim {} in the sandbox's devpts", target.display()),
        Step::MountDevpts { target } => format!("mount devpts on {}", target.display()),
        Step::SetPathAttr {
            target,
            recursive: true,
            ..
        } if target.as_os_str() == "/" => "make the host tree read-only".into(),
        Step::SetPathAttr { target, .. } | Step::Remount { target, .. } => {
            format!("make {} read-only", target.display())
        }
        Step::MakeTreePrivate { target } => format!("make mounts under {} private", target.display()),
        Step::RemountTree {
            target,
            set,
            recursive,
            ..
        } => format!(
            "remount {}{} {}",
            if *recursive { "every mount under " } else { "" },
            target.display(),
            if set.rdonly { "read-only" } else { "nosuid" }
        ),
        Step::PivotRoot { new_root, .. } => format!("switch to the staging root {}", new_root.display()),
        Step::EnterRoot { .. } => "switch to the sandbox root".into(),
        _ => unreachable!("{step:?} builds no mount tree"),
    }
}

/// What a step made on the host before anything is unshared is for.
fn host_purpose(step: &Step) -> String {
    match step {
        Step::PrepareCaches { .. } => {
            "make the cache directories and claim the workspace's layer slot".into()
        }
        Step::WriteHostFile { path, .. } => format!("write {} before the sandbox starts", path.display()),
        Step::CreateHostDir { path } => format!("create {} before the sandbox starts", path.display()),
        Step::StartWarden { .. } => "start the warden outside the sandbox".into(),
        Step::PrepareReview { layer, .. } => {
            format!("make the review layer {} and hold its lock", layer.display())
        }
        Step::MakeCgroup { dir, .. } => format!(
            "make the sandbox's cgroup in {}",
            dir.parent().unwrap_or(dir).display()
        ),
        Step::JoinCgroup { .. } => "move the command's process into the sandbox's cgroups".into(),
        _ => unreachable!("{step:?} is no host step"),
    }
}

/// bwrap mode's filter with `QWRAP_EXPLAIN`.
const TO_MONITOR: &str =
    "install the seccomp filter, handing every call that can be refused to the monitor (QWRAP_EXPLAIN)";
