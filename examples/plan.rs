//! Prints what a sandbox for `make test` in the current directory would
//! do, with its network closed and ten minutes to run, then what it
//! confines on this host; with `--run`, runs it.
//!
//! cargo run --example plan [-- --run]

use qwrap::sandbox::{NetworkMode, Sandbox};

fn main() -> Result<(), qwrap::sandbox::Error> {
    let sandbox = Sandbox::new(["make", "test"])
        .network(NetworkMode::Closed)
        .time_limit("10m");
    print!("{}", sandbox.plan()?);
    println!("{}", sandbox.inspect()?);
    if std::env::args().any(|a| a == "--run") {
        let failed = sandbox.run();
        eprintln!("{failed}");
        std::process::exit(i32::from(failed.code));
    }
    Ok(())
}
