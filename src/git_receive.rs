//! Host git's receiving path: objects made inside brought into a host
//! repository as a push's are, by host git itself (`unpack-objects
//! --strict`, `index-pack --strict`), so that git hashes and checks each
//! one again. The warden's live import and `review apply` both take it.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Fewer new objects than this are unpacked loose, as `receive.unpackLimit`.
const UNPACK_LIMIT: usize = 100;

/// Host git on `git_dir`, with nothing of the caller's git environment.
pub fn git(git_dir: &Path) -> Command {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.as_bytes().starts_with(b"GIT_") {
            c.env_remove(k);
        }
    }
    c.arg("--git-dir").arg(git_dir).env("GIT_TERMINAL_PROMPT", "0");
    c.stderr(Stdio::piped());
    c
}

/// A git run's outcome, with git's last line where it refused.
pub fn said(o: std::io::Result<std::process::Output>) -> Result<(), String> {
    match o {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "refused by git as a push would be: {}",
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Err(format!("git could not run: {e}")),
    }
}

/// A pack on `pack`, indexed into `git_dir` as a pushed one would be.
pub fn index_pack(git_dir: &Path, pack: Stdio) -> Result<(), String> {
    let o = git(git_dir)
        .args(["index-pack", "--strict", "--stdin", "--fix-thin"])
        .stdin(pack)
        .stdout(Stdio::null())
        .output();
    said(o)
}

/// `git pack-objects` of `ids` out of `objects` (the host's objects an
/// alternate), piped into the host's strict unpacking (or indexing, for
/// many).
pub fn transfer(git_dir: &Path, objects: &Path, ids: &[String]) -> Result<(), String> {
    let mut pack = git(git_dir)
        .args(["pack-objects", "--stdout", "-q"])
        .env("GIT_OBJECT_DIRECTORY", objects)
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", git_dir.join("objects"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("git could not run: {e}"))?;
    let stdout = pack.stdout.take().ok_or("no pipe")?;
    let mut receive = git(git_dir);
    if ids.len() < UNPACK_LIMIT {
        receive.args(["unpack-objects", "-q", "--strict"]);
    } else {
        receive.args(["index-pack", "--strict", "--stdin", "--fix-thin"]);
    }
    let receive = receive.stdin(Stdio::from(stdout)).stdout(Stdio::null()).spawn();
    if let Some(mut stdin) = pack.stdin.take() {
        for id in ids {
            let _ = writeln!(stdin, "{id}");
        }
    }
    let packed = said(pack.wait_with_output());
    let received = said(receive.and_then(|r| r.wait_with_output()));
    packed.and(received)
}
