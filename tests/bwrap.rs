//! Differential tests: qwrap as `bwrap` against Debian's bubblewrap, with the
//! argument vectors Qwen Code, sandbox-runtime, Codex and Gemini CLI use and
//! with each supported option. The view from inside (ids, cwd, environment,
//! /dev, what is writable, capabilities, interfaces, hostname, PID
//! namespace, mount points, exit status) and the --info-fd/--json-status-fd
//! output must be the same. As root and as an unprivileged uid.

mod common;

use common::bwrap_diff::*;

#[test]
fn qwen_code_backend() {
    compare(
        "qwen",
        &with_info(&[
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--die-with-parent",
            "--bind",
            "WS",
            "WS",
            "--chdir",
            "WS",
        ]),
    );
    compare(
        "qwen closed",
        &with_info(&[
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--die-with-parent",
            "--unshare-net",
            "--bind",
            "WS",
            "WS",
            "--ro-bind",
            "WS/sub",
            "WS/sub",
            "--chdir",
            "WS",
        ]),
    );
}

#[test]
fn qwen_per_tool_sandbox() {
    compare(
        "qwen per-tool",
        &with_info(&[
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--die-with-parent",
            "--tmpfs",
            "/tmp",
            "--bind",
            "WS",
            "WS",
        ]),
    );
}

#[test]
fn sandbox_runtime() {
    compare(
        "sandbox-runtime",
        &with_info(&[
            "--new-session",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--bind",
            "WS",
            "WS",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            "/dev/null",
            "WS/secret",
            "--dev",
            "/dev",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--unshare-net",
        ]),
    );
}

#[test]
fn codex() {
    compare(
        "codex",
        &with_info(&[
            "--new-session",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--bind",
            "WS",
            "WS",
            "--dev-bind",
            "/dev/null",
            "/dev/null",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--unshare-net",
            "--unshare-user",
            "--perms",
            "0700",
            "--tmpfs",
            "/var/tmp",
        ]),
    );
}

#[test]
fn gemini_cli() {
    compare(
        "gemini",
        &with_info(&[
            "--unshare-all",
            "--new-session",
            "--die-with-parent",
            "--share-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--bind",
            "WS",
            "WS",
        ]),
    );
}

#[test]
fn options_one_by_one() {
    let base = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--bind",
        "WS",
        "WS",
        "--chdir",
        "WS",
    ];
    let cases: [&[&str]; 15] = [
        &["--cap-drop", "ALL"],
        &["--cap-drop", "CAP_NET_RAW", "--cap-drop", "cap_sys_admin"],
        &[
            "--tmpfs",
            "/mnt",
            "--dev-bind-try",
            "/dev/null",
            "/mnt/null",
            "--ro-bind-try",
            "/nonexistent/qwrap",
            "/opt",
        ],
        &[
            "--setenv",
            "QWRAP_A",
            "1",
            "--unsetenv",
            "HOME",
            "--setenv",
            "QWRAP_B",
            "2",
        ],
        &["--clearenv", "--setenv", "PATH", "/usr/bin:/bin"],
        &["--unshare-uts", "--hostname", "sandbox-host"],
        &["--unshare-user", "--uid", "0", "--gid", "0"],
        &["--unshare-ipc", "--unshare-cgroup"],
        &[
            "--tmpfs",
            "/tmp",
            "--dir",
            "/tmp/a/b",
            "--symlink",
            "/tmp/a",
            "/tmp/link",
            "--chmod",
            "0700",
            "/tmp/a",
        ],
        &["--tmpfs", "/mnt", "--remount-ro", "/mnt"],
        &[
            "--bind-try",
            "/nonexistent/qwrap",
            "/mnt/x",
            "--ro-bind-try",
            "/usr",
            "/opt",
        ],
        &["--unshare-pid", "--as-pid-1"],
        &["--unshare-pid", "--proc", "/proc"],
        &["--proc", "/proc"],
        &[
            "--size", "65536", "--tmpfs", "/tmp", "--perms", "0750", "--tmpfs", "/mnt",
        ],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let mut args = with_info(&base);
        args.extend_from_slice(extra);
        compare(&format!("option case {i} {extra:?}"), &args);
    }
}
