//! The verify report as text.

use crate::verify::{Outcome, Report};
use std::fmt::Write as _;

/// The verify report as text: PASS/FAIL/SKIP lines, then the verdict.
pub fn verify_text(r: &Report) -> String {
    let mut o = String::new();
    for c in &r.checks {
        match c.outcome {
            Outcome::Pass => {
                let _ = writeln!(o, "PASS {}", c.title);
            }
            Outcome::Skip => {
                let _ = writeln!(o, "SKIP {}: {}", c.title, c.got.as_deref().unwrap_or(""));
            }
            Outcome::NotProvided => {
                let _ = writeln!(
                    o,
                    "N/A  {}: not provided by this mode: {}",
                    c.title,
                    c.got.as_deref().unwrap_or("")
                );
            }
            Outcome::Fail | Outcome::Accepted => {
                let word = if c.outcome == Outcome::Fail {
                    "FAIL"
                } else {
                    "ACCEPTED"
                };
                let _ = writeln!(o, "{word} {}", c.title);
                let _ = writeln!(o, "  expected: {}", c.expected.as_deref().unwrap_or(""));
                let _ = writeln!(o, "  got: {}", c.got.as_deref().unwrap_or(""));
                if c.outcome == Outcome::Accepted {
                    let _ = writeln!(o, "  accepted: accept_degraded names {:?}", c.name);
                } else {
                    let _ = writeln!(
                        o,
                        "  to accept it for a rollout: --accept-degraded {} (config: accept_degraded = [\"{}\"])",
                        c.name, c.name
                    );
                }
            }
        }
    }
    if r.isolation == "landlock" {
        let _ = writeln!(
            o,
            "Isolation: Landlock and seccomp only (no namespaces): the checks hold what that mode claims"
        );
    }
    if r.verified && !r.accepted.is_empty() {
        let _ = writeln!(
            o,
            "Confinement verified ({} checks), with accepted exceptions: {}.",
            r.passed,
            r.accepted.join(", ")
        );
    } else if r.verified {
        let _ = writeln!(o, "Confinement verified ({} checks).", r.passed);
    } else {
        let _ = writeln!(
            o,
            "Confinement NOT verified: {} of {} checks failed.",
            r.failed,
            r.passed + r.failed
        );
    }
    o
}
