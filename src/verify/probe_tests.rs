//! Unit tests of probe.

use super::*;

#[test]
fn capability_and_nnp_parsing() {
    let ok = "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n";
    assert_eq!(capabilities(ok, true).outcome, Outcome::Pass);
    assert_eq!(no_new_privs(ok).outcome, Outcome::Pass);
    let bad = ok
        .replace("CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff")
        .replace("NoNewPrivs:\t1", "NoNewPrivs:\t0");
    let c = capabilities(&bad, true);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.got.unwrap().contains("CapBnd"));
    // Without a user namespace an unprivileged caller keeps its bounding
    // set (no_new_privs makes it unusable); the other four must be zero.
    assert_eq!(capabilities(&bad, false).outcome, Outcome::Pass);
    let held = bad.replace("CapPrm:\t0000000000000000", "CapPrm:\t0000000000000001");
    assert_eq!(capabilities(&held, false).outcome, Outcome::Fail);
    assert_eq!(no_new_privs(&bad).outcome, Outcome::Fail);
    assert_eq!(capabilities("", true).outcome, Outcome::Fail);
}

#[test]
fn interface_parsing() {
    let t = "Inter-|   Receive\n face |bytes\n    lo: 1 2\n  eth0: 3 4\n";
    assert_eq!(interfaces(t), ["eth0", "lo"]);
}

#[test]
fn args_round_trip_shape() {
    let a = ProbeArgs {
        workspace: "/w".into(),
        outside: "/usr".into(),
        home: Some("/h".into()),
        host_pidns: "pid:[1]".into(),
        closed_network: true,
        host_has_nonlo: false,
        host_pid: None,
        abstract_name: None,
        masked_socket: None,
        protected: vec![],
        git_dirs: vec![],
        hidden: vec![],
        absent: None,
        canary: None,
        replaced: Some("/h/.r".into()),
        second_paths: vec!["/m/.c".into(), "/n/.c".into()],
        scoped: false,
        private_pid: false,
        home_overlaid: false,
        caches: vec![],
        cache_tag: None,
        review_tag: None,
        leftover_tag: None,
        proxied: false,
        proxy_target: None,
        landlock_only: false,
        write_at: None,
    };
    let v: Vec<String> = a
        .to_args()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        v,
        [
            "--workspace",
            "/w",
            "--outside",
            "/usr",
            "--host-pidns",
            "pid:[1]",
            "--home",
            "/h",
            "--closed-network",
            "--replaced",
            "/h/.r",
            "--second-path",
            "/m/.c",
            "--second-path",
            "/n/.c"
        ]
    );
}

#[test]
fn every_argument_is_parsed_back_by_the_one_definition() {
    use clap::Parser;
    #[derive(Parser)]
    struct Probe {
        #[command(flatten)]
        args: ProbeArgs,
    }
    let a = ProbeArgs {
        workspace: "/w".into(),
        outside: "/usr".into(),
        home: Some("/h".into()),
        host_pidns: "pid:[1]".into(),
        closed_network: true,
        host_has_nonlo: true,
        host_pid: Some(42),
        abstract_name: Some("qwrap-test".into()),
        masked_socket: Some("/run/s.sock".into()),
        protected: vec!["/w/.git/config".into(), "/w/.git/hooks".into()],
        git_dirs: vec!["/w/.git".into()],
        hidden: vec!["/h/.ssh".into()],
        absent: Some("/opt".into()),
        canary: None,
        replaced: None,
        second_paths: vec![],
        scoped: true,
        private_pid: false,
        home_overlaid: false,
        caches: vec!["/h/.cache".into()],
        cache_tag: Some(".t".into()),
        review_tag: Some(".r".into()),
        leftover_tag: None,
        proxied: true,
        proxy_target: Some("127.0.0.1:9".into()),
        landlock_only: true,
        write_at: Some("/w/src".into()),
    };
    let mut argv: Vec<std::ffi::OsString> = vec!["__probe".into()];
    argv.extend(a.to_args());
    assert_eq!(Probe::try_parse_from(argv).unwrap().args, a);
    let defaults = Probe::try_parse_from(["__probe"]).unwrap().args;
    assert_eq!((defaults.workspace, defaults.outside), (".".into(), "/".into()));
}
