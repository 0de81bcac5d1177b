//! `run`'s arguments parsed without clap in the plain shapes tools write:
//! `run` is on every tool call's path, and building clap's parser costs
//! about 45 µs of it. Unit tests hold this parser equal to clap's.

use crate::cli::{ExecArgs, PolicyArgs, SandboxArgs};
use std::ffi::OsString;

/// `run`'s arguments in the plain shapes tools write (`--opt VALUE`,
/// `--opt=VALUE`, flags, `--`, CMD), without building a clap parser (~45 µs
/// of every tool call). Anything else (help, a repeated single-valued
/// option, a value that is empty, not UTF-8 or looks like an option, an
/// unknown option, no CMD) returns None, and clap parses it: its errors and
/// help stay the only ones. Unit tests hold the two parsers equal.
pub fn parse_run_fast(mut argv: impl Iterator<Item = OsString>) -> Option<SandboxArgs> {
    let mut p = PolicyArgs::default();
    let mut x = ExecArgs::default();
    loop {
        let arg = argv.next()?;
        if arg == "--" {
            break;
        }
        let arg = arg.into_string().ok()?;
        let (name, mut inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(OsString::from(v))),
            None => (arg.as_str(), None),
        };
        let flag = inline.is_none();
        let mut value = || plain_value(inline.take(), &mut argv);
        match name {
            "--workspace" if p.workspace.is_none() => p.workspace = Some(value()?.into()),
            "--unsetenv" => x.unsetenv.push(value()?),
            "--setenv" if flag => {
                let (k, v) = (value()?, value()?);
                x.setenv.extend([k, v]);
            }
            "--quiet" if flag && !x.quiet => x.quiet = true,
            "--ssh-agent" if flag && !p.ssh_agent => p.ssh_agent = true,
            // The declared settings' own (src/policy/settings_list.rs).
            _ => {
                let taken =
                    p.settings.take_plain(name, !flag, &mut value)? || x.switches.take_plain(name, !flag)?;
                if !taken {
                    return None;
                }
            }
        }
        // `--opt=VALUE` on an option that took no value is clap's to refuse.
        if inline.is_some() {
            return None;
        }
    }
    let command: Vec<OsString> = argv.collect();
    (!command.is_empty()).then_some(SandboxArgs {
        policy: p,
        exec: x,
        command,
    })
}

/// An option's value (inline after `=`, else the next argument), when clap
/// would surely take it as one: not empty, not starting with `-`.
fn plain_value(inline: Option<OsString>, argv: &mut impl Iterator<Item = OsString>) -> Option<OsString> {
    let v = match inline {
        Some(v) => v,
        None => argv.next()?,
    };
    (!v.is_empty() && !v.as_encoded_bytes().starts_with(b"-")).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::run_command;
    use clap::FromArgMatches;
    use std::os::unix::ffi::OsStringExt;

    fn clap_run(args: &[OsString]) -> Option<SandboxArgs> {
        let argv = std::iter::once(OsString::from("qwrap run")).chain(args.iter().cloned());
        let m = run_command().try_get_matches_from(argv).ok()?;
        SandboxArgs::from_arg_matches(&m).ok()
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// Option shapes, well-formed and not.
    fn pieces() -> Vec<Vec<OsString>> {
        let mut v: Vec<Vec<OsString>> = [
            &["--workspace", "/w"][..],
            &["--workspace=/w"],
            &["--workspace=/x"],
            &["--include", "/a"],
            &["--bind", "/b"],
            &["--include=/c=d"],
            &["--ro", "/r"],
            &["--ro=/r"],
            &["--profile", "qwen"],
            &["--profile=x"],
            &["--network", "closed"],
            &["--network=open"],
            &["--tmp", "host"],
            &["--tmp=private"],
            &["--landlock", "require"],
            &["--landlock=off"],
            &["--isolation", "landlock"],
            &["--isolation=auto"],
            &["--memory", "4G"],
            &["--memory=50%"],
            &["--max-processes", "100"],
            &["--max-processes", "-1"],
            &["--cpus=1.5"],
            &["--time-limit", "10m"],
            &["--allow-git-config"],
            &["--review"],
            &["--review=1"],
            &["--allow-agent-files"],
            &["--allow-socket", "/s"],
            &["--new-session"],
            &["--no-die-with-parent"],
            &["--setenv", "K", "V"],
            &["--setenv", "K", "a=b"],
            &["--unsetenv", "K"],
            &["--unsetenv=K"],
            &["--workspace"],
            &["--workspace", ""],
            &["--workspace="],
            &["--workspace", "-x"],
            &["--network", "--tmp"],
            &["--new-session=1"],
            &["--allow-git-config=true"],
            &["--bogus"],
            &["--work"],
            &["-h"],
            &["--help"],
            &["--version"],
            &["--setenv", "K"],
            &["--setenv=K", "V"],
            &["--setenv", "-K", "V"],
            &["--view", "minimal"],
            &["--view=bogus"],
            &["--cache", "shared"],
            &["--home=overlay"],
            &["--pid", "private"],
            &["--network", "Closed"],
            &["--tmpfs-size", "1G"],
            &["--hide", "/h"],
            &["--show=/s"],
            &["--expose", "/e"],
            &["--keep-env", "K"],
            &["--accept-degraded=abstract-socket"],
            &["--allow-domain", "example.com:443"],
            &["--egress-log", "/l"],
            &["--egress-log=/m"],
            &["--explain"],
            &["--explain=1"],
            &["--keep-background"],
            &["--share-ipc"],
            &["--share-keyring"],
            &["--share-terminal"],
            &["--no-detect"],
            &["--quiet"],
            &["--ssh-agent"],
            &["--ssh-agent=yes"],
            &["--keep-fd", "3"],
            &["--"],
            &["cmd"],
        ]
        .iter()
        .map(|p| os(p))
        .collect();
        v.push(vec![OsString::from("--profile"), OsString::from_vec(vec![0xff])]);
        v.push(vec![
            OsString::from("--include"),
            OsString::from_vec(vec![b'/', 0xfe]),
        ]);
        v.push(vec![OsString::from_vec(b"--ro=/\xff".to_vec())]);
        v
    }

    fn tails() -> Vec<Vec<OsString>> {
        [
            &[][..],
            &["--"],
            &["--", "cmd"],
            &["--", "cmd", "--x", "-y"],
            &["--", "--"],
            &["cmd"],
        ]
        .iter()
        .map(|t| os(t))
        .collect()
    }

    fn check(argv: &[OsString]) -> bool {
        let fast = parse_run_fast(argv.iter().cloned());
        if let Some(f) = &fast {
            assert_eq!(Some(f), clap_run(argv).as_ref(), "argv {argv:?}");
        }
        fast.is_some()
    }

    #[test]
    fn fast_parser_agrees_with_clap_on_pairs() {
        let (pieces, tails) = (pieces(), tails());
        let mut fast = 0;
        for a in &pieces {
            for b in &pieces {
                for t in &tails {
                    fast += check(&[a.clone(), b.clone(), t.clone()].concat()) as usize;
                }
            }
        }
        // The parser must actually take the common shapes, or it saves nothing.
        assert!(fast > 1000, "fast path taken {fast} times");
    }

    #[test]
    fn fast_parser_agrees_with_clap_on_longer_lines() {
        let (pieces, tails) = (pieces(), tails());
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..3000 {
            let mut argv = Vec::new();
            for _ in 0..3 + next(4) {
                argv.extend(pieces[next(pieces.len())].clone());
            }
            argv.extend(tails[next(tails.len())].clone());
            check(&argv);
        }
    }

    #[test]
    fn fast_parser_takes_what_tools_write() {
        for line in [
            &["--", "/bin/true"][..],
            &["--workspace", "/w", "--network", "closed", "--", "sh", "-c", "x"],
            &[
                "--profile",
                "qwen",
                "--include=/a",
                "--bind",
                "/b",
                "--ro",
                "/w/r",
                "--",
                "cmd",
            ],
            &[
                "--setenv",
                "K",
                "V",
                "--unsetenv",
                "U",
                "--new-session",
                "--",
                "cmd",
                "--",
                "-x",
            ],
            &[
                "--allow-socket",
                "/s",
                "--allow-git-config",
                "--no-die-with-parent",
                "--",
                "c",
            ],
            &["--tmp=host", "--landlock", "require", "--", "c"],
            &["--review", "--allow-agent-files", "--", "c"],
        ] {
            let argv = os(line);
            assert!(check(&argv), "not taken by the fast parser: {argv:?}");
        }
    }

    #[test]
    fn fast_parser_leaves_errors_and_help_to_clap() {
        for line in [
            &["--help"][..],
            &["--network", "closed", "--network", "open", "--", "c"],
            &["--new-session", "--new-session", "--", "c"],
            &["--workspace", "", "--", "c"],
            &["--workspace", "--", "c"],
            &["--bogus", "--", "c"],
            &["--"],
            &["c"],
        ] {
            assert_eq!(parse_run_fast(os(line).into_iter()), None, "{line:?}");
        }
    }
}
