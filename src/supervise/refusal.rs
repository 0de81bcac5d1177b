//! A refusal the sandbox made: what the warden saw (`--explain`,
//! `--denials`), the egress proxy refused or a limit stopped, in the words
//! explain_why.rs gives it and explain.rs records.

use std::path::Path;

/// What kind of refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A write outside the writable roots (EROFS; EACCES without namespaces).
    Write,
    /// A read of a hidden path, or of a host path absent from the view.
    Read,
    /// A connect to a masked host socket.
    Socket,
    /// A call the filter (or the warden, for a call aimed at a process
    /// outside) refuses.
    Call,
    /// A destination the egress proxy refused.
    Egress,
    /// A resource limit the command reached (`Refusal::limit`).
    Limit,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Write => "write",
            Kind::Read => "read",
            Kind::Socket => "socket",
            Kind::Call => "call",
            Kind::Egress => "egress",
            Kind::Limit => "limit",
        }
    }

    /// Whether its target is a path (the JSON's `path`) or another thing
    /// (`target`).
    pub(super) fn is_path(self) -> bool {
        matches!(self, Kind::Write | Kind::Read | Kind::Socket)
    }
}

/// One refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub kind: Kind,
    /// The call (`openat`, `connect`, `keyctl`), or the proxy's protocol.
    pub op: String,
    /// The path, call or destination.
    pub target: String,
    /// What the command got (None: no errno, as a proxy's 403).
    pub errno: Option<i32>,
    pub reason: String,
    /// The option that would allow it; None where nothing does.
    pub option: Option<String>,
}

impl Refusal {
    /// A resource limit the command reached (limits.rs): `limit` names it
    /// and its value (`time 1s`, `processes 30`), `option` the setting
    /// that raises it.
    pub(crate) fn limit(
        limit: &str,
        op: &str,
        errno: Option<i32>,
        reason: &str,
        option: Option<String>,
    ) -> Refusal {
        Refusal {
            kind: Kind::Limit,
            op: op.into(),
            target: limit.into(),
            errno,
            reason: reason.into(),
            option,
        }
    }
}

/// A path as a refusal names it.
pub(super) fn show(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
