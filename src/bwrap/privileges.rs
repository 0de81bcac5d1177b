//! What the command keeps in bwrap mode: its capabilities, as bubblewrap
//! leaves them, and qwrap's own layers when `QWRAP_BWRAP_LAYERS=1` or
//! `QWRAP_LANDLOCK=require` asks for them.

use super::args::{self, Config};
use super::{Context, LowerError};
use crate::plan::DropCapabilities;
use crate::plan::filter_rules::Profile;
use crate::plan::{Ambient, Filter, LANDLOCK_SCOPE_ABI, LandlockRules, Step};
use crate::policy::LandlockMode;
use std::path::PathBuf;

const CAP_SYS_ADMIN: u32 = 21;

/// As bubblewrap: the command keeps what the caller holds when the caller is
/// root, nothing otherwise, then `--cap-add`/`--cap-drop` in order. In a user
/// namespace of the sandbox's own (made or joined: `userns`) the bounding
/// set is cut to the same set; real root without one keeps its bounding set.
/// `sandbox_uid`: the uid the command runs as inside.
pub(super) fn capabilities(
    c: &Config,
    ctx: &Context,
    sandbox_uid: u32,
    userns: bool,
) -> Result<Vec<Step>, LowerError> {
    let all: Vec<u32> = (0..args::CAPABILITIES.len() as u32).collect();
    let mut kept: Vec<u32> = if ctx.uid == 0 {
        all.iter()
            .copied()
            .filter(|n| ctx.caps_permitted & (1 << n) != 0)
            .collect()
    } else {
        Vec::new()
    };
    for (add, name) in &c.cap_ops {
        match (add, name.as_str()) {
            (true, "ALL") => kept.clone_from(&all),
            (false, "ALL") => kept.clear(),
            (true, n) => kept.extend(args::cap_number(n).filter(|n| !kept.contains(n))),
            (false, n) => kept.retain(|k| Some(*k) != args::cap_number(n)),
        }
    }
    let mut s = Vec::new();
    // bubblewrap's ambient rule: with --cap-add/--cap-drop what is kept is
    // made inheritable and ambient; a root caller's caps are otherwise
    // offered to the ambient set, where its inheritable set lets them in.
    let ops = !c.cap_ops.is_empty();
    let ambient = match (ops, kept.is_empty(), ctx.uid == 0) {
        (_, true, _) => Ambient::Lower,
        (true, false, _) => Ambient::Raise,
        (false, false, true) => Ambient::Offer,
        (false, false, false) => Ambient::Lower,
    };
    if userns {
        s.push(Step::DropCapabilities(DropCapabilities {
            keep: kept.clone(),
            bounding: true,
            ambient,
        }));
    } else {
        // Real root without a user namespace: the bounding set loses only
        // what the caller does not hold (bubblewrap leaves it alone).
        let held: Vec<u32> = all
            .iter()
            .copied()
            .filter(|n| ctx.caps_permitted & (1 << n) != 0)
            .collect();
        let empties = c.cap_ops.iter().any(|(add, n)| !add && n == "ALL");
        if held.len() < all.len() && !empties {
            s.push(Step::DropCapabilities(DropCapabilities {
                keep: held,
                bounding: true,
                ambient: Ambient::Lower,
            }));
        }
        s.push(Step::DropCapabilities(DropCapabilities {
            keep: kept.clone(),
            bounding: false,
            ambient,
        }));
    }
    // On an initramfs root the sandbox's root is moved over rootfs, not
    // pivoted: unmounting it would show the host's whole initramfs.
    // The command holds what is kept when it runs as uid 0 or keeps it
    // ambient; otherwise its exec empties the sets.
    let command_keeps = sandbox_uid == 0 || ambient == Ambient::Raise;
    if ctx.initramfs_root && userns && command_keeps && kept.contains(&CAP_SYS_ADMIN) {
        return Err(LowerError::InitramfsKeepsSysAdmin);
    }
    Ok(s)
}

/// qwrap's own layers: Landlock write rules and scopes, and the filter.
pub(super) fn layers(
    ctx: &Context,
    writable: Vec<PathBuf>,
) -> Result<(Option<LandlockRules>, Filter), LowerError> {
    let require = ctx.landlock == LandlockMode::Require;
    if !ctx.layers && !require {
        return Ok((None, Filter::None));
    }
    if require && ctx.landlock_abi < LANDLOCK_SCOPE_ABI {
        return Err(LowerError::LandlockRequired {
            shortfall: shortfall(ctx.landlock_abi),
        });
    }
    let landlock = (ctx.landlock != LandlockMode::Off && ctx.landlock_abi > 0).then_some(LandlockRules {
        abi: ctx.landlock_abi,
        // bubblewrap's behaviour: FIFOs wherever writes go.
        fifo: writable.clone(),
        paths: writable,
        scoped: ctx.landlock_abi >= LANDLOCK_SCOPE_ABI,
        filesystem: true,
    });
    Ok((landlock, Filter::Seccomp(Profile::PLAIN)))
}

/// The line `run` would print when best-effort gives less than asked.
pub fn degraded(ctx: &Context) -> Option<String> {
    let on = ctx.layers && ctx.landlock == LandlockMode::BestEffort;
    (on && ctx.landlock_abi < LANDLOCK_SCOPE_ABI)
        .then(|| format!("qwrap: degraded: {}", shortfall(ctx.landlock_abi)))
}

fn shortfall(abi: u32) -> String {
    if abi == 0 {
        "this kernel has no Landlock (Linux >= 5.13 with landlock among its LSMs)".into()
    } else {
        format!(
            "Landlock scopes (signals, abstract sockets) need Landlock ABI {LANDLOCK_SCOPE_ABI} (Linux >= 6.12); this kernel gives ABI {abi}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bwrap::args::Parsed;
    use std::ffi::OsString;

    fn config(a: &[&str]) -> Config {
        match args::parse(a.iter().map(OsString::from).collect()).unwrap() {
            Parsed::Run(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    fn ctx(abi: u32, layers: bool, landlock: LandlockMode) -> Context {
        Context {
            uid: 1000,
            gid: 1000,
            cwd: None,
            home: None,
            console: None,
            landlock_abi: abi,
            layers,
            landlock,
            initramfs_root: false,
            mount_api: crate::host::MountApi::New,
            caps_permitted: 0,
            explain: false,
        }
    }

    #[test]
    fn require_turns_the_layers_on_and_fails_closed_without_scopes() {
        let (landlock, filter) = layers(&ctx(7, false, LandlockMode::Require), vec![]).unwrap();
        assert!(matches!(
            landlock,
            Some(LandlockRules {
                abi: 7,
                scoped: true,
                ..
            })
        ));
        assert_eq!(filter, Filter::Seccomp(Profile::PLAIN));
        for abi in [0, 2, 5] {
            let e = layers(&ctx(abi, true, LandlockMode::Require), vec![]).unwrap_err();
            assert!(matches!(e, LowerError::LandlockRequired { .. }), "{e}");
            assert!(e.to_string().starts_with("QWRAP_LANDLOCK=require: "), "{e}");
        }
    }

    #[test]
    fn best_effort_degrades_and_says_so_off_leaves_landlock_out() {
        assert_eq!(
            layers(&ctx(5, false, LandlockMode::BestEffort), vec![]).unwrap(),
            (None, Filter::None)
        );
        assert_eq!(degraded(&ctx(5, false, LandlockMode::BestEffort)), None);
        let (landlock, _) = layers(&ctx(5, true, LandlockMode::BestEffort), vec![]).unwrap();
        assert!(matches!(
            landlock,
            Some(LandlockRules {
                abi: 5,
                scoped: false,
                ..
            })
        ));
        assert!(
            degraded(&ctx(5, true, LandlockMode::BestEffort))
                .unwrap()
                .contains("ABI 5")
        );
        assert_eq!(degraded(&ctx(7, true, LandlockMode::BestEffort)), None);
        assert_eq!(
            layers(&ctx(7, true, LandlockMode::Off), vec![]).unwrap(),
            (None, Filter::Seccomp(Profile::PLAIN))
        );
    }

    #[test]
    fn an_initramfs_root_refuses_a_sandbox_keeping_sys_admin() {
        let mut cx = ctx(7, false, LandlockMode::BestEffort);
        cx.initramfs_root = true;
        cx.caps_permitted = u64::MAX;
        let keeps = config(&["--unshare-user", "--uid", "0", "--cap-add", "ALL", "true"]);
        assert_eq!(
            capabilities(&keeps, &cx, 0, true).unwrap_err(),
            LowerError::InitramfsKeepsSysAdmin
        );
        let added = config(&[
            "--unshare-user",
            "--uid",
            "0",
            "--cap-add",
            "ALL",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SYS_ADMIN",
            "true",
        ]);
        assert!(capabilities(&added, &cx, 0, true).is_err());
        for ok in [
            &[
                "--unshare-user",
                "--uid",
                "0",
                "--cap-drop",
                "CAP_SYS_ADMIN",
                "true",
            ][..],
            &["--unshare-user", "--uid", "0", "--cap-drop", "ALL", "true"],
            // An unprivileged caller keeps nothing unless it asks.
            &["--unshare-user", "--uid", "0", "true"],
        ] {
            assert!(capabilities(&config(ok), &cx, 0, true).is_ok(), "{ok:?}");
        }
        // An unprivileged sandbox keeps nothing; real root without a user
        // namespace holds the host's capabilities whatever the root is.
        assert!(capabilities(&config(&["true"]), &cx, 1000, true).is_ok());
        assert!(capabilities(&config(&["true"]), &cx, 0, false).is_ok());
        // A root caller keeps its capabilities, but only a sandbox uid 0
        // (or one that asked for them) still holds them after exec.
        cx.uid = 0;
        let plain = config(&["--unshare-user", "--uid", "0", "true"]);
        assert!(capabilities(&plain, &cx, 0, true).is_err());
        assert!(capabilities(&plain, &cx, 1001, true).is_ok());
        assert!(capabilities(&keeps, &cx, 1001, true).is_err());
        cx.initramfs_root = false;
        assert!(capabilities(&keeps, &cx, 0, true).is_ok());
    }
}
