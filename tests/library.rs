//! The library's surface: a sandbox described with the builder is the one
//! the command line describes with the same options.

use qwrap::sandbox::{NetworkMode, Sandbox};
use std::process::Command;

/// Each step's first call: what stays the same between two plans of one
/// policy (a run's own names differ).
fn calls(plan: &str) -> Vec<String> {
    plan.lines()
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .unwrap_or("")
                .split('(')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn the_builder_plans_what_the_command_line_plans() {
    let ws = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(["true"])
        .workspace(ws.path())
        .network(NetworkMode::Closed)
        .time_limit("10m");
    let plan = sandbox.plan().expect("a plan");
    let cli = Command::new(env!("CARGO_BIN_EXE_qwrap"))
        .args([
            "plan",
            "--network",
            "closed",
            "--time-limit",
            "10m",
            "--workspace",
        ])
        .arg(ws.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    assert_eq!(calls(&plan), calls(&String::from_utf8_lossy(&cli.stdout)));
    assert!(plan.contains("CLONE_NEWNET"), "{plan}");
    let json: serde_json::Value = serde_json::from_str(&sandbox.plan_json().unwrap()).unwrap();
    assert!(json["steps"].as_array().is_some_and(|s| !s.is_empty()));
    let report: serde_json::Value = serde_json::from_str(&sandbox.inspect().unwrap()).unwrap();
    assert_eq!(
        report["settings"].as_array().map(|s| s.is_empty()),
        Some(false),
        "{report}"
    );
}

#[test]
fn a_setting_the_command_line_refuses_the_builder_refuses() {
    let e = Sandbox::new(["true"]).time_limit("soon").plan().unwrap_err();
    assert_eq!(e.code, 2, "{e}");
    assert!(e.message.contains("soon"), "{e}");
}
