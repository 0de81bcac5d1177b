//! Load: 200 concurrent sandboxes that do not interfere, and a soak of 10,000
//! sequential runs that leaves no mounts, files or processes behind.

mod common;

use common::*;
use std::process::Stdio;

/// Allocated file handles, system-wide (first field of file-nr).
fn file_handles() -> i64 {
    std::fs::read_to_string("/proc/sys/fs/file-nr")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn own_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn two_hundred_concurrent_runs() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mounts = host_mounts();
        let tmp = qwrap_tmp();
        let mut children = Vec::new();
        for i in 0..200 {
            let ws = f.mkdir(&format!("ws{i}"));
            // Each writes its own id in its private /tmp and its workspace,
            // then reads both back after the others have had time to run.
            let script = format!("echo {i} > /tmp/id && echo {i} > id && sleep 0.2 && cat /tmp/id id");
            let child = f
                .qwrap(&[
                    "run",
                    "--workspace",
                    ws.to_str().unwrap(),
                    "--network",
                    "closed",
                    "--",
                    "sh",
                    "-c",
                    &script,
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            children.push((i, ws, child));
        }
        for (i, ws, child) in children {
            let o = child.wait_with_output().unwrap();
            assert_eq!(ok(&o), format!("{i}\n{i}\n"), "{who:?} run {i}");
            assert_eq!(std::fs::read_to_string(ws.join("id")).unwrap(), format!("{i}\n"));
        }
        assert_eq!(host_mounts(), mounts, "{who:?}: host mount table changed");
        assert_eq!(qwrap_tmp(), tmp, "{who:?}: /tmp changed");
    }
}

#[test]
fn soak_ten_thousand_sequential_runs() {
    let who = *Who::all().last().unwrap();
    let f = Fixture::new(who);
    let mounts = host_mounts();
    let tmp = qwrap_tmp();
    let fds = own_fds();
    let handles = file_handles();
    for i in 0..10_000 {
        let o = f
            .qwrap(&["run", "--", "/bin/true"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(o.status.success(), "run {i}: {}", stderr(&o));
    }
    assert_eq!(host_mounts(), mounts, "leftover mounts");
    assert_eq!(qwrap_tmp(), tmp, "leftovers in /tmp");
    assert_eq!(own_fds(), fds, "open files grew in the caller");
    // System-wide handles move with everything else on the machine; 10,000
    // leaked sandboxes would show as thousands.
    let grown = file_handles() - handles;
    assert!(grown < 500, "file handles grew by {grown}");
}
