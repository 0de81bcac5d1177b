//! Every Step run against the recording fake (qwrap-sys: fake.rs): the calls its
//! code makes must be exactly the calls its printed form (`qwrap plan`, the
//! trace) names. tests/plan_calls.rs holds the same texts to strace on the
//! real kernel; this test covers every variant, failure paths aside, with
//! no privileges and no kernel.

use super::fake_samples::*;
use super::*;
use crate::plan::Role;
use crate::plan::{AttachTree, Exec, HandGitDirs, Landlock, MakeMountPoint};
use crate::sys::fake;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A syscall's name as the printed plan spells the call (as tests/plan_calls.rs).
fn printed(call: &str) -> &str {
    match call {
        "mkdirat" => "mkdir",
        "symlinkat" => "symlink",
        "linkat" => "link",
        "mknodat" => "mknod",
        "openat" | "openat2" => "open",
        "umount2" => "umount",
        "clone" => "fork",
        "dup3" => "dup2",
        "capget" => "capset",
        "newfstatat" | "statx" | "fstat" => "stat",
        "execve" => "execvp",
        "faccessat" => "access",
        "landlock_create_ruleset" | "landlock_add_rule" | "landlock_restrict_self" => "landlock",
        "fchmodat" | "fchmod" => "chmod",
        "pwrite64" => "pwrite",
        "wait4" => "wait",
        other => other,
    }
}

/// Calls a step may make without naming them: closing, and the signal
/// mask reset just before execve.
const INCIDENTAL: &[&str] = &["close", "rt_sigprocmask"];

/// The words of a text: the names a printed step may give a call by.
fn words(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The calls a text names as calls (`name(`), except in asides: a `(`
/// after a space opens one (`(before Linux 5.12: mount(…))`, `(on an
/// initramfs root: …)`), naming calls another path makes; and `{…}`, where
/// a seccomp step lists the calls its filter is about.
fn named_calls(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    // Per open bracket: whether it opened an aside.
    let mut open: Vec<bool> = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        let aside = open.iter().any(|a| *a);
        match c {
            '(' => {
                if !word.is_empty() && !aside {
                    names.insert(word.clone());
                }
                open.push(word.is_empty());
            }
            '{' => open.push(true),
            ')' | '}' => {
                open.pop();
            }
            _ => {}
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            word.clear();
        }
    }
    names
}

/// Every name the fake can record, as the plan prints it.
fn vocabulary() -> BTreeSet<&'static str> {
    [
        "openat",
        "openat2",
        "mkdirat",
        "mknodat",
        "symlinkat",
        "linkat",
        "fchmodat",
        "fchmod",
        "faccessat",
        "fstat",
        "newfstatat",
        "fcntl",
        "flock",
        "renameat2",
        "read",
        "write",
        "pwrite64",
        "rename",
        "readlink",
        "statx",
        "socket",
        "setsockopt",
        "bind",
        "listen",
        "prctl",
        "seccomp",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsmount",
        "fsconfig",
        "mount",
        "umount2",
        "getpid",
        "getppid",
        "chdir",
        "chroot",
        "pivot_root",
        "setsid",
        "wait4",
        "kill",
        "pidfd_open",
        "capget",
        "capset",
        "sethostname",
        "socketpair",
        "sendmsg",
        "pipe2",
        "mount_setattr",
        "ioctl",
        "unshare",
        "clone",
        "setns",
        "close_range",
        "dup3",
        "execve",
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
    ]
    .into_iter()
    .map(printed)
    .collect()
}

/// The paths a step's calls were given that its text does not show. A
/// temporary name shows the pid as `<getpid()>`; bwrap mode reaches a
/// destination through the descriptor of its parent resolved inside the
/// new root (`/proc/self/fd/N`), where the text shows the destination.
/// Written bytes are not paths (the text gives their count or meaning).
fn unprinted_paths(text: &str, records: &[fake::Call]) -> Vec<String> {
    let pid = format!(".{}", std::process::id());
    records
        .iter()
        .filter(|c| !matches!(c.name, "write" | "pwrite64" | "sethostname"))
        .flat_map(|c| {
            c.args
                .split('"')
                .skip(1)
                .step_by(2)
                .filter(|p| !p.is_empty() && !p.starts_with("/proc/self/fd/"))
                .map(|p| p.replace(&pid, ".<getpid()>"))
                .filter(|p| !text.contains(p.as_str()))
                .map(|p| {
                    format!(
                        "`{text}`: {}({}) names {p:?}, which the text does not",
                        c.name, c.args
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs each step against the fake and checks its calls against its text.
/// Returns the problems found.
fn check(steps: &[Step], new_root: Option<PathBuf>) -> Vec<String> {
    let vocabulary = vocabulary();
    let mut problems = Vec::new();
    let mut ex = Executor::new(16, new_root);
    fake::start();
    for step in steps {
        let text = format!("{step}{}", ex.trace_note(step));
        if matches!(step, Step::AssertUsernsDisabled) {
            // What the kernel answers where user namespaces are disabled.
            fake::fail_next("unshare", Errno::PERM);
        }
        if matches!(step, Step::HandGitDirs(HandGitDirs { .. })) {
            // The warden's word that it filled the git dirs.
            fake::script(fake::Scripted::Read(b"A".to_vec()));
        }
        let result = ex.run(step);
        let records = fake::take_calls();
        problems.extend(unprinted_paths(&text, &records));
        let calls: Vec<&'static str> = records.iter().map(|c| c.name).collect();
        match (step, result) {
            (_, Ok(())) => {}
            // The fake's execve answers ENOEXEC: the test goes on.
            (Step::Exec(Exec { .. }), Err(f)) if f.errno == Errno::NOEXEC => {}
            (_, Err(f)) => problems.push(format!(
                "`{text}` failed against the fake: {:?} {:?}",
                f.errno,
                f.call.as_ref().map(|c| c.to_string()).or(f.note)
            )),
        }
        let said = words(&text);
        let unnamed: BTreeSet<&str> = calls
            .iter()
            .copied()
            .filter(|c| !INCIDENTAL.contains(c))
            .filter(|c| !said.contains(c) && !said.contains(printed(c)))
            .collect();
        if !unnamed.is_empty() {
            problems.push(format!("`{text}` also made {unnamed:?}"));
        }
        let made: BTreeSet<&str> = calls.iter().flat_map(|c| [*c, printed(c)]).collect();
        let unmade: Vec<String> = named_calls(&text)
            .into_iter()
            .filter(|n| vocabulary.contains(n.as_str()) && !made.contains(n.as_str()))
            .collect();
        if !unmade.is_empty() {
            problems.push(format!(
                "`{text}` names {unmade:?}, which its code did not make (made {calls:?})"
            ));
        }
    }
    fake::stop();
    problems
}

#[test]
fn every_step_makes_exactly_the_calls_it_prints() {
    let mut problems = check(&run_steps(), None);
    problems.extend(check(&legacy_steps(), None));
    problems.extend(check(&bwrap_steps(), Some(p("/q/newroot"))));
    for steps in join_steps() {
        problems.extend(check(&steps, None));
    }
    // A mount point to make: its parents found, itself missing.
    fake::fail_next("openat2", Errno::NOENT);
    problems.extend(check(
        &[Step::MakeMountPoint(MakeMountPoint {
            path: p("/q/newroot/a/b"),
            dir: false,
            mode: 0o444,
            if_missing: true,
        })],
        Some(p("/q/newroot")),
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A step's variant, by the name its JSON form gives it (`op`).
fn variant(step: &Step) -> String {
    let v = serde_json::to_value(step).expect("a step serialises");
    v["op"].as_str().expect("every step has an op").to_string()
}

/// Every variant of Step, read from its declaration (plan/step.rs), by
/// the names serde gives them: nothing kept by hand to forget.
fn all_variants() -> std::collections::BTreeSet<String> {
    let source = include_str!("../plan/step.rs");
    let start = source.find("pub enum Step {").expect("the Step enum");
    let body = &source[start..];
    let body = &body[..body.find("\n}\n").expect("the enum's end")];
    body.lines()
        .filter(|l| l.starts_with("    ") && !l.starts_with("     "))
        .filter_map(|l| {
            let name: String = l
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            name.starts_with(|c: char| c.is_ascii_uppercase()).then_some(name)
        })
        .map(|name| {
            let mut snake = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    snake.push('_');
                }
                snake.push(c.to_ascii_lowercase());
            }
            snake
        })
        .collect()
}

#[test]
fn the_samples_cover_every_variant() {
    let covered: BTreeSet<String> = [run_steps(), legacy_steps(), bwrap_steps()]
        .into_iter()
        .chain(join_steps())
        .flatten()
        .map(|s| variant(&s))
        .collect();
    let all = all_variants();
    assert!(
        all.len() > 50,
        "read only {} variants from plan/step.rs",
        all.len()
    );
    let missing: Vec<&String> = all.difference(&covered).collect();
    assert!(missing.is_empty(), "no sample for {missing:?}");
    let unknown: Vec<&String> = covered.difference(&all).collect();
    assert!(
        unknown.is_empty(),
        "samples of variants not read from plan/step.rs: {unknown:?}"
    );
}

#[test]
fn the_fake_answers_without_the_kernel() {
    // A mkdir the kernel would make is only recorded.
    let dir = std::env::temp_dir().join(format!("qwrap-fake-{}", std::process::id()));
    fake::start();
    k::mkdir(&dir, Mode::from_raw_mode(0o700)).unwrap();
    let calls = fake::take();
    fake::stop();
    assert_eq!(calls, ["mkdirat"]);
    assert!(!dir.exists());
    // And a step that fails is seen failing: the check is not vacuous.
    let problems = check(
        &[Step::AttachTree(AttachTree {
            tree: 5,
            role: Role::Device,
            target: p("/dev/null"),
        })],
        None,
    );
    assert!(
        problems.iter().any(|p| p.contains("failed against the fake")),
        "{problems:?}"
    );
}

#[test]
fn a_failing_call_is_named_with_its_arguments() {
    let step = Step::Landlock(Landlock {
        abi: 7,
        paths: vec![p("/q/ws")],
        fifo: vec![p("/tmp")],
        scoped: true,
    });
    let mut ex = Executor::new(1, None);
    fake::start();
    fake::fail_next("landlock_add_rule", Errno::BADF);
    let failed = ex.run(&step);
    fake::stop();
    let e = failed.expect_err("the scripted failure").into_error(7, &step);
    assert_eq!(e.errno, libc::EBADF);
    assert_eq!(e.failed_call.as_deref(), Some("landlock_add_rule(\"/q/ws\")"));
    let text = e.to_string();
    assert!(
        text.contains(": failed at landlock_add_rule(\"/q/ws\"): "),
        "{text}"
    );
}
