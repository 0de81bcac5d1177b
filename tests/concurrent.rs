//! Load: 200 concurrent sandboxes that do not interfere with each other and
//! leave the host's mount table and /tmp as they were.

mod common;

use common::*;
use std::process::Stdio;

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
