//! Which isolation a run gets: decided once, here, from the policy and the
//! host's probe; everything after (the layers, the steps, the reports,
//! verify's checks) matches on the kind.

use crate::host::HostFacts;
use crate::policy::{IsolationMode, Policy};
use serde::Serialize;

/// The isolation of one run, with what chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// User, mount and IPC namespaces (and network, PID where asked).
    Namespaces,
    /// Landlock and seccomp alone over the host's own view
    /// (landlock_mode.rs).
    LandlockOnly {
        /// What chose it: the setting, or the host's refusal of namespaces.
        why: String,
        /// Asked for by name (`--isolation landlock`), not fallen back to.
        asked: bool,
    },
}

impl Isolation {
    /// The one place the setting meets the host: `auto` falls back to
    /// Landlock alone only where the probe found namespaces refused.
    pub fn decide(policy: &Policy, host: &HostFacts) -> Isolation {
        let s = &policy.settings.isolation;
        match s.value {
            IsolationMode::Namespaces => Isolation::Namespaces,
            IsolationMode::Landlock => Isolation::LandlockOnly {
                why: format!("isolation = landlock, from {}", s.source),
                asked: true,
            },
            IsolationMode::Auto => match &host.landlock_only.namespaces {
                Some(Err(refused)) => Isolation::LandlockOnly {
                    why: format!(
                        "isolation auto (from {}): namespaces are refused here ({refused})",
                        s.source
                    ),
                    asked: false,
                },
                _ => Isolation::Namespaces,
            },
        }
    }

    /// No namespace and no mount: the host's view, held by Landlock.
    pub fn landlock_only(&self) -> bool {
        matches!(self, Isolation::LandlockOnly { .. })
    }
}

/// Reports keep their field: `landlock_only`, true or false.
impl Serialize for Isolation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(self.landlock_only())
    }
}
