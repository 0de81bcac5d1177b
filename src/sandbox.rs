//! The library's surface: a sandbox described with a builder, over the
//! same invocation the command line makes (so that the config files, the
//! profiles, the variables and every check apply alike), and the four
//! things `qwrap` does with one: its plan, the reports that say what it
//! confines, and the run.
//!
//! ```no_run
//! use qwrap::sandbox::{NetworkMode, Sandbox};
//!
//! let sandbox = Sandbox::new(["make", "test"])
//!     .workspace("/home/me/src/app")
//!     .network(NetworkMode::Closed)
//!     .time_limit("10m");
//! println!("{}", sandbox.plan()?);
//! // Replaces this process with `make test`, confined (as `qwrap run`).
//! let failed = sandbox.run();
//! eprintln!("{failed}");
//! # Ok::<(), qwrap::sandbox::Error>(())
//! ```

use crate::commands;
use crate::policy::Invocation;
pub use crate::policy::{CliSettings, IsolationMode, NetworkMode, PidMode};
use std::ffi::OsString;
use std::path::PathBuf;

/// Why a sandbox could not be described, reported on or started: what
/// `qwrap` says, and the exit status it gives (125: setup).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub message: String,
    pub code: u8,
}

impl From<commands::Fatal> for Error {
    fn from(f: commands::Fatal) -> Error {
        Error {
            message: f.message,
            code: f.code,
        }
    }
}

/// One sandbox: a command, a workspace and the settings `qwrap run` takes.
#[derive(Debug, Clone, Default)]
pub struct Sandbox {
    inv: Invocation,
}

impl Sandbox {
    /// A sandbox for `command`, the current directory its workspace.
    pub fn new<I, S>(command: I) -> Sandbox
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Sandbox {
            inv: Invocation {
                command: command.into_iter().map(Into::into).collect(),
                ..Invocation::default()
            },
        }
    }

    /// The workspace (`--workspace`): writable, the command's directory.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Sandbox {
        self.inv.workspace = Some(dir.into());
        self
    }

    /// Another writable root (`--include`).
    pub fn include(mut self, dir: impl Into<PathBuf>) -> Sandbox {
        self.inv.cli.include.push(dir.into());
        self
    }

    /// The network (`--network`): the host's, closed, or proxied.
    pub fn network(mut self, mode: NetworkMode) -> Sandbox {
        self.inv.cli.network = Some(mode);
        self
    }

    /// Whose PID namespace (`--pid`).
    pub fn pid(mut self, mode: PidMode) -> Sandbox {
        self.inv.cli.pid = Some(mode);
        self
    }

    /// Namespaces, or Landlock and seccomp alone (`--isolation`).
    pub fn isolation(mut self, mode: IsolationMode) -> Sandbox {
        self.inv.cli.isolation = Some(mode);
        self
    }

    /// The memory limit (`--memory`, as `1G`).
    pub fn memory(mut self, limit: &str) -> Sandbox {
        self.inv.cli.memory = Some(limit.into());
        self
    }

    /// The most processes at once (`--max-processes`).
    pub fn max_processes(mut self, limit: u32) -> Sandbox {
        self.inv.cli.max_processes = Some(limit.to_string());
        self
    }

    /// The wall-clock limit (`--time-limit`, as `90s` or `10m`).
    pub fn time_limit(mut self, limit: &str) -> Sandbox {
        self.inv.cli.time_limit = Some(limit.into());
        self
    }

    /// A variable set inside (`--setenv`).
    pub fn setenv(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Sandbox {
        self.inv.setenv.push((key.into(), value.into()));
        self
    }

    /// Any other setting, as the command line spells it.
    pub fn settings(mut self, edit: impl FnOnce(&mut CliSettings)) -> Sandbox {
        edit(&mut self.inv.cli);
        self
    }

    /// Every step the run would take, one a line (`qwrap plan`).
    pub fn plan(&self) -> Result<String, Error> {
        Ok(commands::load(&self.inv)?.plan.to_string())
    }

    /// The plan as JSON (`qwrap plan --json`, docs/plan-json.md).
    pub fn plan_json(&self) -> Result<String, Error> {
        Ok(commands::load(&self.inv)?.plan.to_json())
    }

    /// What the sandbox confines on this host, and how (`qwrap inspect
    /// --json`, docs/reports.md).
    pub fn inspect(&self) -> Result<String, Error> {
        Ok(commands::inspect(self.inv.clone(), true)?.stdout)
    }

    /// The boundary checked against a real sandbox (`qwrap verify
    /// --json`); its verdict in the JSON, and in `Err` where it fails.
    pub fn verify(&self) -> Result<String, Error> {
        let out = commands::verify(self.inv.clone(), true)?;
        match out.code {
            0 => Ok(out.stdout),
            code => Err(Error {
                message: out.stdout,
                code,
            }),
        }
    }

    /// Replaces the calling process with the command, confined (`qwrap
    /// run`): as `exec`, it returns only where the sandbox could not be
    /// made, and the caller must be single-threaded (every fork of the
    /// setup checks it is).
    pub fn run(self) -> Error {
        let loaded = match commands::load_for_run(&self.inv) {
            Ok(l) => l,
            Err(e) => return e.into(),
        };
        match commands::execute(loaded, crate::exec::Options::default(), self.inv.quiet) {
            Ok(setup) => Error {
                message: setup.to_string(),
                code: crate::exit::SETUP,
            },
            Err(e) => e.into(),
        }
    }
}
