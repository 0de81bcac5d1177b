//! Fault injection: every setup step of the default, proxied-network and
//! legacy-mount plans is made to fail in turn. Each time: exit 125, the
//! message names that step, the command never ran, the host mount table is
//! unchanged and nothing is left behind. As root and unprivileged.
#![cfg(feature = "fault-injection")]

mod common;

use common::*;

#[test]
fn every_step_fails_closed() {
    // The proxied network's steps include the closed network's.
    let variants: [(&str, &[&str]); 3] = [
        ("new", &[]),
        ("new", &["--network", "proxied", "--allow-domain", "example.com"]),
        ("legacy", &[]),
    ];
    let mut covered = 0;
    for who in Who::all() {
        for (api, opts) in variants {
            let f = Fixture::new(who);
            f.mkdir("ws/locked");
            // A checkout with a submodule: the git guard's steps, and the
            // copy of the submodule's config, are walked too.
            let git = "git -c user.name=t -c user.email=t@t -c protocol.file.allow=always";
            let setup = format!(
                "set -e; {git} init -q ../libsrc && {git} -C ../libsrc commit -q --allow-empty -m l && \
                 {git} init -q && {git} submodule -q add ../libsrc lib && {git} commit -qm sub"
            );
            ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
            let marker = f.ws().join("marker");
            let mut args: Vec<&str> = opts.to_vec();
            args.extend(["--ro", "locked", "--", "touch", marker.to_str().unwrap()]);
            let plan = f
                .qwrap(&["plan", "--json"])
                .args(&args)
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            let plan: serde_json::Value = serde_json::from_str(&ok(&plan)).unwrap();
            let steps = plan["steps"].as_array().unwrap();
            assert!(steps.len() > 30);
            let mounts = host_mounts();
            let tmp = qwrap_tmp();
            let fixture = listing(f.path());
            for (k, step) in steps.iter().enumerate() {
                let o = f
                    .qwrap(&["run"])
                    .args(&args)
                    .env("QWRAP_MOUNT_API", api)
                    .env("QWRAP_FAULT_STEP", k.to_string())
                    .output()
                    .unwrap();
                let err = stderr(&o);
                let ctx = format!("{who:?} {api} {opts:?} step {k} ({})", step["call"]);
                assert_eq!(o.status.code(), Some(125), "{ctx}: {err}");
                let purpose = step["purpose"].as_str().unwrap();
                assert!(err.contains(&format!("qwrap: {purpose}: ")), "{ctx}: {err}");
                assert!(err.contains("Input/output error (EIO)"), "{ctx}: {err}");
                assert!(!marker.exists(), "{ctx}: the command ran");
                assert_eq!(host_mounts(), mounts, "{ctx}: host mount table changed");
                assert_eq!(qwrap_tmp(), tmp, "{ctx}: /tmp changed");
                assert_eq!(listing(f.path()), fixture, "{ctx}: left something behind");
                covered += 1;
            }
            // Without a fault the same command runs.
            ok(&f
                .qwrap(&["run"])
                .args(&args)
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap());
            assert!(marker.exists());
        }
    }
    assert!(covered > 150, "{covered}");
}
