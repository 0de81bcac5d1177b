//! The choices every part of a run's spec depends on, each made once from
//! the policy, the host and the layers as assessed, and carried from there.

use super::{LANDLOCK_SCOPE_ABI, Layers};
use crate::host::HostFacts;
use crate::policy::{NetworkMode, Policy};

/// One run's decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decisions {
    /// `--pid private`: a PID namespace (and PID 1) of the command's own.
    pub private_pid: bool,
    /// Landlock scopes the command's signals and abstract sockets (its
    /// ABI in force is 6 or more); else the warden judges signals.
    pub scoped: bool,
    /// `--keep-background`: what the command leaves running outlives it.
    pub keep_background: bool,
    /// `--network proxied`: the warden serves the proxy.
    pub proxied: bool,
    /// The caller is root (capabilities to drop, rules that differ).
    pub root: bool,
    /// Refusals are said (`--explain`) or recorded (`--denials`).
    pub explain: bool,
}

impl Decisions {
    /// Decided from what `assess` found: nothing here is recomputed later.
    pub fn of(policy: &Policy, host: &HostFacts, layers: &Layers) -> Decisions {
        Decisions {
            private_pid: layers.private_pid,
            scoped: layers.landlock_abi >= LANDLOCK_SCOPE_ABI,
            keep_background: policy.settings.keep_background.value,
            proxied: policy.settings.network.value == NetworkMode::Proxied,
            root: host.uid == 0,
            explain: policy.settings.explain.value || policy.denials.is_some(),
        }
    }

    /// A reaper that finds the command's leftovers: where signals are
    /// scoped (it needs the scope to tell them), leftovers are not kept,
    /// and no PID 1 of the sandbox's own kills them anyway.
    pub fn reaper(&self) -> bool {
        self.scoped && !self.keep_background && !self.private_pid
    }
}

#[cfg(test)]
mod tests {
    use super::Decisions;

    fn d(scoped: bool, keep_background: bool, private_pid: bool) -> Decisions {
        Decisions {
            private_pid,
            scoped,
            keep_background,
            proxied: false,
            root: false,
            explain: false,
        }
    }

    #[test]
    fn a_reaper_only_where_signals_are_scoped_and_nothing_else_ends_the_leftovers() {
        assert!(d(true, false, false).reaper());
        assert!(
            !d(false, false, false).reaper(),
            "unscoped: it could not tell them"
        );
        assert!(!d(true, true, false).reaper(), "--keep-background keeps them");
        assert!(!d(true, false, true).reaper(), "PID 1 of their own ends them");
    }
}
