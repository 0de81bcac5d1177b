//! Embeds the commit qwrap is built from, for `qwrap receipt`. A packager may
//! set QWRAP_RELEASE_COMMIT; outside a git checkout it is "unknown".

use std::process::Command;

fn main() {
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
