//! Embeds the commit qwrap is built from (for `qwrap receipt`; a packager may
//! set QWRAP_RELEASE_COMMIT; outside a git checkout it is "unknown"), and
//! compiles the seccomp filter to BPF once, so that start-up does not.

use std::process::Command;

#[path = "src/exec/seccomp_filter.rs"]
mod seccomp_filter;

fn seccomp_program() {
    println!("cargo:rerun-if-changed=src/exec/seccomp_filter.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets the target arch");
    let arch: seccompiler::TargetArch = arch.as_str().try_into().expect("a seccompiler target arch");
    let mut src = String::new();
    for (name, filter) in [
        ("PROGRAM", seccomp_filter::filter(arch)),
        ("OPENAT2_PROGRAM", seccomp_filter::openat2_filter(arch)),
    ] {
        let prog: seccompiler::BpfProgram = filter
            .expect("the filter's rules are valid")
            .try_into()
            .expect("the filter compiles");
        let items: Vec<String> = prog
            .iter()
            .map(|f| format!("({}, {}, {}, {})", f.code, f.jt, f.jf, f.k))
            .collect();
        src += &format!(
            "/// A compiled seccomp filter.\npub(super) static {name}: [(u16, u8, u8, u32); {}] = [{}];\n",
            items.len(),
            items.join(", ")
        );
    }
    let out =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("seccomp_bpf.rs");
    std::fs::write(out, src).expect("OUT_DIR is writable");
}

fn main() {
    seccomp_program();
    println!("cargo:rerun-if-env-changed=QWRAP_RELEASE_COMMIT");
    let commit = std::env::var("QWRAP_RELEASE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            println!("cargo:rerun-if-changed=.git/HEAD");
            if let Ok(head) = std::fs::read_to_string(".git/HEAD")
                && let Some(r) = head.trim().strip_prefix("ref: ")
            {
                println!("cargo:rerun-if-changed=.git/{r}");
            }
            let out = Command::new("git").args(["rev-parse", "HEAD"]).output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .filter(|c| c.len() == 40)
        });
    println!(
        "cargo:rustc-env=QWRAP_RELEASE_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
}
