use super::super::tests::{host, policy};
use super::*;
use crate::host::MountApi;
use crate::host::cgroups::tests::systemd_user;
use crate::host::cgroups::{CgroupFacts, Hierarchy};
use crate::plan::{CloneMonitor, JoinCgroup, MakeCgroup, Unshare};
use crate::policy::{CliSettings, NetworkMode, Settings, TmpMode};
use std::path::Path;

/// A policy with these limits (`--memory`, `--max-processes`, `--cpus`,
/// `--time-limit`), and `--pid private` where asked.
fn asking(memory: Option<&str>, tasks: Option<&str>, cpus: Option<&str>, time: Option<&str>) -> Policy {
    let mut p = policy(&["/home/u/proj"], &[], NetworkMode::Open, TmpMode::Private);
    let cli = CliSettings {
        memory: memory.map(Into::into),
        max_processes: tasks.map(Into::into),
        cpus: cpus.map(Into::into),
        time_limit: time.map(Into::into),
        ..Default::default()
    };
    p.settings = Settings::load(&cli, &|_| None, &[]).unwrap();
    p
}

fn private_pid(mut p: Policy) -> Policy {
    let cli = CliSettings {
        pid: Some(crate::policy::PidMode::Private),
        memory: Some(p.settings.memory.value.to_string()),
        ..Default::default()
    };
    p.settings = Settings::load(&cli, &|_| None, &[]).unwrap();
    p
}

fn on(cgroups: CgroupFacts) -> HostFacts {
    let mut h = host(MountApi::New);
    h.cgroups = Some(cgroups);
    h
}

/// Root on a hybrid host: v1 memory, pids and cpu,cpuacct, all writable.
fn v1_root(memsw: bool, swap: bool) -> CgroupFacts {
    let h = |c: &[&str], dir: &str| Hierarchy {
        controllers: c.iter().map(|s| s.to_string()).collect(),
        mount: PathBuf::from(format!("/sys/fs/cgroup/{}", c.join(","))),
        own: "/".into(),
        dir: Some(PathBuf::from(dir)),
        not_writable: None,
        memsw,
    };
    CgroupFacts {
        run: "42".into(),
        swap,
        unified: None,
        v1: vec![
            h(&["memory"], "/sys/fs/cgroup/memory/job"),
            h(&["pids"], "/sys/fs/cgroup/pids"),
            h(&["cpu", "cpuacct"], "/sys/fs/cgroup/cpu,cpuacct"),
        ],
    }
}

fn steps(p: &Policy, h: &HostFacts) -> Vec<Step> {
    super::super::build(p, h).expect("accepted").0.steps
}

#[test]
fn nothing_asked_nothing_made() {
    let p = asking(None, None, None, None);
    let (limits, state) = plan(&p, &host(MountApi::New), &decided(&p)).unwrap();
    assert!(limits.make.is_empty() && limits.join.is_none() && limits.watch.is_none());
    assert!(matches!(state, LayerState::Off(_)));
}

fn assess(p: &Policy) -> super::super::Layers {
    let h = host(MountApi::New);
    super::super::assess(p, &h, &super::super::Isolation::decide(p, &h))
}

fn decided(p: &Policy) -> super::super::Decisions {
    super::super::Decisions::of(p, &host(MountApi::New), &assess(p))
}

#[test]
fn a_time_limit_alone_needs_no_cgroup() {
    let p = asking(None, None, None, Some("90s"));
    // Not even a cgroup filesystem: the warden keeps the time.
    let (limits, state) = plan(&p, &host(MountApi::New), &decided(&p)).unwrap();
    assert!(limits.make.is_empty() && limits.join.is_none());
    let w = limits.watch.unwrap();
    assert_eq!((w.time_ms, w.groups.len()), (Some(90_000), 0));
    assert!(state.is_applied(), "{state}");
}

#[test]
fn cgroup_v2_under_the_delegated_user_manager() {
    let p = asking(Some("512M"), Some("100"), Some("1.5"), None);
    let h = on(systemd_user("cpu memory pids"));
    let s = steps(&p, &h);
    let dir = PathBuf::from("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/qwrap-4242");
    let made = s
        .iter()
        .position(|s| matches!(s, Step::MakeCgroup(MakeCgroup { .. })))
        .unwrap();
    assert_eq!(
        s[made],
        Step::MakeCgroup(MakeCgroup {
            dir: dir.clone(),
            limits: [
                ("memory.max", "536870912"),
                ("memory.swap.max", "0"),
                ("memory.oom.group", "1"),
                // The command's 100, and the reaper (Landlock ABI 7).
                ("pids.max", "101"),
                ("cpu.max", "150000 100000"),
            ]
            .iter()
            .map(|(f, v)| (f.to_string(), v.to_string()))
            .collect(),
        })
    );
    // After the warden (which stays out), before anything is unshared.
    let warden = s.iter().position(|s| matches!(s, Step::StartWarden(_))).unwrap();
    let join = s
        .iter()
        .position(|s| matches!(s, Step::JoinCgroup(JoinCgroup { .. })))
        .unwrap();
    let unshare = s
        .iter()
        .position(|s| matches!(s, Step::Unshare(Unshare { .. })))
        .unwrap();
    assert!(warden < made && made < join && join < unshare, "{s:?}");
    assert_eq!(
        s[join],
        Step::JoinCgroup(JoinCgroup {
            groups: vec![dir.join("sandbox")]
        })
    );
    let Step::StartWarden(crate::plan::StartWarden { limits: Some(w), .. }) = &s[warden] else {
        panic!("{:?}", s[warden])
    };
    assert!(w.v2 && w.say);
    assert_eq!(
        w.memory.as_ref().map(|m| (m.limit, m.group.clone())),
        Some((512 << 20, dir))
    );
    assert_eq!(w.processes.as_ref().map(|m| m.limit), Some(100));
    let text = s[made].to_string();
    assert!(
        text.starts_with(&format!(
            "mkdir(\"{}\", 0755); open(",
            PathBuf::from("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/qwrap-4242").display()
        )),
        "{text}"
    );
    assert!(
        text.contains("/memory.max\", O_WRONLY); write(\"536870912\")"),
        "{text}"
    );
    assert!(
        text.ends_with("/qwrap-4242/sandbox\", 0755) on the host"),
        "{text}"
    );
}

#[test]
fn with_a_pid_namespace_pid_1_joins_and_the_monitor_stays_out() {
    let p = private_pid(asking(Some("1G"), None, None, None));
    let s = steps(&p, &on(systemd_user("cpu memory pids")));
    let monitor = s
        .iter()
        .position(|s| matches!(s, Step::CloneMonitor(CloneMonitor { .. })))
        .unwrap();
    assert!(
        matches!(s[monitor + 1], Step::JoinCgroup(JoinCgroup { .. })),
        "{s:?}"
    );
    assert_eq!(
        s.iter()
            .filter(|s| matches!(s, Step::JoinCgroup(JoinCgroup { .. })))
            .count(),
        1
    );
}

#[test]
fn undelegated_controllers_are_refused_with_the_fix() {
    let p = asking(Some("512M"), None, None, None);
    let h = on(systemd_user("cpu pids"));
    let refused = super::super::build(&p, &h).unwrap_err();
    let m = &refused.message;
    assert!(
        m.contains("--memory 512M (from --memory) cannot be enforced"),
        "{m}"
    );
    assert!(
        m.contains("user@1000.service, does not delegate memory (its cgroup.subtree_control: cpu pids)"),
        "{m}"
    );
    assert!(m.contains("systemd-run --user --scope -p Delegate=yes"), "{m}");
    assert!(matches!(&refused.layers.limits, LayerState::Off(w) if w.starts_with("refused")));
    // With no cgroup filesystem at all, too.
    let refused = super::super::build(&p, &host(MountApi::New)).unwrap_err();
    assert!(
        refused.message.contains("no cgroup2 filesystem is mounted"),
        "{}",
        refused.message
    );
}

#[test]
fn cgroup_v1_as_root_one_group_per_hierarchy() {
    let p = asking(Some("64M"), Some("50"), Some("0.5"), Some("10s"));
    let mut h = on(v1_root(true, true));
    h.uid = 0;
    let s = steps(&p, &h);
    let made: Vec<&Step> = s
        .iter()
        .filter(|s| matches!(s, Step::MakeCgroup(MakeCgroup { .. })))
        .collect();
    assert_eq!(made.len(), 3);
    let text: Vec<String> = made.iter().map(|s| s.to_string()).collect();
    assert!(text[0].contains("/job/qwrap-42/memory.memsw.limit_in_bytes\", O_WRONLY); write(\"67108864\")"));
    assert!(text[1].contains("/pids/qwrap-42/pids.max\", O_WRONLY); write(\"51\")"));
    assert!(text[2].contains("cpu.cfs_quota_us\", O_WRONLY); write(\"50000\")"));
    let Some(Step::StartWarden(crate::plan::StartWarden { limits: Some(w), .. })) =
        s.iter().find(|s| matches!(s, Step::StartWarden(_)))
    else {
        panic!()
    };
    assert!(!w.v2);
    assert_eq!(
        w.memory.as_ref().unwrap().group,
        Path::new("/sys/fs/cgroup/memory/job/qwrap-42")
    );
    assert_eq!(
        w.processes.as_ref().unwrap().group,
        Path::new("/sys/fs/cgroup/pids/qwrap-42")
    );
    assert_eq!(w.time_ms, Some(10_000));
}

#[test]
fn swap_that_a_v1_memory_limit_cannot_hold_is_refused() {
    let p = asking(Some("64M"), None, None, None);
    let m = super::super::build(&p, &on(v1_root(false, true)))
        .unwrap_err()
        .message;
    assert!(m.contains("swapaccount=1"), "{m}");
    // Without swap there is nothing to dodge through.
    assert!(super::super::build(&p, &on(v1_root(false, false))).is_ok());
}

#[test]
fn a_v1_group_the_caller_cannot_write_is_refused() {
    let p = asking(None, Some("10"), None, None);
    let mut f = v1_root(true, false);
    f.v1[1].not_writable = Some("Permission denied (EACCES)".into());
    let m = super::super::build(&p, &on(f)).unwrap_err().message;
    assert!(
        m.contains(
            "in the v1 pids hierarchy the caller's group /sys/fs/cgroup/pids is not the caller's to write"
        ),
        "{m}"
    );
    assert!(m.contains("delegated to uid 1000"), "{m}");
}
