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

/// Three hundred sandboxes of one workspace at once: every one starts (none
/// fails because another took its cache layer slot between the probe and
/// the lock), and each cache write either lands in a layer on the host or
/// the run said on stderr that its caches were private to it.
#[test]
fn three_hundred_runs_of_one_workspace_all_start_and_keep_or_say() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut children = Vec::new();
        for i in 0..300 {
            let script = format!("mkdir -p ~/.cache && echo {i} > ~/.cache/run-{i} && echo {i}");
            let child = f
                .qwrap(&["run", "--", "sh", "-c", &script])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            children.push((i, child));
        }
        let layers = f.home().join(".local/state/qwrap/caches");
        let mut said = 0;
        let mut outcomes = Vec::new();
        for (i, child) in children {
            let o = child.wait_with_output().unwrap();
            assert_eq!(ok(&o), format!("{i}\n"), "{who:?} run {i}: {}", stderr(&o));
            outcomes.push((i, stderr(&o)));
        }
        for (i, err) in outcomes {
            let kept = std::fs::read_dir(&layers)
                .into_iter()
                .flatten()
                .flatten()
                .flat_map(|set| (0..8).map(move |n| set.path().join(n.to_string())))
                .any(|slot| slot.join("%home/upper/.cache").join(format!("run-{i}")).exists());
            if !kept {
                assert!(
                    err.contains("layer slots of this workspace are in use"),
                    "{who:?} run {i}: its cache write was lost without a word: {err}"
                );
                said += 1;
            }
        }
        eprintln!("{who:?}: {said} of 300 ran with private caches and said so");
    }
}
