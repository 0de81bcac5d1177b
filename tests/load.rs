//! Soak: 10,000 sequential runs leave no mounts, files or processes behind.
//! (Alone in its test binary, so that nothing else moves the counts.)

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
fn soak_ten_thousand_sequential_runs() {
    let who = *Who::all().last().unwrap();
    let f = Fixture::new(who);
    let mounts = host_mounts();
    let tmp = qwrap_tmp();
    // The binary's copy (and the lock that keeps it) is made once, first.
    let _ = qwrap();
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
