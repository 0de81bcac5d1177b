//! The caller's cgroups, for `--memory`, `--max-processes` and `--cpus`:
//! its group in each hierarchy (/proc/self/cgroup), where each hierarchy
//! is mounted (/proc/self/mountinfo), and for every level from its group
//! up what that level delegates and whether the caller may make a group
//! there. Read only when a run asks for one of those limits, and by the
//! reports. plan/limits.rs decides from these facts.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// The caller's cgroups.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CgroupFacts {
    /// The run's name (`host::run_name`): the sandbox's groups are named
    /// `qwrap-NAME`.
    pub run: String,
    /// The host has swap: a memory limit must hold it too.
    pub swap: bool,
    /// The unified hierarchy (cgroup v2), where it is mounted.
    pub unified: Option<Unified>,
    /// The v1 hierarchies this process is in that bind a controller.
    pub v1: Vec<Hierarchy>,
}

/// The unified hierarchy.
#[derive(Debug, Clone, Serialize)]
pub struct Unified {
    #[serde(serialize_with = "crate::lossy::path")]
    pub mount: PathBuf,
    /// From the caller's own group up to the top the mount shows.
    pub levels: Vec<Level>,
}

/// One group on the way up from the caller's own.
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    /// Its path in the hierarchy, as /proc/self/cgroup spells it.
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub dir: PathBuf,
    /// cgroup.subtree_control: the controllers its children get.
    pub subtree: Vec<String>,
    /// cgroup.controllers: the controllers it has itself.
    pub available: Vec<String>,
    /// Why the caller may not make a group in it and move itself there
    /// (`access(W_OK)` of the directory and of its cgroup.procs): the errno.
    pub not_writable: Option<String>,
}

/// A v1 hierarchy.
#[derive(Debug, Clone, Serialize)]
pub struct Hierarchy {
    /// The controllers bound to it (`cpu,cpuacct` share one).
    pub controllers: Vec<String>,
    #[serde(serialize_with = "crate::lossy::path")]
    pub mount: PathBuf,
    /// The caller's group in it.
    #[serde(serialize_with = "crate::lossy::path")]
    pub own: PathBuf,
    /// The group's directory; None where the mount does not show it (a
    /// mount of another group as its root).
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub dir: Option<PathBuf>,
    /// Why the caller may not make a group in it: the errno.
    pub not_writable: Option<String>,
    /// memory.memsw.limit_in_bytes is there: swap is accounted.
    pub memsw: bool,
}

/// The caller's cgroups as this process sees them.
pub fn probe() -> CgroupFacts {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = std::fs::read("/proc/self/mountinfo").unwrap_or_default();
    let info = rustix::system::sysinfo();
    facts(&own, &mounts, super::run_name(), info.totalswap > 0, &Real)
}

/// What the probe asks of the filesystem (a fake in the unit tests).
pub(crate) trait Look {
    fn read(&self, path: &Path) -> Option<String>;
    /// None when the caller may write it, else the errno.
    fn writable(&self, path: &Path) -> Option<i32>;
    fn exists(&self, path: &Path) -> bool;
}

struct Real;

impl Look for Real {
    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
    fn writable(&self, path: &Path) -> Option<i32> {
        rustix::fs::access(path, rustix::fs::Access::WRITE_OK)
            .err()
            .map(|e| e.raw_os_error())
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// A cgroup filesystem's mount: its root, mount point, type and options.
struct Mount {
    root: PathBuf,
    point: PathBuf,
    v2: bool,
    options: Vec<String>,
}

pub(crate) fn facts(own: &str, mountinfo: &[u8], run: String, swap: bool, look: &dyn Look) -> CgroupFacts {
    let mounts = cgroup_mounts(mountinfo);
    let mut facts = CgroupFacts {
        run,
        swap,
        ..Default::default()
    };
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(names), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = PathBuf::from(path);
        if id == "0" && names.is_empty() {
            facts.unified = mounts
                .iter()
                .filter(|m| m.v2)
                .find_map(|m| Some((m, beneath(m, &path)?)))
                .map(|(m, dir)| Unified {
                    mount: m.point.clone(),
                    levels: levels(m, &path, dir, look),
                });
            continue;
        }
        let controllers: Vec<String> = names
            .split(',')
            .filter(|c| !c.is_empty() && !c.starts_with("name="))
            .map(str::to_string)
            .collect();
        if controllers.is_empty() {
            continue;
        }
        let Some(m) = mounts
            .iter()
            .find(|m| !m.v2 && controllers.iter().all(|c| m.options.contains(c)))
        else {
            continue;
        };
        let dir = beneath(m, &path);
        facts.v1.push(Hierarchy {
            controllers,
            mount: m.point.clone(),
            not_writable: match dir.as_deref() {
                Some(d) => writable(d, look),
                None => Some(crate::errno::errno_text(libc::ENOENT)),
            },
            memsw: dir
                .as_deref()
                .is_some_and(|d| look.exists(&d.join("memory.memsw.limit_in_bytes"))),
            own: path,
            dir,
        });
    }
    facts
}

/// Each level from the caller's group up to the mount's root.
fn levels(m: &Mount, own: &Path, own_dir: PathBuf, look: &dyn Look) -> Vec<Level> {
    let mut out = Vec::new();
    let (mut path, mut dir) = (own.to_path_buf(), own_dir);
    loop {
        let words = |file: &str| -> Vec<String> {
            look.read(&dir.join(file))
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        out.push(Level {
            subtree: words("cgroup.subtree_control"),
            available: words("cgroup.controllers"),
            not_writable: writable(&dir, look),
            path: path.clone(),
            dir: dir.clone(),
        });
        if path == m.root || !path.pop() || !dir.pop() {
            return out;
        }
    }
}

/// Why the caller may not make a group in `dir` and move itself there.
fn writable(dir: &Path, look: &dyn Look) -> Option<String> {
    look.writable(dir)
        .or_else(|| look.writable(&dir.join("cgroup.procs")))
        .map(crate::errno::errno_text)
}

/// Where the mount shows the group `path` (None: outside the mount's root).
fn beneath(m: &Mount, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(&m.root).ok()?;
    Some(if rel.as_os_str().is_empty() {
        m.point.clone()
    } else {
        m.point.join(rel)
    })
}

/// The cgroup and cgroup2 mounts of a mount table, in its order.
fn cgroup_mounts(text: &[u8]) -> Vec<Mount> {
    use std::os::unix::ffi::OsStringExt;
    let path = |f: &[u8]| {
        super::mountinfo::unescape(f)
            .ok()
            .map(|b| PathBuf::from(std::ffi::OsString::from_vec(b)))
    };
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let sep = fields.iter().position(|f| *f == b"-")?;
            let fstype = *fields.get(sep + 1)?;
            let v2 = match fstype {
                b"cgroup2" => true,
                b"cgroup" => false,
                _ => return None,
            };
            let options = String::from_utf8_lossy(fields.get(sep + 3)?)
                .split(',')
                .map(str::to_string)
                .collect();
            Some(Mount {
                root: path(fields.get(3)?)?,
                point: path(fields.get(4)?)?,
                v2,
                options,
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A filesystem of a few files, and the paths the caller may write.
    #[derive(Default)]
    pub(crate) struct Fake {
        pub files: BTreeMap<PathBuf, String>,
        pub writable: Vec<PathBuf>,
    }

    impl Look for Fake {
        fn read(&self, path: &Path) -> Option<String> {
            self.files.get(path).cloned()
        }
        fn writable(&self, path: &Path) -> Option<i32> {
            let ok = self.writable.iter().any(|w| path.starts_with(w));
            (!ok).then_some(libc::EACCES)
        }
        fn exists(&self, path: &Path) -> bool {
            self.files.contains_key(path)
        }
    }

    /// A systemd host on cgroup v2: the caller in an app scope of its user
    /// manager, which delegates cpu, memory and pids.
    pub(crate) fn systemd_user(delegated: &str) -> CgroupFacts {
        let base = "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service";
        let mut fake = Fake::default();
        for (dir, subtree) in [
            ("/sys/fs/cgroup", "cpu memory pids"),
            ("/sys/fs/cgroup/user.slice", "cpu memory pids"),
            ("/sys/fs/cgroup/user.slice/user-1000.slice", "cpu memory pids"),
            (base, delegated),
            (&format!("{base}/app.slice") as &str, ""),
            (&format!("{base}/app.slice/app-term.scope") as &str, ""),
        ] {
            fake.files
                .insert(PathBuf::from(dir).join("cgroup.subtree_control"), subtree.into());
            fake.files.insert(
                PathBuf::from(dir).join("cgroup.controllers"),
                "cpu io memory pids".into(),
            );
        }
        fake.writable.push(base.into());
        let mountinfo = b"30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        facts(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-term.scope\n",
            mountinfo,
            "4242".into(),
            true,
            &fake,
        )
    }

    #[test]
    fn the_unified_hierarchy_level_by_level() {
        let f = systemd_user("cpu memory pids");
        let u = f.unified.as_ref().unwrap();
        assert_eq!(u.mount, PathBuf::from("/sys/fs/cgroup"));
        let paths: Vec<&str> = u.levels.iter().map(|l| l.path.to_str().unwrap()).collect();
        assert_eq!(paths.len(), 6, "{paths:?}");
        assert_eq!(paths[5], "/");
        assert_eq!(u.levels[2].subtree, ["cpu", "memory", "pids"]);
        assert_eq!(u.levels[2].not_writable, None);
        assert_eq!(
            u.levels[3].not_writable.as_deref(),
            Some("Permission denied (EACCES)")
        );
        assert!(f.v1.is_empty() && f.swap && f.run == "4242");
    }

    #[test]
    fn v1_hierarchies_by_their_controllers() {
        let mountinfo = b"25 24 0:22 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
26 24 0:23 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
27 24 0:24 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n\
28 24 0:25 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let own =
            "4:memory:/process_api/x\n2:cpu,cpuacct:/\n8:pids:/docker/abc/inner\n9:name=systemd:/\n0::/\n";
        let mut fake = Fake::default();
        fake.files.insert(
            "/sys/fs/cgroup/memory/process_api/x/memory.memsw.limit_in_bytes".into(),
            "9223372036854771712".into(),
        );
        fake.writable.push("/sys/fs/cgroup".into());
        let f = facts(own, mountinfo, "7-0".into(), false, &fake);
        assert_eq!(f.v1.len(), 3);
        assert_eq!(f.v1[0].controllers, ["memory"]);
        assert_eq!(
            f.v1[0].dir.as_deref(),
            Some(Path::new("/sys/fs/cgroup/memory/process_api/x"))
        );
        assert!(f.v1[0].memsw && f.v1[0].not_writable.is_none());
        assert_eq!(f.v1[1].controllers, ["cpu", "cpuacct"]);
        assert_eq!(
            f.v1[1].dir.as_deref(),
            Some(Path::new("/sys/fs/cgroup/cpu,cpuacct"))
        );
        // A mount of another group as its root shows the caller's beneath it.
        assert_eq!(
            f.v1[2].dir.as_deref(),
            Some(Path::new("/sys/fs/cgroup/pids/inner"))
        );
        let u = f.unified.unwrap();
        assert_eq!(u.levels.len(), 1);
        assert!(u.levels[0].subtree.is_empty());
    }

    #[test]
    fn reads_this_hosts_cgroups() {
        let f = probe();
        assert!(f.run.starts_with(&format!("{}-", std::process::id())));
        assert!(f.unified.is_some() || !f.v1.is_empty() || !Path::new("/sys/fs/cgroup").exists());
    }
}
