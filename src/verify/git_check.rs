//! The git guard, proven while the sandbox runs: inside, no git dir can be
//! renamed away (a swapped `.git` would carry planted hooks), and the probe
//! plants in each git dir what a host git would follow or run (`commondir`,
//! `gitdir`, `config.worktree`, a config key, a hook, a new name,
//! `objects/info/alternates`, a FIFO named `ORIG_HEAD`, a symlink named
//! `packed-refs`, a reflog that is a link to `/etc/passwd`, a ref that is
//! a link to `/dev/zero`, an index whose entry names `.git/hooks/…`) and
//! makes a repository of its own in the workspace; then it waits while
//! verify looks at the host's git dirs from outside, and only then goes on.
//! Nothing planted may be there, and the new repository must be named when
//! the sandbox ends (verify removes it).

use super::Check;
use crate::errno::errno_text;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const N: &str = "git-pointers";
const T: &str = "git dirs cannot be swapped; nothing planted in them reaches the host's";
/// What the probe writes into every planted file.
const MARK: &str = "qwrap-verify-planted";
/// The line the probe prints once it has planted.
const PLANTED: &str = "qwrap-probe: git planted\n";
/// What the probe waits for: verify has looked.
const LOOKED: &str = ".qwrap-verify-git-looked";
const SETTLING: &str = "planted; settled from outside";
/// The repository the probe makes in the workspace.
const NESTED: &str = ".qwrap-verify-nested";
/// The index entry the probe forges.
const FORGED: &str = ".git/hooks/qwrap-verify";

/// In the probe.
pub fn check(git_dirs: &[PathBuf], tag: &str, workspace: &Path, refused: i32) -> Check {
    if git_dirs.is_empty() {
        return Check::skip(
            N,
            T,
            "no guarded git dirs (not a checkout, or --allow-git-config)".into(),
        );
    }
    for d in git_dirs {
        let moved = d.with_file_name(format!("{}{tag}", file_name(d)));
        match rustix::fs::rename(d, &moved) {
            // A mount point (EBUSY), or in a read-only parent (EROFS), or,
            // without mounts, Landlock's refusal (`refused`: EACCES).
            Err(rustix::io::Errno::BUSY | rustix::io::Errno::ROFS) => {}
            Err(e) if e.raw_os_error() == refused => {}
            Err(e) => {
                return Check::fail(
                    N,
                    T,
                    &errno_text(libc::EBUSY),
                    format!("rename {}: {}", d.display(), errno_text(e.raw_os_error())),
                );
            }
            Ok(()) => {
                let _ = rustix::fs::rename(&moved, d);
                return Check::fail(
                    N,
                    T,
                    &errno_text(libc::EBUSY),
                    format!("{} could be renamed", d.display()),
                );
            }
        }
    }
    for d in git_dirs.iter().filter(|d| !d.ends_with("objects")) {
        plant(d);
    }
    let nested = workspace.join(NESTED).join(".git");
    let _ = std::fs::create_dir_all(nested.join("hooks"));
    let _ = std::fs::write(nested.join("config"), format!("[core]\n\tfsmonitor = {MARK}\n"));
    let mut out = std::io::stdout();
    let _ = out.write_all(PLANTED.as_bytes());
    let _ = out.flush();
    let looked = workspace.join(LOOKED);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !looked.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_file(&looked);
    Check::skip(N, T, SETTLING.into())
}

/// Every route a host git would follow or run, planted in one git dir (its
/// top level is the sandbox's own; errors are ignored: a route that cannot
/// even be planted is closed).
fn plant(d: &Path) {
    for n in ["commondir", "gitdir", "config.worktree", "qwrap-verify-new"] {
        let _ = std::fs::write(d.join(n), MARK);
    }
    let _ = std::fs::create_dir_all(d.join("hooks"));
    let _ = std::fs::write(d.join("hooks/qwrap-verify-hook"), MARK);
    if let Ok(mut c) = std::fs::OpenOptions::new().append(true).open(d.join("config")) {
        let _ = writeln!(
            c,
            "[extensions]\n\tworktreeConfig = true\n[qwrap]\n\tplanted = {MARK}"
        );
    }
    let _ = std::fs::write(d.join("objects/info/alternates"), MARK);
    let fifo = d.join("ORIG_HEAD.qwrap-verify");
    let _ = rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    );
    let _ = std::fs::rename(&fifo, d.join("ORIG_HEAD"));
    for (n, target) in [
        ("packed-refs", "/etc/passwd"),
        ("logs/HEAD", "/etc/passwd"),
        ("refs/heads/qwrap-verify", "/dev/zero"),
    ] {
        let link = d.join(format!("{n}.qwrap-verify"));
        let _ = std::os::unix::fs::symlink(target, &link);
        let _ = std::fs::rename(&link, d.join(n));
    }
    let _ = std::fs::write(d.join("index.qwrap-verify"), forged_index());
    let _ = std::fs::rename(d.join("index.qwrap-verify"), d.join("index"));
}

/// A version 2 index of one entry whose path is [`FORGED`] (its trailer
/// left zero, as `index.skipHash` writes it).
fn forged_index() -> Vec<u8> {
    let mut v = b"DIRC".to_vec();
    v.extend_from_slice(&2u32.to_be_bytes());
    v.extend_from_slice(&1u32.to_be_bytes());
    let mut stat = [0u8; 40];
    stat[24..28].copy_from_slice(&0o100755u32.to_be_bytes());
    v.extend_from_slice(&stat);
    v.extend_from_slice(&[0x11; 20]);
    v.extend_from_slice(&(FORGED.len() as u16).to_be_bytes());
    v.extend_from_slice(FORGED.as_bytes());
    v.resize(12 + ((62 + FORGED.len() + 8) & !7), 0);
    v.extend_from_slice(&[0; 20]);
    v
}

/// Outside: whether the probe has planted.
pub fn planted(output: &[u8]) -> bool {
    output.windows(PLANTED.len()).any(|w| w == PLANTED.as_bytes())
}

/// Outside, while the probe waits: the host's git dirs hold nothing it
/// planted. Then tells the probe to go on.
pub fn look_on_host(git_dirs: &[PathBuf], workspace: &Path) -> Check {
    // Long enough for the warden to have copied what it would copy.
    std::thread::sleep(Duration::from_millis(200));
    let mut found = Vec::new();
    for d in git_dirs {
        for n in [
            "commondir",
            "gitdir",
            "config.worktree",
            "config",
            "objects/info/alternates",
        ] {
            if std::fs::read(d.join(n)).is_ok_and(|c| c.windows(MARK.len()).any(|w| w == MARK.as_bytes())) {
                found.push(d.join(n));
            }
        }
        for n in ["qwrap-verify-new", "hooks/qwrap-verify-hook"] {
            if std::fs::symlink_metadata(d.join(n)).is_ok() {
                found.push(d.join(n));
            }
        }
        for n in ["ORIG_HEAD", "packed-refs", "logs/HEAD", "refs/heads/qwrap-verify"] {
            if std::fs::symlink_metadata(d.join(n)).is_ok_and(|m| !m.is_file()) {
                found.push(d.join(n));
            }
        }
        if std::fs::read(d.join("index"))
            .is_ok_and(|c| c.windows(FORGED.len()).any(|w| w == FORGED.as_bytes()))
        {
            found.push(d.join("index"));
        }
    }
    let _ = std::fs::write(workspace.join(LOOKED), "");
    if found.is_empty() {
        Check::pass(N, T)
    } else {
        let list: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        Check::fail(
            N,
            T,
            "nothing planted inside in the host's git dirs",
            format!("on the host while the sandbox ran: {}", list.join(", ")),
        )
    }
}

/// After the run: the repository the probe made was named on stderr when
/// the sandbox ended; verify removes it.
pub fn settle_nested(checks: &mut [Check], output: &str, workspace: &Path) {
    let nested = workspace.join(NESTED);
    if !nested.exists() {
        return;
    }
    let _ = std::fs::remove_dir_all(&nested);
    let named = format!("{}: a repository made inside", nested.join(".git").display());
    let Some(c) = checks.iter_mut().find(|c| c.name == N) else {
        return;
    };
    if c.outcome == super::Outcome::Pass && !output.contains(&named) {
        *c = Check::fail(
            N,
            T,
            "a repository made inside named when the sandbox ends",
            format!("{} was not named", nested.join(".git").display()),
        );
    }
}

/// Puts what verify saw on the host in the probe's place.
pub fn settle(checks: &mut [Check], seen: Option<Check>) {
    let Some(c) = checks.iter_mut().find(|c| c.name == N) else {
        return;
    };
    if c.got.as_deref() != Some(SETTLING) {
        return;
    }
    *c = seen.unwrap_or_else(|| {
        Check::fail(
            N,
            T,
            "verify looks at the host while the probe waits",
            "the probe planted, but its output never said so".into(),
        )
    });
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
