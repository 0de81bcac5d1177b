//! `qwrap plan` is what `run` executes: the executor's trace of the steps it
//! ran must equal the printed plan, line for line, on every path.

mod common;

use common::*;

#[test]
fn executor_runs_exactly_the_planned_steps() {
    for who in Who::all() {
        for api in APIS {
            for net in ["open", "closed"] {
                let f = Fixture::new(who);
                f.mkdir("ws/secret");
                let opts = ["--network", net, "--ro", "secret", "--", "true"];
                let plan = f
                    .qwrap(&["plan"])
                    .args(opts)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                let planned: Vec<String> = ok(&plan)
                    .lines()
                    .map(|l| l.trim_start().split_once("  ").unwrap().1.to_string())
                    .collect();
                let run = f
                    .qwrap(&["run"])
                    .args(opts)
                    .env("QWRAP_MOUNT_API", api)
                    .env("QWRAP_TRACE", "1")
                    .output()
                    .unwrap();
                ok(&run);
                let traced: Vec<String> = stderr(&run)
                    .lines()
                    .filter_map(|l| l.strip_prefix("qwrap: step "))
                    .map(|l| l.split_once(": ").unwrap().1.to_string())
                    .collect();
                assert_eq!(planned, traced, "{who:?} {api} {net}");
                assert!(planned.len() > 20);
            }
        }
    }
}

#[test]
fn plan_json_lists_the_same_steps() {
    let f = Fixture::new(Who::all()[0]);
    let text = ok(&f.qwrap(&["plan", "--", "true"]).output().unwrap());
    let json = ok(&f.qwrap(&["plan", "--json", "--", "true"]).output().unwrap());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let calls: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["call"].as_str().unwrap())
        .collect();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start().split_once("  ").unwrap().1)
        .collect();
    assert_eq!(calls, lines);
    assert_eq!(v["mount_api"], "new");
    // The caches' directories and slot, the warden, then the namespaces.
    assert_eq!(v["steps"][0]["step"]["op"], "prepare_caches");
    assert_eq!(v["steps"][1]["step"]["op"], "start_warden");
    assert_eq!(v["steps"][2]["step"]["op"], "unshare");
    assert_eq!(
        v["steps"].as_array().unwrap().last().unwrap()["step"]["op"],
        "exec"
    );
}
