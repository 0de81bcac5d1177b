//! No setuid or setgid file by any route, as root and unprivileged: an
//! io_uring OPENAT with mode 06755 (a second syscall table that seccomp
//! cannot see) leaves nothing on the host; and root's sandbox cannot write
//! extended attributes (a file capability written from a nested user
//! namespace would hold on the host).

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn helper(f: &Fixture) -> Option<std::path::PathBuf> {
    let bin = f.path().join("uring_setuid");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helpers/uring_setuid.c");
    let built = std::process::Command::new("cc")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    built.then(|| {
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    })
}

#[test]
fn io_uring_cannot_create_a_setuid_file() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let Some(bin) = helper(&f) else {
            eprintln!("SKIP io_uring: no C compiler to build the helper");
            return;
        };
        for api in APIS {
            let name = format!("suid-{api}");
            let o = f.run_sh(api, &[], &format!("{} {name}", bin.display()));
            let out = ok(&o);
            assert!(
                out.contains("setup refused Function not implemented"),
                "{who:?} {api}: {out}"
            );
            // The host side: no file, or one without the bits.
            if let Ok(m) = std::fs::metadata(f.ws().join(&name)) {
                assert_eq!(m.permissions().mode() & 0o6000, 0, "{who:?} {api}: {out}");
            }
        }
    }
}

#[test]
fn roots_sandbox_writes_no_extended_attribute() {
    let script = "import os\nopen('x','w').close()\ntry:\n    os.setxattr('x', 'user.qwrap', b'1'); print('set')\nexcept OSError as e:\n    print('refused', e.errno)";
    for who in Who::all() {
        let f = Fixture::new(who);
        for api in APIS {
            let o = f
                .qwrap(&["run", "--", "python3", "-c", script])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            let out = ok(&o);
            let host = xattr_on_host(&f.ws().join("x"));
            if who == Who::Root {
                assert_eq!(out.trim(), "refused 1", "{api}");
                assert!(!host, "{api}: the attribute reached the host");
            } else {
                // An unprivileged user's attributes (and file capabilities,
                // rooted at its own uid) grant nothing on the host.
                assert!(
                    out.trim() == "set" || out.starts_with("refused 95"),
                    "{api}: {out}"
                );
            }
        }
    }
}

fn xattr_on_host(p: &Path) -> bool {
    let o = std::process::Command::new("python3")
        .args(["-c", "import os,sys\nprint(os.listxattr(sys.argv[1]))"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).contains("user.qwrap")
}
