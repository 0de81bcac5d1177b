//! Unit tests of args.

use super::*;

#[test]
fn args_words_keep_empty_values() {
    let w = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
    assert_eq!(
        nul_words(b"--setenv\0X\0\0--setenv\0Y\0y\0"),
        w(&["--setenv", "X", "", "--setenv", "Y", "y"])
    );
    assert_eq!(nul_words(b"a\0b"), w(&["a", "b"]));
    assert_eq!(nul_words(b"\0"), w(&[""]));
    assert!(nul_words(b"").is_empty());
}

fn p(args: &[&str]) -> Result<Parsed, ArgError> {
    parse(args.iter().map(OsString::from).collect())
}

fn cfg(args: &[&str]) -> Config {
    match p(args).unwrap() {
        Parsed::Run(c) => *c,
        other => panic!("{other:?}"),
    }
}

#[test]
fn qwen_code_vector() {
    let c = cfg(&[
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--die-with-parent",
        "--unshare-net",
        "--bind",
        "/w",
        "/w",
        "--ro-bind",
        "/w/.env",
        "/w/.env",
        "--chdir",
        "/w",
        "--",
        "sh",
        "-c",
        "true",
    ]);
    assert_eq!(c.ops.len(), 4);
    assert_eq!(
        c.ops[0],
        FsOp::Bind {
            src: "/".into(),
            dest: "/".into(),
            readonly: true,
            devices: false,
            optional: false
        }
    );
    assert_eq!(c.ops[1], FsOp::Dev("/dev".into()));
    assert!(c.die_with_parent && c.unshare_net && !c.unshare_pid);
    assert_eq!(c.chdir, Some("/w".into()));
    assert_eq!(c.command, ["sh", "-c", "true"]);
}

#[test]
fn unshare_all_and_share_net() {
    let c = cfg(&["--unshare-all", "--share-net", "true"]);
    assert!(c.unshare_pid && c.unshare_ipc && c.unshare_uts && c.unshare_user_try && c.unshare_cgroup_try);
    assert!(!c.unshare_net);
}

#[test]
fn command_starts_at_first_non_option() {
    let c = cfg(&["--unshare-pid", "echo", "--not-an-option"]);
    assert_eq!(c.command, ["echo", "--not-an-option"]);
}

#[test]
fn perms_and_size_apply_to_the_next_option_only() {
    let c = cfg(&[
        "--perms", "0700", "--tmpfs", "/a", "--tmpfs", "/b", "--size", "4096", "--tmpfs", "/c", "true",
    ]);
    assert_eq!(
        c.ops,
        vec![
            FsOp::Tmpfs {
                dest: "/a".into(),
                perms: Some(0o700),
                size: None
            },
            FsOp::Tmpfs {
                dest: "/b".into(),
                perms: None,
                size: None
            },
            FsOp::Tmpfs {
                dest: "/c".into(),
                perms: None,
                size: Some(4096)
            },
        ]
    );
    assert!(p(&["--perms", "0700", "--bind", "/a", "/b", "true"]).is_err());
    assert!(p(&["--perms", "9", "--tmpfs", "/a", "true"]).is_err());
    assert!(p(&["--size", "1", "--dir", "/a", "true"]).is_err());
    for both in [
        &["--size", "4096", "--perms", "01777", "--tmpfs", "/t", "true"][..],
        &["--perms", "01777", "--size", "4096", "--tmpfs", "/t", "true"],
    ] {
        assert_eq!(
            cfg(both).ops,
            vec![FsOp::Tmpfs {
                dest: "/t".into(),
                perms: Some(0o1777),
                size: Some(4096)
            }],
            "{both:?}"
        );
    }
    for bad in [
        "0",
        "123bogus",
        "",
        "-1",
        " -1",
        "18446744073709551616",
        "9223372036854775809",
    ] {
        assert!(p(&["--size", bad, "--tmpfs", "/t", "true"]).is_err(), "{bad:?}");
    }
    assert!(p(&["--size", "1", "--size", "1", "--tmpfs", "/t", "true"]).is_err());
    assert!(p(&["--perms", "0640", "--perms", "0640", "--tmpfs", "/t", "true"]).is_err());
}

#[test]
fn env_ops_keep_their_order() {
    let c = cfg(&["--setenv", "A", "1", "--clearenv", "--unsetenv", "B", "true"]);
    assert_eq!(
        c.env,
        vec![
            EnvOp::Set("A".into(), "1".into()),
            EnvOp::Clear,
            EnvOp::Unset("B".into())
        ]
    );
}

#[test]
fn errors_are_named() {
    assert_eq!(
        p(&["--frobnicate", "true"]).unwrap_err().0,
        "Unknown option --frobnicate"
    );
    let e = p(&["--exec-label", "x", "true"]).unwrap_err().0;
    assert!(e.starts_with("--exec-label: "), "{e}");
    assert!(p(&["--userns", "3", "--unshare-user", "true"]).is_err());
    assert_eq!(
        p(&["--bind", "/a"]).unwrap_err().0,
        "--bind takes a source and a destination"
    );
    assert_eq!(p(&["--unshare-net"]).unwrap_err().0, "No command specified");
    assert!(
        p(&["--hostname", "x", "true"])
            .unwrap_err()
            .0
            .contains("--unshare-uts")
    );
    assert!(p(&["--info-fd", "x", "true"]).is_err());
    assert_eq!(p(&["--help"]).unwrap(), Parsed::Help);
    assert_eq!(p(&["--version", "--bogus"]).unwrap(), Parsed::Version);
}

#[test]
fn args_fd_splices_nul_separated_arguments() {
    let (r, w) = rustix::pipe::pipe().unwrap();
    rustix::io::write(&w, b"--unshare-net\0--setenv\0K\0V\0").unwrap();
    drop(w);
    // Handed over: the parser takes and closes it, as bubblewrap does.
    let fd = rustix::fd::IntoRawFd::into_raw_fd(r).to_string();
    let c = cfg(&["--args", &fd, "--unshare-ipc", "true"]);
    assert!(c.unshare_net && c.unshare_ipc);
    assert_eq!(c.env, vec![EnvOp::Set("K".into(), "V".into())]);
}
