//! What both front ends share around the mounts, in one order: the identity
//! maps after the namespaces, and everything from the working directory to
//! the command — capabilities, no_new_privs, descriptors, Landlock, seccomp,
//! the last forks, exec. An auditor reads the order here once.

use super::filter_rules::Profile;
use super::{IdMap, Step};
use crate::plan::{
    BlockOnFd, CallerSeccomp, Chdir, Exec, Landlock, LandlockOnlyFilter, LandlockScopes, PidOneInit, SealFds,
    SeccompToMonitor, WriteIdMap,
};
use crate::policy::EnvRules;
use std::ffi::OsString;
use std::path::PathBuf;

/// `setgroups` denied, then the uid and gid maps (inside, outside).
pub fn identity(uid: (u32, u32), gid: (u32, u32)) -> [Step; 3] {
    [
        Step::DenySetgroups,
        Step::WriteIdMap(WriteIdMap {
            map: IdMap::Uid,
            inside: uid.0,
            outside: uid.1,
        }),
        Step::WriteIdMap(WriteIdMap {
            map: IdMap::Gid,
            inside: gid.0,
            outside: gid.1,
        }),
    ]
}

/// The seccomp filter qwrap installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// One of filter_rules.rs's profiles: `run`'s (with the warden, or a
    /// private PID namespace's without), bwrap mode's layers
    /// (`Profile::PLAIN`).
    Seccomp(Profile),
    /// bwrap mode with `QWRAP_EXPLAIN`: the calls that can be refused go
    /// to the monitor, with the layers' refusals folded in (`layers`).
    Monitor {
        layers: bool,
    },
    None,
}

/// PID 1 of a new PID namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PidOne {
    /// `run`: signals from outside go on to the command.
    pub forward_signals: bool,
    /// --keep-background: PID 1 stays until every process is gone.
    pub wait_all: bool,
    /// `run`: the warden ends with PID 1 (`HandInit`).
    pub hand_to_warden: bool,
}

/// Landlock: write-type access beneath `paths` only, and scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockRules {
    pub abi: u32,
    pub paths: Vec<PathBuf>,
    /// Where FIFOs may be made (step.rs).
    pub fifo: Vec<PathBuf>,
    pub scoped: bool,
    /// False: only the scopes (`run --pid private`, where nested sandboxes
    /// must mount).
    pub filesystem: bool,
}

/// `--isolation landlock`: Landlock over the host's own view, the step
/// `LandlockAllowList`'s payload as the executor takes it: reads and
/// writes both handled, `read` and `write` (reads too) granted beneath each
/// path, `list` only listable (the levels on the way to a hidden or
/// read-only path), `write_files` writable files (the devices every
/// program writes); TCP refused where `no_tcp`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AllowRules {
    pub abi: u32,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub read: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub list: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub write: Vec<PathBuf>,
    /// FIFOs made only beneath these (not the workspace: a host tool
    /// reads it later).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub fifo: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub write_files: Vec<PathBuf>,
    pub scoped: bool,
    pub no_tcp: bool,
}

/// The descriptors that reach the command: kept, and closed with why.
#[derive(Debug, Clone)]
pub struct Seal {
    pub keep: Vec<i32>,
    pub closed: Vec<(i32, String)>,
}

/// The sandbox from its working directory to its command.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// Where the command starts: the first that exists.
    pub chdir: Vec<PathBuf>,
    /// What must happen inside the root before privileges go (bwrap mode:
    /// joining a user namespace, lock files, a nested user namespace).
    pub inside: Vec<Step>,
    /// `DropCapabilities` steps, as the front end's rules give them.
    pub capabilities: Vec<Step>,
    /// `run`: the descriptors that reach the command (kept, closed).
    pub seal: Option<Seal>,
    pub landlock: Option<LandlockRules>,
    /// `--isolation landlock`: the allow-list instead of `landlock`.
    pub allow_list: Option<AllowRules>,
    /// `--isolation landlock`: the second filter (`Some(closed)`).
    pub landlock_only_filter: Option<bool>,
    /// `run` with Landlock's signal scope: the reaper, just before the ruleset.
    pub reaper: bool,
    pub filter: Filter,
    /// `run`: the keyring calls refused by a filter of their own (unless
    /// `--share-keyring`).
    pub refuse_keyrings: bool,
    /// bwrap mode: the caller's seccomp programs (installed at exec).
    pub caller_filters: Vec<Vec<u8>>,
    /// `run`: die with the parent (bwrap mode arms it before its first fork).
    pub die_with_parent: bool,
    pub new_session: bool,
    /// `run`: the caller's controlling terminal given up (no terminal on
    /// fds 0-2, and the caller does not lead its session).
    pub detach_terminal: bool,
    /// PID 1 of the new PID namespace forks the command.
    pub pid_one: Option<PidOne>,
    /// bwrap mode's `--block-fd`.
    pub block_fd: Option<i32>,
    pub argv: Vec<OsString>,
    pub argv0: Option<OsString>,
    pub env: EnvRules,
}

impl Confinement {
    /// The steps, in the one order: no privilege is left when the layers
    /// go in, the filters are the last thing before the forks and exec.
    pub fn steps(self) -> Vec<Step> {
        let mut s = vec![Step::Chdir(Chdir {
            candidates: self.chdir,
        })];
        s.extend(self.inside);
        s.extend(self.capabilities);
        s.push(Step::NoNewPrivs);
        if let Some(Seal { keep, closed }) = self.seal {
            s.push(Step::SealFds(SealFds { keep, closed }));
        }
        if self.reaper {
            s.push(Step::StartReaper);
        }
        match self.landlock {
            Some(LandlockRules {
                abi,
                filesystem: false,
                ..
            }) => s.push(Step::LandlockScopes(LandlockScopes { abi })),
            Some(LandlockRules {
                abi,
                paths,
                fifo,
                scoped,
                ..
            }) => s.push(Step::Landlock(Landlock {
                abi,
                paths,
                fifo,
                scoped,
            })),
            None => {}
        }
        if let Some(a) = self.allow_list {
            s.push(Step::LandlockAllowList(a));
        }
        match self.filter {
            Filter::Seccomp(p) => s.push(Step::Seccomp(p)),
            Filter::Monitor { layers } => s.push(Step::SeccompToMonitor(SeccompToMonitor { layers })),
            Filter::None => {}
        }
        // With --explain the stacked filters' calls go to the warden
        // through the one filter, which refuses them as they would: a
        // stacked filter's errno would win over its notification.
        let folded = matches!(self.filter, Filter::Seccomp(p) if p.warden && p.explain);
        if self.refuse_keyrings && !folded {
            s.push(Step::RefuseKeyrings);
        }
        if let Some(closed) = self.landlock_only_filter.filter(|_| !folded) {
            s.push(Step::LandlockOnlyFilter(LandlockOnlyFilter { closed }));
        }
        if !self.caller_filters.is_empty() {
            s.push(Step::CallerSeccomp(CallerSeccomp {
                programs: self.caller_filters,
            }));
        }
        if self.die_with_parent {
            s.push(Step::DieWithParent);
        }
        if self.new_session {
            s.push(Step::NewSession);
        } else if self.detach_terminal {
            s.push(Step::DetachTerminal);
        }
        if let Some(one) = self.pid_one {
            if one.hand_to_warden {
                s.push(Step::HandInit);
            }
            s.push(Step::PidOneInit(PidOneInit {
                forward_signals: one.forward_signals,
                wait_all: one.wait_all,
            }));
        }
        if let Some(fd) = self.block_fd {
            s.push(Step::BlockOnFd(BlockOnFd { fd }));
        }
        s.push(Step::Exec(Exec {
            argv: self.argv,
            argv0: self.argv0,
            env: self.env,
        }));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::DropCapabilities;

    #[test]
    fn privileges_go_before_the_layers_and_the_filters_last_before_exec() {
        let s = Confinement {
            chdir: vec!["/w".into()],
            inside: vec![Step::AssertUsernsDisabled],
            capabilities: vec![Step::DropCapabilities(DropCapabilities {
                keep: vec![],
                bounding: true,
                ambient: crate::plan::Ambient::Lower,
            })],
            seal: Some(Seal {
                keep: vec![0, 1, 2],
                closed: vec![],
            }),
            landlock: Some(LandlockRules {
                abi: 7,
                paths: vec!["/w".into()],
                fifo: vec![],
                scoped: true,
                filesystem: true,
            }),
            allow_list: None,
            landlock_only_filter: None,
            reaper: false,
            refuse_keyrings: false,
            filter: Filter::Seccomp(Profile::PLAIN),
            caller_filters: vec![vec![0; 8]],
            die_with_parent: true,
            new_session: true,
            detach_terminal: false,
            pid_one: Some(PidOne::default()),
            block_fd: Some(9),
            argv: vec!["true".into()],
            argv0: None,
            env: EnvRules {
                clear: false,
                unset: vec![],
                set: vec![],
            },
        }
        .steps();
        let at = |f: fn(&Step) -> bool| s.iter().position(f).unwrap();
        let order = [
            at(|s| matches!(s, Step::Chdir(Chdir { .. }))),
            at(|s| matches!(s, Step::AssertUsernsDisabled)),
            at(|s| matches!(s, Step::DropCapabilities(DropCapabilities { .. }))),
            at(|s| matches!(s, Step::NoNewPrivs)),
            at(|s| matches!(s, Step::SealFds(SealFds { .. }))),
            at(|s| matches!(s, Step::Landlock(Landlock { .. }))),
            at(|s| matches!(s, Step::Seccomp(_))),
            at(|s| matches!(s, Step::CallerSeccomp(CallerSeccomp { .. }))),
            at(|s| matches!(s, Step::DieWithParent)),
            at(|s| matches!(s, Step::NewSession)),
            at(|s| matches!(s, Step::PidOneInit(PidOneInit { .. }))),
            at(|s| matches!(s, Step::BlockOnFd(BlockOnFd { .. }))),
            at(|s| matches!(s, Step::Exec(Exec { .. }))),
        ];
        assert_eq!(order.to_vec(), (0..order.len()).collect::<Vec<_>>(), "{s:?}");
    }
}
