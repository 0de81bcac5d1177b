//! `--explain` and `--denials FILE`: the refusals the warden saw, recorded
//! as they come (one JSON object each in the denials file) and said at
//! exit on qwrap's stderr, one line per distinct refusal with the option
//! that would allow it: the first `SHOWN`, then how many more. Nothing is
//! said when nothing was refused. explain_judge.rs decides what a trapped
//! call meets; the egress proxy and the resource limits (limits.rs) report
//! here too.

use super::refusal::{Kind, Refusal};
use rustix::fd::OwnedFd;
use std::collections::HashMap;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// Distinct refusals said at exit; the rest are counted.
pub(super) const SHOWN: usize = 20;
/// Objects written to the denials file; past it one object counts the rest.
pub(super) const WRITTEN: usize = 10_000;
/// Distinct refusals remembered (each a path of up to 4 KiB): past them a
/// new one is only counted, so that a command refused on a million names
/// cannot grow the warden without end.
pub(super) const REMEMBERED: usize = 10_000;

/// The refusals seen so far.
pub(crate) struct Recorder {
    say: Option<OwnedFd>,
    denials: Option<std::fs::File>,
    /// Distinct refusals, in the order first seen, with their count.
    seen: Vec<(Refusal, u64)>,
    index: HashMap<(Kind, String, Option<i32>), usize>,
    /// Refusals of a kind, target and errno not seen before, once
    /// REMEMBERED are: counted, not kept.
    forgotten: u64,
    written: usize,
    unwritten: u64,
}

impl Recorder {
    pub(crate) fn new(say: Option<OwnedFd>, denials: Option<std::fs::File>) -> Recorder {
        Recorder {
            say,
            denials,
            seen: Vec::new(),
            index: HashMap::new(),
            forgotten: 0,
            written: 0,
            unwritten: 0,
        }
    }

    /// Records one refusal by `pid` (0: not known).
    pub(crate) fn record(&mut self, pid: i32, r: Refusal) {
        if let Some(file) = &mut self.denials {
            if self.written < WRITTEN {
                let line = json(&r, pid, &comm(pid), now());
                if file.write_all(line.as_bytes()).is_ok() {
                    self.written += 1;
                }
            } else {
                self.unwritten += 1;
            }
        }
        let key = (r.kind, r.target.clone(), r.errno);
        match self.index.get(&key) {
            Some(&i) => self.seen[i].1 += 1,
            None if self.seen.len() >= REMEMBERED => self.forgotten += 1,
            None => {
                self.index.insert(key, self.seen.len());
                self.seen.push((r, 1));
            }
        }
    }

    /// The sandbox is gone: each distinct refusal said (the first SHOWN),
    /// the denials file closed with the count of what it could not hold.
    pub(crate) fn finish(&mut self) {
        if let Some(file) = &mut self.denials
            && self.unwritten > 0
        {
            let _ = writeln!(
                file,
                "{}",
                serde_json::json!({ "time": now(), "kind": "truncated", "count": self.unwritten })
            );
        }
        self.denials = None;
        let Some(fd) = self.say.take() else { return };
        if self.seen.is_empty() {
            return;
        }
        let mut text = String::new();
        for (r, count) in self.seen.iter().take(SHOWN) {
            text += &line(r, *count);
        }
        if self.seen.len() > SHOWN {
            // Past REMEMBERED the new ones were counted, not told apart.
            let more = match self.forgotten {
                0 => format!("{}", self.seen.len() - SHOWN),
                _ => format!("more than {}", self.seen.len() - SHOWN),
            };
            text += &format!("qwrap: refused: and {more} more (--denials FILE lists each)\n");
        }
        let mut out = std::fs::File::from(fd);
        let _ = out.write_all(text.as_bytes());
    }
}

/// `qwrap: refused: KIND TARGET (OP: ERRNO): REASON; allow with OPTION`.
pub(super) fn line(r: &Refusal, count: u64) -> String {
    // The call, where the target does not name it already.
    let got = match (r.errno, r.op == r.target) {
        (Some(e), true) => errno_name(e),
        (Some(e), false) => format!("{}: {}", r.op, errno_name(e)),
        (None, _) => r.op.clone(),
    };
    let times = if count > 1 {
        format!(", {count} times")
    } else {
        String::new()
    };
    let allow = match &r.option {
        Some(o) => format!("allow with {o}"),
        None => "nothing allows it".into(),
    };
    // The denials file's JSON escapes a name itself; a line on a terminal
    // escapes its control characters.
    let shown = crate::lossy::shown;
    format!(
        "qwrap: refused: {} {} ({got}{times}): {}; {}\n",
        r.kind.name(),
        shown(&r.target),
        shown(&r.reason),
        shown(&allow)
    )
}

/// One object of the denials file (docs/reports.md).
pub(super) fn json(r: &Refusal, pid: i32, command: &str, time: f64) -> String {
    let mut o = serde_json::Map::new();
    o.insert("time".into(), time.into());
    o.insert("pid".into(), pid.into());
    o.insert("command".into(), command.into());
    o.insert("kind".into(), r.kind.name().into());
    o.insert("operation".into(), r.op.clone().into());
    let key = if r.kind.is_path() { "path" } else { "target" };
    o.insert(key.into(), r.target.clone().into());
    o.insert(
        "errno".into(),
        r.errno.map_or(serde_json::Value::Null, |e| errno_name(e).into()),
    );
    o.insert("reason".into(), r.reason.clone().into());
    o.insert(
        "option".into(),
        r.option
            .clone()
            .map_or(serde_json::Value::Null, serde_json::Value::from),
    );
    format!("{}\n", serde_json::Value::Object(o))
}

/// Seconds since the epoch, as the egress log gives its time.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The command name of a process ("" when it is gone).
fn comm(pid: i32) -> String {
    if pid <= 0 {
        return String::new();
    }
    crate::sys::kernel::read_file(std::path::Path::new(&format!("/proc/{pid}/comm")))
        .map(|c| String::from_utf8_lossy(&c).trim_end_matches('\n').to_string())
        .unwrap_or_default()
}

/// The symbolic name of the errnos a refusal gives.
pub(crate) fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EACCES => "EACCES",
        libc::EROFS => "EROFS",
        libc::ENOSYS => "ENOSYS",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ENOSPC => "ENOSPC",
        libc::EAGAIN => "EAGAIN",
        libc::EDQUOT => "EDQUOT",
        libc::EFBIG => "EFBIG",
        libc::ENOMEM => "ENOMEM",
        libc::EMFILE => "EMFILE",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EXDEV => "EXDEV",
        libc::EBUSY => "EBUSY",
        _ => return format!("errno {e}"),
    };
    name.into()
}

/// `--explain`'s state in the warden: the judge of the trapped calls and
/// the refusals seen (shared with the egress proxy's threads).
pub(super) struct Explaining {
    pub(super) judge: super::explain_judge::Judge,
    pub(super) seen: std::sync::Arc<std::sync::Mutex<Recorder>>,
}

impl Explaining {
    pub(super) fn record(&self, pid: u32, r: Refusal) {
        if let Ok(mut s) = self.seen.lock() {
            s.record(pid as i32, r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &str) -> Refusal {
        Refusal {
            kind: Kind::Write,
            op: "openat".into(),
            target: path.into(),
            errno: Some(libc::EROFS),
            reason: "outside the writable roots".into(),
            option: Some("--include /opt".into()),
        }
    }

    #[test]
    fn a_line_names_the_refusal_and_the_option() {
        assert_eq!(
            line(&write("/opt/x"), 1),
            "qwrap: refused: write /opt/x (openat: EROFS): outside the writable roots; allow with --include /opt\n"
        );
        let mut r = write("/proc/sys/x");
        r.option = None;
        assert!(
            line(&r, 3)
                .ends_with("(openat: EROFS, 3 times): outside the writable roots; nothing allows it\n")
        );
    }

    #[test]
    fn a_name_in_a_line_cannot_forge_another() {
        let l = line(&write("/w/x\nqwrap: refused: nothing\u{1b}[2J"), 1);
        assert_eq!(l.matches('\n').count(), 1, "{l}");
        assert!(
            l.starts_with("qwrap: refused: write /w/x\\nqwrap: refused: nothing\\u{1b}[2J (openat"),
            "{l}"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&write("/w/x\ny"), 7, "t", 1.5)).unwrap();
        assert_eq!(v["path"], "/w/x\ny", "the JSON keeps the name");
    }

    #[test]
    fn a_json_object_has_every_field() {
        let v: serde_json::Value = serde_json::from_str(&json(&write("/opt/x"), 7, "touch", 1.5)).unwrap();
        assert_eq!(v["pid"], 7);
        assert_eq!(v["command"], "touch");
        assert_eq!(v["kind"], "write");
        assert_eq!(v["operation"], "openat");
        assert_eq!(v["path"], "/opt/x");
        assert_eq!(v["errno"], "EROFS");
        assert_eq!(v["option"], "--include /opt");
        let mut call = write("keyctl");
        call.kind = Kind::Call;
        let v: serde_json::Value = serde_json::from_str(&json(&call, 7, "k", 1.5)).unwrap();
        assert_eq!(v["target"], "keyctl");
        assert!(v.get("path").is_none());
    }

    #[test]
    fn refusals_are_counted_once_each_and_bounded() {
        let mut r = Recorder::new(None, None);
        for i in 0..(SHOWN + 5) {
            r.record(0, write(&format!("/opt/{i}")));
            r.record(0, write(&format!("/opt/{i}")));
        }
        assert_eq!(r.seen.len(), SHOWN + 5);
        assert!(r.seen.iter().all(|(_, n)| *n == 2));
    }

    #[test]
    fn what_is_remembered_is_bounded() {
        let mut r = Recorder::new(None, None);
        for i in 0..(REMEMBERED + 50) {
            r.record(0, write(&format!("/opt/{i}")));
        }
        assert_eq!(r.seen.len(), REMEMBERED);
        assert_eq!(r.index.len(), REMEMBERED);
        assert_eq!(r.forgotten, 50);
    }
}
