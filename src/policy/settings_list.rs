// Every setting of the regular kinds declared once: its name, type,
// default, flag (without its dashes), value name, variable, and the help
// the command line shows (its doc comment). `settings_list!(m)` hands the
// list to the macro `m`: cli_settings.rs makes the command line's structs
// and their fast parser of it, settings_decl.rs the config file's keys,
// the resolved settings and the merge. The build script compiles this
// file too (for the man pages), so it names types and constants only.
//
// - modes: one of a mode's names (clap's `ValueEnum`);
// - values: text the type parses (sizes, counts, durations);
// - switches: a boolean a config key sets and a flag turns to the other
//   value; `run_switches` only where a command runs (run, plan);
// - paths, words: lists gathered from every source.
macro_rules! settings_list {
    ($then:ident) => {
        $then! {
            modes {
                /// open: the host's network; closed: a private network with
                /// only lo; proxied: only lo and a proxy to the
                /// --allow-domain destinations [default: open].
                network: NetworkMode = NetworkMode::Open, "network" "MODE", ENV_NETWORK;
                /// shared: the host's PID namespace; private: a new one with
                /// its own /proc (host processes invisible; nested sandboxes
                /// such as bwrap, Chromium's and qwrap work inside) [default:
                /// shared].
                pid: PidMode = PidMode::Shared, "pid" "MODE", ENV_PID;
                /// require: fail unless every Landlock layer applies;
                /// best-effort: apply what the kernel offers; off [default:
                /// best-effort].
                landlock: LandlockMode = LandlockMode::BestEffort, "landlock" "MODE", ENV_LANDLOCK;
                /// host: the whole host read-only; minimal: only system
                /// directories, the writable roots and exposed paths exist
                /// [default: host].
                view: ViewMode = ViewMode::Host, "view" "VIEW", ENV_VIEW;
                /// overlay: caches outside the workspace are overlaid, writes
                /// stay in the workspace's own layer; private: a fresh tmpfs
                /// per run; shared: written through to the host [default:
                /// overlay].
                cache: CacheMode = CacheMode::Overlay, "cache" "MODE", ENV_CACHE;
                /// listed: only the home's entries that tools need and that
                /// hold no credentials (see qwrap(1)), the redacted start-up
                /// files and the writable roots; everything else in it is
                /// absent; readonly: the whole home, the host's, read-only
                /// (its hidden set unreadable); overlay: an overlay of the
                /// whole home whose writes stay in the workspace's layer
                /// (tools' state under ~/.config, ~/.local; never the host's)
                /// [default: listed].
                home: HomeMode = HomeMode::Listed, "home" "MODE", ENV_HOME;
                /// namespaces: user, mount, IPC and network namespaces with
                /// Landlock and seccomp; landlock: Landlock and seccomp only,
                /// where namespaces are refused (containers; see qwrap(1) for
                /// what it gives up); auto: namespaces where they work, else
                /// landlock [default: namespaces].
                isolation: IsolationMode = IsolationMode::Namespaces, "isolation" "MODE", ENV_ISOLATION;
            }
            values {
                /// The size of the private /tmp and /dev/shm, each: a size
                /// (512M, 4G) or a share of the host's memory [default: 20%].
                tmpfs_size: TmpfsSize = TmpfsSize::DEFAULT, "tmpfs-size" "SIZE", ENV_TMPFS_SIZE;
                /// The memory of the command's whole tree, swap included: a
                /// size (512M, 4G) or a share of the host's memory; at the
                /// limit every process is killed together (exit 137). A
                /// cgroup: refused (exit 125) where none can be made
                /// [default: none].
                memory: MemoryLimit = MemoryLimit(None), "memory" "SIZE", ENV_MEMORY;
                /// The tasks (processes and threads) the command's tree may
                /// hold at once; past it fork fails with EAGAIN. A cgroup:
                /// refused where none can be made [default: none].
                max_processes: ProcessLimit = ProcessLimit(None), "max-processes" "N", ENV_MAX_PROCESSES;
                /// The CPU time of the command's tree, in CPUs (1, 0.5, 2.5).
                /// A cgroup: refused where none can be made [default: none].
                cpus: CpuLimit = CpuLimit(None), "cpus" "N", ENV_CPUS;
                /// The sandbox's wall-clock time (90s, 10m, 2h): then every
                /// process of it gets SIGTERM, and SIGKILL 2 s later
                /// [default: none].
                time_limit: TimeLimit = TimeLimit(None), "time-limit" "DURATION", ENV_TIME_LIMIT;
            }
            switches {
                /// Leave git hooks, config and pointer files in writable
                /// roots writable.
                allow_git_config = false, "allow-git-config" => allow_git_config;
                /// Keep every change to the workspace, its git dir included,
                /// in a layer of its own (an overlay whose upper layer lies
                /// in qwrap's state directory) until `qwrap review apply`;
                /// the host's workspace stays as it was.
                review = false, "review" => review, ENV_REVIEW;
                /// Leave the agent and editor files at the workspace's top
                /// writable (.vscode/, .idea/, .envrc, .mcp.json,
                /// .claude/settings*.json, …: read-only by default where
                /// they exist at the start).
                allow_agent_files = false, "allow-agent-files" => allow_agent_files;
                /// Use the host's SysV IPC (shared memory, queues,
                /// semaphores) instead of a private IPC namespace.
                share_ipc = false, "share-ipc" => share_ipc;
                /// Let the command reach the caller's keyrings (keyctl,
                /// add_key and request_key allowed) instead of refusing
                /// every keyring call.
                share_keyring = false, "share-keyring" => share_keyring;
                /// Give the command the caller's terminal itself instead of
                /// a pty of qwrap's own: the command can then signal the
                /// caller's other jobs through it and leave it changed
                /// (exclusive, another line discipline).
                share_terminal = false, "share-terminal" => share_terminal;
            }
            run_switches {
                /// Detach CMD from the controlling terminal.
                new_session = false, "new-session" => new_session;
                /// Let CMD outlive the process that started qwrap.
                die_with_parent = true, "no-die-with-parent" => no_die_with_parent;
                /// Leave the processes CMD leaves behind running when it
                /// exits (by default every process left in the sandbox is
                /// killed). qwrap says nothing once CMD exits; repositories
                /// made inside are held aside when the last of them ends.
                keep_background = false, "keep-background" => keep_background;
                /// At exit, say on stderr each distinct refusal (a write
                /// outside the roots, a hidden or absent path, a masked
                /// socket, a call the filter refuses, an egress refusal, a
                /// resource limit reached) and the option that would allow
                /// it.
                explain = false, "explain" => explain, ENV_EXPLAIN;
            }
            paths {
                /// Another writable root (repeatable); refused inside $HOME
                /// unless a built-in root covers it.
                include, "include" | "bind" "DIR", ENV_INCLUDE;
                /// A path inside a writable root made read-only again
                /// (repeatable).
                read_only, "ro" "PATH";
                /// Leave this host Unix socket reachable (repeatable),
                /// wherever it lies (under the private /tmp it is shown at
                /// its own path).
                allow_socket, "allow-socket" "PATH", ENV_ALLOW_SOCKET;
                /// Make this path unreadable inside, besides the default
                /// hidden set of credential stores (repeatable).
                hide, "hide" "PATH";
                /// Take this path out of the default hidden set
                /// (repeatable).
                show, "show" "PATH";
                /// In the minimal view, show this host path read-only
                /// (repeatable).
                expose, "expose" "PATH";
            }
            words {
                /// A named set of extra roots (repeatable): e.g. qwen.
                profiles / profile, "profile" "NAME", ENV_PROFILE;
                /// Keep this secret-looking variable (e.g. OPENAI_API_KEY;
                /// `*` for all) in the command's environment (repeatable).
                keep_env / keep_env, "keep-env" "NAME";
                /// Accept the failure of this verify check (e.g.
                /// abstract-socket on a kernel without Landlock scopes):
                /// recorded on the receipt, it no longer holds the rollout
                /// (repeatable).
                accept_degraded / accept_degraded, "accept-degraded" "CHECK";
            }
        }
    };
}
