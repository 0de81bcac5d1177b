//! Reads the host settings that explain a failed setup step, so that the error
//! can say which sysctl, AppArmor rule or container runtime is in the way.
//! Only called after a failure: nothing here is on the start-up path.

use std::path::Path;

/// What forbids user namespaces or mounts on this host, as far as we can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Debian/Ubuntu's `kernel.unprivileged_userns_clone=0`.
    UnprivilegedUsernsClone,
    /// `user.max_user_namespaces=0` (or the count is used up).
    MaxUserNamespaces(u64),
    /// Ubuntu ≥ 23.10: `kernel.apparmor_restrict_unprivileged_userns=1`.
    AppArmorRestrict,
    /// Docker, Podman, Kubernetes, LXC…: their seccomp/AppArmor profiles
    /// forbid `unshare` and `mount`.
    Container(String),
}

/// The sysctl files, relative to a proc root (so tests can point elsewhere).
const UNPRIV_CLONE: &str = "sys/kernel/unprivileged_userns_clone";
const MAX_USERNS: &str = "sys/user/max_user_namespaces";
const APPARMOR_RESTRICT: &str = "sys/kernel/apparmor_restrict_unprivileged_userns";

/// Every blocker found, most specific first.
pub fn blockers(proc_root: &Path, fs_root: &Path) -> Vec<Blocker> {
    let read = |rel: &str| -> Option<String> {
        std::fs::read_to_string(proc_root.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut found = Vec::new();
    if read(UNPRIV_CLONE).as_deref() == Some("0") {
        found.push(Blocker::UnprivilegedUsernsClone);
    }
    if let Some(max) = read(MAX_USERNS).and_then(|s| s.parse::<u64>().ok())
        && max == 0
    {
        found.push(Blocker::MaxUserNamespaces(max));
    }
    if read(APPARMOR_RESTRICT).as_deref() == Some("1") {
        found.push(Blocker::AppArmorRestrict);
    }
    if let Some(runtime) = container_runtime(proc_root, fs_root) {
        found.push(Blocker::Container(runtime));
    }
    found
}

/// Names the container runtime we run under, if any.
pub fn container_runtime(proc_root: &Path, fs_root: &Path) -> Option<String> {
    if fs_root.join(".dockerenv").exists() {
        return Some("docker".into());
    }
    if fs_root.join("run/.containerenv").exists() {
        return Some("podman".into());
    }
    if let Ok(v) = std::env::var("container")
        && !v.is_empty()
    {
        return Some(v);
    }
    let cgroup = std::fs::read_to_string(proc_root.join("1/cgroup")).unwrap_or_default();
    ["kubepods", "docker", "containerd", "libpod", "lxc"]
        .iter()
        .find(|k| cgroup.contains(*k))
        .map(|k| k.to_string())
}

/// The `hint:` text for a blocker.
pub fn hint(b: &Blocker) -> String {
    match b {
        Blocker::UnprivilegedUsernsClone => "unprivileged user namespaces are disabled by the sysctl \
             kernel.unprivileged_userns_clone=0; enable them with \
             `sysctl -w kernel.unprivileged_userns_clone=1`"
            .into(),
        Blocker::MaxUserNamespaces(n) => format!(
            "user namespaces are disabled: the sysctl user.max_user_namespaces is {n}; \
             enable them with `sysctl -w user.max_user_namespaces=15000`"
        ),
        Blocker::AppArmorRestrict => format!(
            "AppArmor restricts unprivileged user namespaces \
             (kernel.apparmor_restrict_unprivileged_userns=1); the Debian package installs a \
             profile; for this binary, install one with \
             `printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile qwrap {} flags=(unconfined) {{\\n  userns,\\n}}\\n' \
             | sudo tee /etc/apparmor.d/qwrap && sudo apparmor_parser -r /etc/apparmor.d/qwrap` \
             (man qwrap)",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "/usr/bin/qwrap".into())
        ),
        Blocker::Container(rt) => format!(
            "running inside a container ({rt}): its runtime's seccomp or AppArmor profile \
             forbids unshare(2) and mount(2); run qwrap on the host, or give the container \
             a profile that allows user namespaces and mounts"
        ),
    }
}

/// Where namespaces are refused, the mode that needs none.
pub const LANDLOCK_ONLY_HINT: &str = "; or, where that cannot be changed (a container, a locked-down host), \
    `--isolation landlock` (or `isolation = \"auto\"`) confines with Landlock and seccomp alone, \
    giving up the private /tmp, /dev and IPC views (qwrap(1), docs/security.md)";

/// The hint for a failed `unshare(CLONE_NEWUSER…)`.
pub fn userns_hint(errno: i32) -> String {
    format!("{}{LANDLOCK_ONLY_HINT}", userns_cause(errno))
}

fn userns_cause(errno: i32) -> String {
    let found = blockers(Path::new("/proc"), Path::new("/"));
    if let Some(b) = found.first() {
        return hint(b);
    }
    match errno {
        libc::ENOSPC => "the limit on user namespaces (user.max_user_namespaces) is used up".into(),
        libc::EUSERS => "user namespaces are nested too deeply (the kernel allows 32 levels)".into(),
        libc::EINVAL => "the kernel was built without user namespaces (CONFIG_USER_NS)".into(),
        _ => "user namespaces are forbidden here; check the sysctls user.max_user_namespaces, \
              kernel.unprivileged_userns_clone and kernel.apparmor_restrict_unprivileged_userns, \
              and any seccomp filter in force"
            .into(),
    }
}

/// The hint for a failed uid/gid map or mount step, if something explains it.
pub fn setup_hint(errno: i32) -> Option<String> {
    if errno != libc::EPERM && errno != libc::EACCES {
        return None;
    }
    let found = blockers(Path::new("/proc"), Path::new("/"));
    found
        .iter()
        .find(|b| matches!(b, Blocker::AppArmorRestrict | Blocker::Container(_)))
        .map(|b| format!("{}{LANDLOCK_ONLY_HINT}", hint(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn fake_proc(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, content) in files {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        dir
    }

    #[test]
    fn finds_each_sysctl() {
        let p = fake_proc(&[
            (UNPRIV_CLONE, "0\n"),
            (MAX_USERNS, "0\n"),
            (APPARMOR_RESTRICT, "1\n"),
            ("1/cgroup", "0::/\n"),
        ]);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            blockers(p.path(), empty.path()),
            vec![
                Blocker::UnprivilegedUsernsClone,
                Blocker::MaxUserNamespaces(0),
                Blocker::AppArmorRestrict
            ]
        );
    }

    #[test]
    fn permissive_host_has_no_blocker() {
        let p = fake_proc(&[
            (UNPRIV_CLONE, "1\n"),
            (MAX_USERNS, "63000\n"),
            (APPARMOR_RESTRICT, "0\n"),
            ("1/cgroup", "0::/init.scope\n"),
        ]);
        let empty = tempfile::tempdir().unwrap();
        assert!(blockers(p.path(), empty.path()).is_empty());
    }

    #[test]
    fn detects_containers() {
        let p = fake_proc(&[("1/cgroup", "0::/kubepods/besteffort/pod1\n")]);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            container_runtime(p.path(), empty.path()).as_deref(),
            Some("kubepods")
        );
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join(".dockerenv"), "").unwrap();
        assert_eq!(
            container_runtime(p.path(), root.path()).as_deref(),
            Some("docker")
        );
    }

    #[test]
    fn hints_name_their_cause() {
        assert!(hint(&Blocker::MaxUserNamespaces(0)).contains("user.max_user_namespaces"));
        assert!(hint(&Blocker::UnprivilegedUsernsClone).contains("unprivileged_userns_clone"));
        assert!(hint(&Blocker::AppArmorRestrict).contains("/etc/apparmor.d/qwrap"));
        assert!(hint(&Blocker::Container("docker".into())).contains("docker"));
    }
}
