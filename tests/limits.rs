//! A runaway command cannot fill the host's memory through the sandbox's
//! own tmpfs: the private /tmp and /dev/shm are a fifth of the memory each
//! by default (the kernel's default is half, each), `--tmpfs-size` sets
//! them, and a write past the size fails with ENOSPC inside. As root and
//! unprivileged, on both mount APIs.

mod common;

use common::*;

fn mem_total() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = m
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    kib * 1024
}

#[test]
fn the_private_tmpfs_are_a_fifth_of_the_memory_by_default() {
    let want = mem_total() / 100 * 20;
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let out = ok(&f.run_sh(api, &[], "stat -f -c '%b %S' /tmp /dev/shm"));
            for line in out.lines() {
                let (blocks, bsize) = line.split_once(' ').unwrap();
                let size = blocks.parse::<u64>().unwrap() * bsize.parse::<u64>().unwrap();
                assert!(
                    size.abs_diff(want) < 1 << 20,
                    "{who:?} {api}: {size} bytes, want {want}"
                );
            }
        }
    }
}

#[test]
fn a_write_past_the_size_fails_inside() {
    let script = "for d in /tmp /dev/shm; do head -c 16M /dev/zero > $d/fill 2>/dev/null && echo \"$d filled\" || echo \"$d full $(stat -c %s $d/fill)\"; done";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let out = ok(&f.run_sh(api, &["--tmpfs-size", "8M"], script));
            for d in ["/tmp", "/dev/shm"] {
                let line = out.lines().find(|l| l.starts_with(d)).unwrap_or_default();
                let size: u64 = line.rsplit(' ').next().unwrap_or("0").parse().unwrap_or(u64::MAX);
                assert!(line.contains("full") && size <= 8 << 20, "{who:?} {api}: {out}");
            }
        }
    }
    // A size that is none is refused before anything runs.
    let f = Fixture::new(Who::all()[0]);
    let o = f.run_sh("new", &["--tmpfs-size", "5X"], "touch ran");
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid tmpfs size"), "{}", stderr(&o));
    assert!(!f.ws().join("ran").exists());
}

// Resource limits: --memory, --max-processes and --cpus hold through a
// cgroup of the sandbox's own (root here: cgroup v1; an unprivileged user
// with no delegated group gets the refusal, exit 125 with the fix);
// --time-limit through the warden, for both. Each effect is seen from the
// host: the group and its count, a host process that keeps forking, the
// group gone afterwards.

use common::cgroups::{self, BOMB, LIFT, dead, no_group_left, refused, tree};
use std::io::BufRead;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The process trees that differ: the command keeps qwrap's pid; qwrap
/// outside as the stand-in of a PID namespace's PID 1; no namespaces.
const MODES: [&[&str]; 3] = [&[], &["--pid", "private"], &["--isolation", "landlock"]];

#[test]
fn a_fork_bomb_is_contained_while_the_host_keeps_forking() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut c = f.qwrap(&["run", "--max-processes", "30", "--", "python3", "-c", BOMB]);
        if let Err(why) = cgroups::offered(who, "pids") {
            c.args(["-c", "open('ran', 'w')"]);
            refused(&c.output().unwrap(), &f);
            println!("SKIP the bomb as {who:?} (its refusal checked): {why}");
            continue;
        }
        let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // From the host, while the bomb's children live: its group, at most
        // the 30 tasks asked for and the reaper.
        let group = cgroups::group_of(child.id(), "pids").expect("the command's pids group");
        let name = group
            .parent()
            .and_then(|g| g.file_name())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            group.ends_with("sandbox") && name.starts_with(&format!("qwrap-{}-", child.id())),
            "{}",
            group.display()
        );
        // The limit lies on the group above the command's.
        let group = group.parent().unwrap();
        assert_eq!(
            std::fs::read_to_string(group.join("pids.max")).unwrap().trim(),
            "31"
        );
        let current: u64 = std::fs::read_to_string(group.join("pids.current"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!((20..=31).contains(&current), "pids.current {current}");
        // A host process of the same user forks on meanwhile.
        let host = f
            .command("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300 ]; do /bin/true || exit 1; i=$((i+1)); done; echo forked",
            ])
            .output()
            .unwrap();
        assert_eq!(ok(&host).trim(), "forked");
        let (kids, failed) = line.trim().split_once(' ').expect(&line);
        let (kids, failed): (u32, u32) = (kids.parse().unwrap(), failed.parse().unwrap());
        assert!((19..=29).contains(&kids) && kids + failed == 400, "{line}");
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{:?} {err}", o.status);
        assert!(
            err.contains(&format!(
                "qwrap: process limit reached: {failed} forks failed (EAGAIN) at 30 tasks"
            )) && err.contains("--max-processes N"),
            "{err}"
        );
        assert!(no_group_left(pid), "the group outlived the sandbox");
    }
}

#[test]
fn a_memory_hog_is_killed_together_with_its_tree() {
    let script = "echo start; head -c 400M /dev/zero | tail; sleep 2; echo survived";
    for who in Who::all() {
        let f = Fixture::new(who);
        if let Err(why) = cgroups::offered(who, "memory") {
            let o = f.run_sh("new", &["--memory", "64M"], "touch ran");
            refused(&o, &f);
            println!("SKIP the hog as {who:?} (its refusal checked): {why}");
            continue;
        }
        for mode in MODES {
            let mut c = f.qwrap(&["run"]);
            c.args(mode).args(["--memory", "64M", "--", "sh", "-c", script]);
            let child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            let pid = child.id();
            let o = child.wait_with_output().unwrap();
            let (out, err) = (stdout(&o), stderr(&o));
            // Killed by SIGKILL, the shell too (137 as a shell says it).
            assert!(
                o.status.signal() == Some(9) || o.status.code() == Some(137),
                "{mode:?}: {:?} {out} {err}",
                o.status
            );
            assert!(
                out.contains("start") && !out.contains("survived"),
                "{mode:?}: {out}"
            );
            assert!(
                err.contains("qwrap: memory limit reached: the sandbox's 64 MiB")
                    && err.contains("--memory SIZE"),
                "{mode:?}: {err}"
            );
            assert!(no_group_left(pid), "{mode:?}: the group outlived the sandbox");
        }
    }
}

#[test]
fn a_time_limit_ends_the_tree_with_the_documented_status() {
    let script = "sleep 60 & echo $! > left; sleep 60";
    for who in Who::all() {
        let f = Fixture::new(who);
        // No cgroup needed; with one (root here), its group's list is used.
        let mut cases: Vec<Vec<&str>> = MODES.iter().map(|m| m.to_vec()).collect();
        if cgroups::offered(who, "pids").is_ok() {
            cases.push(vec!["--max-processes", "50"]);
        }
        for extra in cases {
            let start = Instant::now();
            let mut c = f.qwrap(&["run"]);
            c.args(&extra)
                .args(["--time-limit", "1s", "--", "sh", "-c", script]);
            let o = c.output().unwrap();
            let took = start.elapsed();
            let err = stderr(&o);
            assert!(
                o.status.signal() == Some(15) || o.status.code() == Some(143),
                "{extra:?}: {:?} {err}",
                o.status
            );
            assert!(
                took >= Duration::from_secs(1) && took < Duration::from_secs(8),
                "{took:?}"
            );
            assert!(
                err.contains("qwrap: time limit reached: 1s: every process of the sandbox got SIGTERM"),
                "{extra:?}: {err}"
            );
            // The leftover died with it (its pid is the namespace's own
            // under --pid private, where it dies with PID 1).
            let left = std::fs::read_to_string(f.ws().join("left")).unwrap();
            assert!(
                extra.contains(&"private") || dead(&left),
                "{extra:?}: {left} lives"
            );
        }
        // A tree that ignores SIGTERM gets SIGKILL after the grace.
        let start = Instant::now();
        let o = f.run_sh(
            "new",
            &["--time-limit", "1s"],
            "trap '' TERM; sleep 60 & sleep 60",
        );
        assert!(
            o.status.signal() == Some(9) || o.status.code() == Some(137),
            "{:?}",
            o.status
        );
        assert!(start.elapsed() >= Duration::from_secs(3), "{:?}", start.elapsed());
    }
}

#[test]
fn cpus_are_accepted_and_visible_in_the_group() {
    for who in Who::all() {
        let f = Fixture::new(who);
        if let Err(why) = cgroups::offered(who, "cpu") {
            refused(&f.run_sh("new", &["--cpus", "0.5"], "touch ran"), &f);
            println!("SKIP the CPU quota as {who:?} (its refusal checked): {why}");
            continue;
        }
        let mut c = f.qwrap(&[
            "run",
            "--cpus",
            "0.5",
            "--",
            "sh",
            "-c",
            "echo ready; cat /proc/self/cgroup; sleep 5",
        ]);
        let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let leaf = cgroups::group_of(child.id(), "cpu").expect("the command's cpu group");
        let group = leaf.parent().unwrap();
        let max = std::fs::read_to_string(group.join("cpu.max")).unwrap_or_else(|_| {
            let q = std::fs::read_to_string(group.join("cpu.cfs_quota_us")).unwrap();
            let p = std::fs::read_to_string(group.join("cpu.cfs_period_us")).unwrap();
            format!("{} {}", q.trim(), p.trim())
        });
        assert_eq!(max.trim(), "50000 100000", "{}", group.display());
        // Inside, the command names its group too.
        let mut inside = String::new();
        std::io::Read::read_to_string(&mut out, &mut inside).unwrap();
        assert!(inside.contains(&format!("qwrap-{}-", child.id())), "{inside}");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(no_group_left(child.id()));
    }
}

#[test]
fn the_whole_tree_is_in_the_group_and_qwraps_helpers_outside_are_not() {
    let who = Who::all()[0];
    if let Err(why) = cgroups::offered(who, "pids") {
        println!("SKIP: {why} (the refusal is checked by the bomb's test)");
        return;
    }
    for mode in MODES {
        let f = Fixture::new(who);
        let mut c = f.qwrap(&["run"]);
        c.args(mode).args([
            "--max-processes",
            "20",
            "--",
            "sh",
            "-c",
            "sleep 30 & sleep 30 & echo ready; wait",
        ]);
        let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let top = child.id();
        // The shell's children may still be between fork and exec.
        let is_sleep =
            |p: &u32| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep");
        let t0 = std::time::Instant::now();
        let mut below = tree(top);
        while !below.iter().any(is_sleep) && t0.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            below = tree(top);
        }
        let sleeper = *below.iter().find(|p| is_sleep(p)).expect("a sleep in the tree");
        let group = cgroups::group_of(sleeper, "pids").unwrap();
        let members: Vec<u32> = std::fs::read_to_string(group.join("cgroup.procs"))
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        // The command's tree, and only it: the warden (no descendant of
        // qwrap's) is out; with --pid private so is qwrap, the stand-in.
        let inside: Vec<u32> = below.iter().copied().filter(|&p| p != top).collect();
        for p in &inside {
            assert!(
                members.contains(p),
                "{mode:?}: {p} of the tree is not in the group"
            );
        }
        // Beside the tree only the reaper (Linux 6.12: started inside just
        // before Landlock, detached, so no descendant), a qwrap of the
        // sandbox's own; never a process of the host's user namespace.
        let host_ns = std::fs::read_link("/proc/self/ns/user").unwrap();
        for p in members.iter().filter(|p| !below.contains(p)) {
            let exe = std::fs::read_link(format!("/proc/{p}/exe")).ok();
            let ns = std::fs::read_link(format!("/proc/{p}/ns/user")).ok();
            assert!(
                exe.as_deref() == Some(qwrap())
                    && (ns.as_ref() != Some(&host_ns) || mode.contains(&"landlock")),
                "{mode:?}: {p} in the group is no process of the tree ({exe:?}, {ns:?})"
            );
        }
        assert_eq!(members.contains(&top), !mode.contains(&"private"), "{mode:?}");
        let wardens = listing(std::path::Path::new("/proc"))
            .iter()
            .filter_map(|n| n.parse::<u32>().ok())
            .filter(|p| !below.contains(p) && !members.contains(p))
            .filter(|p| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == qwrap()))
            .count();
        assert!(
            wardens >= 1,
            "{mode:?}: no warden of qwrap's outside the tree and the group"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(no_group_left(top), "{mode:?}");
    }
}

#[test]
fn limits_come_from_flags_variables_and_config_naming_their_source() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = f
            .qwrap(&["run", "--", "sh", "-c", "sleep 30"])
            .env("QWRAP_TIME_LIMIT", "500ms")
            .output()
            .unwrap();
        assert!(stderr(&o).contains("time limit reached: 500ms"), "{}", stderr(&o));
        // The command line wins; `none` lifts a limit set elsewhere.
        let o = f
            .qwrap(&["run", "--time-limit", "none", "--", "true"])
            .env("QWRAP_TIME_LIMIT", "1ms")
            .output()
            .unwrap();
        ok(&o);
        for (flag, value, says) in [
            ("--memory", "lots", "invalid memory limit"),
            ("--max-processes", "0", "invalid process limit"),
            ("--cpus", "0.001", "invalid CPU limit"),
            ("--time-limit", "soon", "invalid time limit"),
        ] {
            let o = f
                .qwrap(&["run", flag, value, "--", "touch", "ran"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{flag}");
            assert!(stderr(&o).contains(&format!("{flag}: {says}")), "{}", stderr(&o));
            assert!(!f.ws().join("ran").exists());
        }
        let out = ok(&f.qwrap(&["inspect", "--time-limit", "10m"]).output().unwrap());
        assert!(out.contains("time_limit = 600s  [from --time-limit]"), "{out}");
        assert!(out.contains("limits: applied (wall clock 600s"), "{out}");
        assert!(out.contains("the cache layer: no size budget"), "{out}");
    }
}

#[test]
fn a_cgroup_namespace_made_inside_cannot_lift_the_limits() {
    let who = Who::all()[0];
    if let Err(why) = cgroups::offered(who, "pids") {
        println!("SKIP: {why} (the refusal is checked by the bomb's test)");
        return;
    }
    let f = Fixture::new(who);
    let o = f
        .qwrap(&[
            "run",
            "--pid",
            "private",
            "--max-processes",
            "20",
            "--",
            "python3",
            "-c",
            LIFT,
        ])
        .output()
        .unwrap();
    let out = ok(&o);
    // The filter refuses the namespace now; the limits' place above the
    // command's group still holds where one could be made.
    assert!(
        out.contains("cgroup namespace refused: Operation not permitted")
            || out.contains("root of the view: max"),
        "{out}"
    );
    let (kids, failed) = out.lines().last().unwrap().split_once(' ').unwrap();
    let kids: u32 = kids.parse().unwrap();
    assert!(kids <= 19 && failed.parse::<u32>().unwrap() >= 81, "{out}");
    assert!(stderr(&o).contains("process limit reached"), "{}", stderr(&o));
}

/// Every setup step of a plan with limits made to fail in turn (test
/// builds): exit 125 naming the step, the command never ran, and the
/// sandbox's groups, made early, are gone: the warden removes them whatever
/// step failed.
#[cfg(feature = "fault-injection")]
#[test]
fn every_step_of_a_limited_sandbox_fails_closed_and_leaves_no_group() {
    let who = Who::all()[0];
    if let Some(why) = ["memory", "pids"]
        .iter()
        .find_map(|c| cgroups::offered(who, c).err())
    {
        println!("SKIP: {why} (the refusal is checked by the other tests)");
        return;
    }
    for mode in [&[][..], &["--pid", "private"]] {
        let f = Fixture::new(who);
        let marker = f.ws().join("marker");
        let mut args: Vec<&str> = mode.to_vec();
        args.extend(["--memory", "256M", "--max-processes", "100", "--", "touch"]);
        args.push(marker.to_str().unwrap());
        let plan = f.qwrap(&["plan", "--json"]).args(&args).output().unwrap();
        let plan: serde_json::Value = serde_json::from_str(&ok(&plan)).unwrap();
        let steps = plan["steps"].as_array().unwrap();
        let ops: Vec<&str> = steps.iter().map(|s| s["step"]["op"].as_str().unwrap()).collect();
        assert!(
            ops.contains(&"make_cgroup") && ops.contains(&"join_cgroup"),
            "{ops:?}"
        );
        for (k, step) in steps.iter().enumerate() {
            let mut c = f.qwrap(&["run"]);
            c.args(&args).env("QWRAP_FAULT_STEP", k.to_string());
            let child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            let pid = child.id();
            let o = child.wait_with_output().unwrap();
            let ctx = format!("{mode:?} step {k} ({})", step["call"]);
            assert_eq!(o.status.code(), Some(125), "{ctx}: {}", stderr(&o));
            let purpose = step["purpose"].as_str().unwrap();
            assert!(
                stderr(&o).contains(&format!("qwrap: {purpose}: ")),
                "{ctx}: {}",
                stderr(&o)
            );
            assert!(!marker.exists(), "{ctx}: the command ran");
            assert!(no_group_left(pid), "{ctx}: a group was left");
        }
    }
}
