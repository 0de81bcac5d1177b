//! Embeds the commit qwrap is built from (for `qwrap receipt`; a packager may
//! set QWRAP_RELEASE_COMMIT; outside a git checkout it is "unknown"),
//! compiles the seccomp filter to BPF once, so that start-up does not, and
//! writes the man pages and shell completions from the clap definitions in
//! src/cli.rs into OUT_DIR (`make install` and `make deb` take them from
//! there, through the link target/<profile>/qwrap-generated).

use std::process::Command;

#[allow(dead_code)]
#[path = "src/plan/filter_rules.rs"]
mod filter_rules;

#[path = "src/plan/filter_landlock.rs"]
mod filter_landlock;

#[path = "src/plan/filter_profile.rs"]
mod filter_profile;

#[allow(dead_code)]
#[path = "src/cli.rs"]
mod cli;

/// What src/cli.rs takes from the library, which a build script cannot link.
mod qwrap {
    pub mod verify {
        pub mod probe {
            include!("src/verify/probe_args.rs");
        }
    }
    pub mod policy {
        pub use crate::modes::*;
        pub use cli_settings::{CliSettings, RunSwitches};
        #[allow(dead_code)]
        mod cli_settings {
            include!("src/policy/cli_settings.rs");
        }
    }
}

#[allow(dead_code)]
#[path = "src/policy/modes.rs"]
mod modes;

/// qwrap(1), qwrap-SUBCOMMAND(1) for each visible subcommand, and the
/// bash, zsh and fish completions.
fn man_pages_and_completions() {
    use clap::CommandFactory;
    use clap_complete::Shell;
    println!("cargo:rerun-if-changed=src/cli.rs");
    println!("cargo:rerun-if-changed=src/verify/probe_args.rs");
    println!("cargo:rerun-if-changed=src/policy/modes.rs");
    println!("cargo:rerun-if-changed=src/policy/cli_settings.rs");
    println!("cargo:rerun-if-changed=src/policy/settings_list.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let man = out.join("man");
    let completions = out.join("completions");
    for d in [&man, &completions] {
        std::fs::create_dir_all(d).expect("OUT_DIR is writable");
    }
    let cmd = cli::Cli::command().version(env!("CARGO_PKG_VERSION"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .expect("man page renders");
    std::fs::write(man.join("qwrap.1"), no_hyphenation(page)).expect("OUT_DIR is writable");
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "bwrap")
    {
        let name = format!("qwrap-{}", sub.get_name());
        // clap takes 'static names; a build script may leak a few.
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        let sub = sub.clone().name(leaked).version(env!("CARGO_PKG_VERSION"));
        let mut page = Vec::new();
        clap_mangen::Man::new(sub)
            .render(&mut page)
            .expect("man page renders");
        std::fs::write(man.join(format!("{name}.1")), no_hyphenation(page)).expect("OUT_DIR is writable");
    }
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut c = cmd.clone();
        clap_complete::generate_to(shell, &mut c, "qwrap", &completions).expect("completions render");
    }
    // Where the Makefile finds them: target/<profile>/qwrap-generated.
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let link = profile_dir.join("qwrap-generated");
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink(&out, &link);
    }
}

/// A man page that never breaks a word at a line's end ("direc-tory"):
/// paths and option names must stay whole. `.nh` after the title line.
fn no_hyphenation(page: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&page);
    let mut out = String::with_capacity(text.len() + 4);
    let mut done = false;
    for line in text.split_inclusive('\n') {
        out.push_str(line);
        if !done && line.starts_with(".TH ") {
            out.push_str(".nh\n");
            done = true;
        }
    }
    out.into_bytes()
}

fn seccomp_program() {
    use filter_profile::rules;
    use filter_rules::{Arch, ENOSYS, Insn, Profile, RET_USER_NOTIF, compile_watch, compile_with};
    println!("cargo:rerun-if-changed=src/plan/filter_rules.rs");
    println!("cargo:rerun-if-changed=src/plan/syscalls.tsv");
    println!("cargo:rerun-if-changed=src/plan/filter_landlock.rs");
    println!("cargo:rerun-if-changed=src/plan/filter_profile.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets the target arch");
    let arch = Arch::from_target(&arch).expect("a supported target arch");
    let mut src = String::new();
    let mut emit_program = |name: &str, program: Vec<Insn>| {
        let items: Vec<String> = program
            .iter()
            .map(|(c, t, f, k)| format!("({c}, {t}, {f}, {k})"))
            .collect();
        src += &format!(
            "/// A compiled seccomp filter.\npub(super) static {name}: [(u16, u8, u8, u32); {}] = [{}];\n",
            items.len(),
            items.join(", ")
        );
    };
    let mut emit = |name: &str, rules: &[filter_rules::Rules], unknown: u32| {
        emit_program(name, compile_with(arch, rules, unknown));
    };
    let mut lookup = String::new();
    for (name, profile) in Profile::all() {
        // `--explain`: numbers past the table go to the warden too.
        let unknown = if profile.explain { RET_USER_NOTIF } else { ENOSYS };
        emit(&name, &rules(arch, profile), unknown);
        let Profile {
            warden,
            unscoped,
            root,
            landlock_only,
            explain,
        } = profile;
        lookup += &format!(
            "        ({warden}, {unscoped}, {root}, {landlock_only}, {explain}) => Some(&{name}),\n"
        );
    }
    for (name, closed) in [
        ("LANDLOCK_ONLY_OPEN_PROGRAM", false),
        ("LANDLOCK_ONLY_CLOSED_PROGRAM", true),
    ] {
        emit(name, &filter_landlock::landlock_only_rules(arch, closed), ENOSYS);
    }
    emit("KEYRING_PROGRAM", &filter_landlock::keyring_rules(arch), ENOSYS);
    // bwrap mode's QWRAP_EXPLAIN without its layers: the calls that can
    // be refused handed to the monitor, none refused.
    let watched: Vec<filter_rules::Rules> = filter_rules::table()
        .into_iter()
        .filter(|s| s.nr_on(arch) >= 0 && filter_profile::EXPLAINED_CALLS.contains(&s.name))
        .map(|s| filter_rules::Rules {
            nr: s.nr_on(arch),
            name: s.name,
            cases: vec![(vec![], RET_USER_NOTIF)],
        })
        .collect();
    emit_program("WATCH_PROGRAM", compile_watch(arch, &watched));
    // The one way from a profile to its program: no table kept by hand.
    src += &format!(
        "/// The compiled program of a profile (None: one build.rs did not compile).\n\
         pub(super) fn compiled(p: Profile) -> Option<&'static [(u16, u8, u8, u32)]> {{\n\
         \x20   match (p.warden, p.unscoped, p.root, p.landlock_only, p.explain) {{\n{lookup}        _ => None,\n    }}\n}}\n"
    );
    let out =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("seccomp_bpf.rs");
    std::fs::write(out, src).expect("OUT_DIR is writable");
}

fn main() {
    seccomp_program();
    man_pages_and_completions();
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
