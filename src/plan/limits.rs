//! The limits a policy asks for, on this host. `--memory`,
//! `--max-processes` and `--cpus` need a cgroup of the sandbox's own:
//! cgroup v2 where a group on the way up from the caller's own delegates
//! every controller asked for and the caller may write it (a systemd user
//! manager's `user@UID.service`, or root), else v1 where the caller may
//! make a group in its own group of each hierarchy (root). The group is
//! made after the warden starts (so the warden stays out of it) and the
//! process that becomes the command joins it before it forks; the warden
//! empties and removes it when the sandbox ends. `--time-limit` is the
//! warden's alone. A limit that cannot hold is refused, with why and the
//! fix: never left out.

use super::{Decisions, LayerState, LimitWatch, Step, Watched};
use crate::host::HostFacts;
use crate::host::cgroups::{CgroupFacts, Hierarchy};
use crate::plan::{JoinCgroup, MakeCgroup};
use crate::policy::Policy;
pub use crate::policy::limits::human_bytes;
use std::path::PathBuf;

/// The group the command joins, beneath the one that holds the limits: a
/// cgroup namespace the command makes (`--pid private` allows nested
/// sandboxes) has its root there, so that no limit is in its view to be
/// written, and it cannot move out of the limits' group.
pub const LEAF: &str = "sandbox";
/// The cfs period qwrap writes (cpu.max's default): 100 ms.
const PERIOD_US: u64 = 100_000;
/// The grace between the time limit's SIGTERM and its SIGKILL.
pub const GRACE_S: u64 = 2;
/// The limits' layer when none is asked for.
pub const NONE_ASKED: &str = "none asked (--memory, --max-processes, --cpus, --time-limit); the private /tmp and /dev/shm have their size (--tmpfs-size)";

/// What the plan does for the limits.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// `MakeCgroup` steps, on the host once the warden runs.
    pub make: Vec<Step>,
    /// `JoinCgroup`, where the command's tree begins.
    pub join: Option<Step>,
    /// The warden's part.
    pub watch: Option<LimitWatch>,
}

/// The limits asked for, in the units the kernel takes.
struct Asked {
    memory: Option<u64>,
    tasks: Option<u32>,
    milli_cpus: Option<u32>,
    time_ms: Option<u64>,
}

impl Asked {
    fn of(policy: &Policy, host: &HostFacts) -> Result<Asked, String> {
        let s = &policy.settings;
        let memory = match s.memory.value.0 {
            None => None,
            Some(_) => Some(s.memory.value.bytes(host.mem_total).ok_or_else(|| {
                format!(
                    "--memory {} (from {}): the host's memory is unknown, so a share of it is none; give a size (512M, 4G)",
                    s.memory.value, s.memory.source
                )
            })?),
        };
        Ok(Asked {
            memory,
            tasks: s.max_processes.value.0,
            milli_cpus: s.cpus.value.0,
            time_ms: s.time_limit.value.0,
        })
    }

    /// The controllers a group needs, by the flag that asks for each.
    fn controllers(&self, policy: &Policy) -> Vec<(&'static str, String)> {
        let s = &policy.settings;
        let mut v = Vec::new();
        if self.memory.is_some() {
            v.push((
                "memory",
                format!("--memory {} (from {})", s.memory.value, s.memory.source),
            ));
        }
        if self.tasks.is_some() {
            let how = format!(
                "--max-processes {} (from {})",
                s.max_processes.value, s.max_processes.source
            );
            v.push(("pids", how));
        }
        if self.milli_cpus.is_some() {
            v.push(("cpu", format!("--cpus {} (from {})", s.cpus.value, s.cpus.source)));
        }
        v
    }
}

/// The tasks of qwrap's own inside the group besides the command's tree:
/// the reaper, PID 1 of a private PID namespace, the --new-session
/// supervisor (where qwrap leads its process group).
fn helpers(policy: &Policy, d: &Decisions) -> u64 {
    u64::from(d.reaper()) + u64::from(d.private_pid) + u64::from(policy.new_session)
}

/// The limits' plan and their layer, or why they cannot hold here.
pub fn plan(policy: &Policy, host: &HostFacts, d: &Decisions) -> Result<(Limits, LayerState), String> {
    let asked = Asked::of(policy, host)?;
    let need = asked.controllers(policy);
    let say = !policy.quiet && !d.keep_background;
    let time = asked.time_ms.map(|_| {
        format!(
            "wall clock {} (the warden: SIGTERM to every process, SIGKILL {GRACE_S} s later)",
            policy.settings.time_limit.value
        )
    });
    if need.is_empty() {
        let Some(time) = time else {
            return Ok((Limits::default(), LayerState::Off(NONE_ASKED.into())));
        };
        let watch = LimitWatch {
            groups: Vec::new(),
            v2: false,
            memory: None,
            processes: None,
            time_ms: asked.time_ms,
            say,
        };
        let limits = Limits {
            watch: Some(watch),
            ..Limits::default()
        };
        return Ok((limits, LayerState::Applied(time)));
    }
    let empty = CgroupFacts::default();
    let facts = host.cgroups.as_ref().unwrap_or(&empty);
    let names: Vec<&str> = need.iter().map(|(c, _)| *c).collect();
    let name = format!("qwrap-{}", facts.run);
    let extra = helpers(policy, d);
    let (groups, v2, writes) = match unified(facts, &names) {
        Ok(parent) => {
            let dir = parent.join(&name);
            (
                vec![dir.clone()],
                true,
                vec![(dir, v2_writes(&asked, facts.swap, extra))],
            )
        }
        Err(v2_why) => match hierarchies(facts, &names) {
            Ok(hs) => {
                if asked.memory.is_some() && facts.swap && !hs.iter().any(|h| has(h, "memory") && h.memsw) {
                    return Err(format!(
                        "{} cannot be enforced: the host has swap, and its v1 memory hierarchy does not account it (no memory.memsw.limit_in_bytes: the kernel runs without swapaccount=1), so the tree could swap past the limit; turn swap off, boot with swapaccount=1, or leave --memory out",
                        need[0].1
                    ));
                }
                let writes: Vec<(PathBuf, Vec<(String, String)>)> = hs
                    .iter()
                    .filter_map(|h| Some((h.dir.as_ref()?.join(&name), v1_writes(&asked, h, extra))))
                    .collect();
                (writes.iter().map(|(d, _)| d.clone()).collect(), false, writes)
            }
            Err(v1_why) => return Err(refusal(&need, host.uid, &v2_why, &v1_why)),
        },
    };
    let group_of = |controller: &str| -> PathBuf {
        if v2 {
            return groups[0].clone();
        }
        let at = hierarchies(facts, &names)
            .ok()
            .and_then(|hs| hs.iter().position(|h| has(h, controller)))
            .unwrap_or(0);
        groups[at].clone()
    };
    let watch = LimitWatch {
        groups: groups.clone(),
        v2,
        memory: asked.memory.map(|limit| Watched {
            limit,
            group: group_of("memory"),
        }),
        processes: asked.tasks.map(|n| Watched {
            limit: u64::from(n),
            group: group_of("pids"),
        }),
        time_ms: asked.time_ms,
        say,
    };
    let parts = described(&asked, policy, time);
    let state = LayerState::Applied(format!(
        "cgroup {} {}: {}",
        if v2 { "v2" } else { "v1" },
        groups
            .iter()
            .map(|g| g.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        parts.join("; ")
    ));
    let limits = Limits {
        make: writes
            .into_iter()
            .map(|(dir, limits)| Step::MakeCgroup(MakeCgroup { dir, limits }))
            .collect(),
        join: Some(Step::JoinCgroup(JoinCgroup {
            groups: groups.iter().map(|g| g.join(LEAF)).collect(),
        })),
        watch: Some(watch),
    };
    Ok((limits, state))
}

/// Each limit asked for, as the layer's line says it.
fn described(asked: &Asked, policy: &Policy, time: Option<String>) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(b) = asked.memory {
        parts.push(format!(
            "memory {} for the whole tree, swap included (at it every process is killed together)",
            human_bytes(b)
        ));
    }
    if let Some(n) = asked.tasks {
        parts.push(format!(
            "{n} tasks (processes and threads; fork fails with EAGAIN past it)"
        ));
    }
    if let Some(m) = asked.milli_cpus {
        let plural = if m == 1000 { "" } else { "s" };
        parts.push(format!(
            "the CPU time of {} CPU{plural}",
            policy.settings.cpus.value
        ));
    }
    parts.extend(time);
    parts
}

/// What a v2 group is given.
fn v2_writes(a: &Asked, swap: bool, extra: u64) -> Vec<(String, String)> {
    let mut w = Vec::new();
    if let Some(b) = a.memory {
        w.push(("memory.max".into(), b.to_string()));
        if swap {
            w.push(("memory.swap.max".into(), "0".into()));
        }
        w.push(("memory.oom.group".into(), "1".into()));
    }
    if let Some(n) = a.tasks {
        w.push(("pids.max".into(), (u64::from(n) + extra).to_string()));
    }
    if let Some(m) = a.milli_cpus {
        w.push(("cpu.max".into(), format!("{} {PERIOD_US}", quota(m))));
    }
    w
}

/// What a v1 group in hierarchy `h` is given.
fn v1_writes(a: &Asked, h: &Hierarchy, extra: u64) -> Vec<(String, String)> {
    let mut w = Vec::new();
    if let (Some(b), true) = (a.memory, has(h, "memory")) {
        w.push(("memory.limit_in_bytes".into(), b.to_string()));
        if h.memsw {
            w.push(("memory.memsw.limit_in_bytes".into(), b.to_string()));
        }
    }
    if let (Some(n), true) = (a.tasks, has(h, "pids")) {
        w.push(("pids.max".into(), (u64::from(n) + extra).to_string()));
    }
    if let (Some(m), true) = (a.milli_cpus, has(h, "cpu")) {
        w.push(("cpu.cfs_period_us".into(), PERIOD_US.to_string()));
        w.push(("cpu.cfs_quota_us".into(), quota(m).to_string()));
    }
    w
}

/// Microseconds of CPU per period for thousandths of a CPU.
fn quota(milli: u32) -> u64 {
    u64::from(milli) * PERIOD_US / 1000
}

fn has(h: &Hierarchy, controller: &str) -> bool {
    h.controllers.iter().any(|c| c == controller)
}

/// The v2 group to make the sandbox's in: the nearest on the way up from
/// the caller's own that delegates every controller needed and that the
/// caller may write; or why there is none.
fn unified(facts: &CgroupFacts, need: &[&str]) -> Result<PathBuf, String> {
    let Some(u) = &facts.unified else {
        return Err("no cgroup2 filesystem is mounted".into());
    };
    let delegates = |subtree: &[String]| need.iter().all(|n| subtree.iter().any(|s| s == n));
    if let Some(l) = u
        .levels
        .iter()
        .find(|l| delegates(&l.subtree) && l.not_writable.is_none())
    {
        return Ok(l.dir.clone());
    }
    let own = u
        .levels
        .first()
        .map_or_else(String::new, |l| l.path.display().to_string());
    let lacking = |subtree: &[String]| -> String {
        need.iter()
            .filter(|n| !subtree.iter().any(|s| s == *n))
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(
        match (
            u.levels.iter().rev().find(|l| l.not_writable.is_none()),
            u.levels.iter().find(|l| delegates(&l.subtree)),
        ) {
            (Some(w), _) => format!(
                "cgroup v2 ({}): the highest group the caller may write on the way up from its own ({own}), {}, does not delegate {} (its cgroup.subtree_control: {})",
                u.mount.display(),
                w.path.display(),
                lacking(&w.subtree),
                listed(&w.subtree)
            ),
            (None, Some(d)) => format!(
                "cgroup v2 ({}): no group on the way up from the caller's own ({own}) is the caller's to write; the nearest that delegates {}, {}, is not ({})",
                u.mount.display(),
                and_list(need),
                d.path.display(),
                d.not_writable.as_deref().unwrap_or("not writable")
            ),
            (None, None) => format!(
                "cgroup v2 ({}): no group on the way up from the caller's own ({own}) is the caller's to write, and none delegates {}",
                u.mount.display(),
                and_list(need)
            ),
        },
    )
}

/// The v1 hierarchies that bind the controllers needed, each the caller's
/// to make a group in; or why not.
fn hierarchies<'a>(facts: &'a CgroupFacts, need: &[&str]) -> Result<Vec<&'a Hierarchy>, String> {
    let mut out: Vec<&Hierarchy> = Vec::new();
    let mut why = Vec::new();
    for n in need {
        match facts.v1.iter().find(|h| has(h, n)) {
            None => why.push(format!("no v1 hierarchy binds {n}")),
            Some(h) if h.dir.is_none() => why.push(format!(
                "the v1 {n} hierarchy ({}) does not show the caller's group {}",
                h.mount.display(),
                h.own.display()
            )),
            Some(h) if h.not_writable.is_some() => why.push(format!(
                "in the v1 {n} hierarchy the caller's group {} is not the caller's to write ({})",
                h.dir.as_deref().unwrap_or(&h.mount).display(),
                h.not_writable.as_deref().unwrap_or("not writable")
            )),
            Some(h) if out.iter().any(|o| std::ptr::eq(*o, h)) => {}
            Some(h) => out.push(h),
        }
    }
    if why.is_empty() {
        Ok(out)
    } else {
        Err(why.join("; "))
    }
}

/// "memory", "memory and pids", "memory, pids and cpu".
fn and_list(v: &[&str]) -> String {
    match v {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn listed(v: &[String]) -> String {
    if v.is_empty() { "empty".into() } else { v.join(" ") }
}

/// The refusal: which limits, why neither hierarchy holds them, the fix.
fn refusal(need: &[(&str, String)], uid: u32, v2: &str, v1: &str) -> String {
    let asked: Vec<&str> = need.iter().map(|(_, how)| how.as_str()).collect();
    let controllers: Vec<&str> = need.iter().map(|(c, _)| *c).collect();
    let fix = if uid == 0 {
        format!(
            "enable {} in a parent's cgroup.subtree_control (cgroup v2), or mount the v1 hierarchies",
            and_list(&controllers)
        )
    } else {
        format!(
            "start qwrap in a group delegated to uid {uid}: under systemd, `systemd-run --user --scope -p Delegate=yes qwrap run …` (its user manager delegates {} beneath user@{uid}.service), or ask an administrator to delegate them",
            and_list(&controllers)
        )
    };
    format!(
        "{} cannot be enforced here: it needs a cgroup of the sandbox's own with {}, and none can be made ({v2}; {v1}). Fix: {fix}; or leave the limit out",
        asked.join(", "),
        and_list(&controllers)
    )
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
