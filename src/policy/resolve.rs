//! Resolution: a request and the caller's facts become a Policy. The
//! filesystem is read only to canonicalise paths and to find the checkout,
//! the credential stores and the view; never the workspace's contents.

use super::*;

/// What every phase reads: the settings, where the caller stands, the homes
/// (HOME's first, then the account's) and the caller's variables.
struct Scope<'a> {
    s: &'a Settings,
    cwd: &'a Path,
    home: Option<&'a Path>,
    homes: &'a [PathBuf],
    env: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Scope<'_> {
    fn path(&self, spec: &PathSpec) -> Result<PathBuf, String> {
        spec_path(spec, self.home, self.env, self.cwd)
    }

    fn expand(&self, template: &str) -> Result<PathBuf, String> {
        profile::expand(template, self.home, self.env)
    }
}

/// A path setting that named nothing usable: dropped, with the reason.
fn unusable(spec: &PathSpec, source: &str, why: String) -> Dropped {
    Dropped {
        path: spec_display(spec),
        why: format!("{source}: {why}"),
    }
}

/// The writable roots, and what the phases after them add to.
struct Roots {
    writable: Vec<WritableRoot>,
    dropped: Vec<Dropped>,
    /// Roots made on the host before the sandbox starts.
    made: Vec<PathBuf>,
    git: GitInfo,
    ro_specs: Vec<Sourced<PathSpec>>,
    socket_specs: Vec<Sourced<PathSpec>>,
}

/// Resolves a request against the caller's facts, phase by phase: the
/// writable roots, the git guard, read-only paths and sockets, the secrets
/// and the view, the network and the environment.
pub fn resolve(req: &Request, caller: &Caller) -> Result<Policy, PolicyError> {
    if req.command.is_empty() {
        return Err(PolicyError::NoCommand);
    }
    let s = &req.settings;
    let cwd = caller.cwd()?;
    let home = caller.home.as_deref().map(canonical_or_self);
    let env = |k: &str| caller.var(k);
    let homes = homes_of(caller, home.as_ref());
    let sc = Scope {
        s,
        cwd,
        home: home.as_deref(),
        homes: &homes,
        env: &env,
    };
    let workspace = workspace_of(req, cwd)?;
    let (profiles, defs) = toolchains::with_detected(s, &workspace);
    let mut r = roots_of(&sc, caller, &workspace, &profiles, &defs)?;
    let cache_set = toolchains::layer_set(
        sc.home,
        &env,
        &workspace,
        &mut r.writable,
        &mut r.dropped,
        s.home.value == HomeMode::Overlay,
    );
    r.ro_specs.extend(s.read_only.iter().cloned());
    // Review mode: the workspace and its git roots are overlaid whole, so
    // the guard's copies, pins and read-only paths give way to the layer.
    let review = review::policy(s, sc.home, &env, &workspace, &r.writable)?;
    let mut g = guard(&sc, &workspace, &mut r, review.is_some());
    let read_only = read_only_paths(&sc, &mut r, &mut g);
    r.socket_specs.extend(s.allow_socket.iter().cloned());
    let allowed_sockets = sockets(&sc, &mut r);
    let seen = seen(&sc, &workspace, &mut r, &allowed_sockets, &profiles, &defs)?;
    let allowed_domains = domains(s, &profiles, &defs)?;
    let egress_log = egress_log(&sc, &r.writable)?;
    let keep_env: Vec<String> = s
        .keep_env
        .iter()
        .map(|k| k.value.clone())
        .chain(
            profiles
                .iter()
                .flat_map(|p| defs[&p.value].value.keep_env.clone()),
        )
        .collect();
    let (env_rules, removed_variables, user_env_names) = environment(req, caller, &keep_env);
    Ok(Policy {
        workspace,
        writable_roots: r.writable,
        read_only,
        dropped: r.dropped,
        git: r.git,
        die_with_parent: s.die_with_parent.value,
        new_session: s.new_session.value,
        protected: g.protected,
        create_before: g.create_before,
        pinned: g.pinned,
        git_layouts: g.git_layouts,
        repos: g.repos,
        allowed_sockets,
        tmp_sockets: seen.tmp_sockets,
        env: env_rules,
        keep_fds: req.keep_fds.clone(),
        hidden: seen.hidden,
        redacted_rc: seen.redacted_rc,
        user_env_names,
        quiet: false,
        denials: None,
        shown: seen.shown,
        view_entries: seen.view_entries,
        home_listing: seen.home_listing,
        cache_set,
        profiles,
        allowed_domains,
        egress_log,
        removed_variables,
        socket_vars: SOCKET_VARIABLES
            .iter()
            .filter_map(|v| {
                Some((
                    v.to_string(),
                    canonical_or_self(&absolutize(Path::new(&caller.var(v)?), cwd)),
                ))
            })
            .collect(),
        settings: s.clone(),
        home,
        command: req.command.clone(),
        review,
        watched: g.watched,
    })
}

/// HOME's directory, then the account's where it is another.
fn homes_of(caller: &Caller, home: Option<&PathBuf>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = home.into_iter().cloned().collect();
    if let Some(account) = caller.account_home().map(canonical_or_self)
        && !homes.contains(&account)
    {
        homes.push(account);
    }
    homes
}

/// The workspace: `--workspace` or the current directory, a real directory.
fn workspace_of(req: &Request, cwd: &Path) -> Result<PathBuf, PolicyError> {
    let ws_raw = req.workspace.clone().unwrap_or_else(|| cwd.to_path_buf());
    let ws_abs = absolutize(&ws_raw, cwd);
    let workspace = std::fs::canonicalize(&ws_abs).map_err(|e| PolicyError::Workspace {
        path: ws_abs.clone(),
        why: io_text(&e),
    })?;
    if !workspace.is_dir() {
        return Err(PolicyError::Workspace {
            path: workspace,
            why: "not a directory".into(),
        });
    }
    Ok(workspace)
}

/// Every writable root: the workspace, the host's temp dir where asked,
/// the caches, the checkout's git roots, the profiles' and the user's
/// includes, each judged by the resolver's rules.
fn roots_of(
    sc: &Scope,
    caller: &Caller,
    workspace: &Path,
    profiles: &[Sourced<String>],
    defs: &toolchains::Defs,
) -> Result<Roots, PolicyError> {
    let s = sc.s;
    let mut resolver = roots::Resolver::new(sc.homes);
    resolver.add_builtin(workspace, RootReason::Workspace, "workspace")?;
    if s.tmp.value == TmpMode::Host {
        host_tmp(caller, sc.cwd, sc.homes, &s.tmp.source, &mut resolver)?;
    }
    cache_home(sc, &mut resolver)?;
    let git = git_roots(sc, workspace, &mut resolver)?;
    let mut p = profile_roots(sc, profiles, defs, &mut resolver)?;
    // Every known tool's cache that exists on the host, whether or not its
    // profile applies (`npx` in a directory without package.json): one
    // overlay of the home serves them all, so they cost next to nothing.
    // Never made on the host: a profile that applies makes its own.
    if s.detect.value {
        for t in profile::shipped_caches() {
            if let Ok(path) = sc.expand(t) {
                let default = variable_default(t, sc.home, &path);
                resolver.add_known_cache(&path, s.cache.value, default.as_ref().map(Option::as_deref));
            }
        }
    }
    for inc in &s.include {
        match sc.path(&inc.value) {
            Ok(path) => p.includes.push((path, inc.source.clone())),
            Err(why) => p.dropped.push(unusable(&inc.value, &inc.source, why)),
        }
    }
    for (path, src) in &p.includes {
        resolver.add_include(path, src)?;
    }
    let (writable, mut dropped, made) = resolver.finish();
    dropped.extend(p.dropped);
    Ok(Roots {
        writable,
        dropped,
        made,
        git,
        ro_specs: p.ro_specs,
        socket_specs: p.socket_specs,
    })
}

/// The cache directory: `$XDG_CACHE_HOME` where set, else `~/.cache`.
fn cache_home(sc: &Scope, resolver: &mut roots::Resolver) -> Result<(), PolicyError> {
    let cache_mode = sc.s.cache.value;
    let default_cache = sc.home.map(|h| h.join(".cache"));
    match (sc.env)("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        // Written through, a variable may only name what an include could.
        Some(c) if cache_mode == CacheMode::Shared => {
            resolver.add_from_variable(&c, default_cache.as_deref(), RootReason::Cache, "$XDG_CACHE_HOME")
        }
        Some(c) => resolver.add_cache(
            &c,
            cache_mode,
            Some(default_cache.as_deref()),
            false,
            "$XDG_CACHE_HOME",
        ),
        None => match &default_cache {
            Some(cache) => resolver.add_cache(cache, cache_mode, None, true, "~/.cache"),
            None => Ok(()),
        },
    }
}

/// The checkout the workspace lies in, and its git roots writable.
fn git_roots(sc: &Scope, workspace: &Path, resolver: &mut roots::Resolver) -> Result<GitInfo, PolicyError> {
    let mut git = git::discover(workspace);
    // A repository at or above the home directory (a dotfiles repository
    // in ~/.git) would make every checkout-less directory in home part of a
    // writable git dir: its roots are withheld unless named with --include.
    if let Some(top) = &git.top
        && let Some(h) = sc.homes.iter().find(|h| h.starts_with(top))
    {
        resolver.withhold_git(&git.roots);
        git.note = Some(format!(
            "the checkout's top {} is the home directory {} or above it: its git dir stays read-only (name it with --include to make it writable)",
            top.display(),
            h.display()
        ));
    } else {
        for root in &git.roots {
            resolver.add_builtin_if_exists(root, RootReason::Git, &format!("git ({})", git.checkout))?;
        }
    }
    Ok(git)
}

/// What the profiles add besides their caches' and shipped includes'
/// roots: the user's own includes (judged by the include rules later),
/// read-only paths and sockets, and the templates that named nothing.
#[derive(Default)]
struct Profiled {
    includes: Vec<(PathBuf, String)>,
    ro_specs: Vec<Sourced<PathSpec>>,
    socket_specs: Vec<Sourced<PathSpec>>,
    dropped: Vec<Dropped>,
}

/// Profiles: shipped ones are built-in roots; a user's own obey the
/// include rules.
fn profile_roots(
    sc: &Scope,
    profiles: &[Sourced<String>],
    defs: &toolchains::Defs,
    resolver: &mut roots::Resolver,
) -> Result<Profiled, PolicyError> {
    let mut out = Profiled::default();
    let dropped_template = |t: &str, src: &str, why: String| Dropped {
        path: PathBuf::from(t),
        why: format!("{src}: {why}"),
    };
    for p in profiles {
        let def = &defs[&p.value];
        let shipped = def.source == "shipped";
        let src = format!("profile {}", p.value);
        for t in &def.value.cache {
            match sc.expand(t) {
                Ok(path) => {
                    // Where a variable chose the path, the include rules
                    // judge it, or its template's own default.
                    let default = variable_default(t, sc.home, &path);
                    let by_variable = default.as_ref().map(Option::as_deref);
                    resolver.add_cache(&path, sc.s.cache.value, by_variable, shipped, &src)?
                }
                Err(why) => out.dropped.push(dropped_template(t, &src, why)),
            }
        }
        for t in &def.value.include {
            match sc.expand(t) {
                Ok(path) if shipped => shipped_include(sc, t, &path, &src, resolver)?,
                Ok(path) => out.includes.push((path, src.clone())),
                Err(why) => out.dropped.push(dropped_template(t, &src, why)),
            }
        }
        out.ro_specs.extend(
            def.value
                .read_only
                .iter()
                .map(|t| Sourced::new(PathSpec::Template(t.clone()), src.clone())),
        );
    }
    Ok(out)
}

/// A shipped profile's include: built in where it is the template's own
/// default; where a variable chose the path, the include rules judge it.
fn shipped_include(
    sc: &Scope,
    template: &str,
    path: &Path,
    src: &str,
    resolver: &mut roots::Resolver,
) -> Result<(), PolicyError> {
    match profile::expand(template, sc.home, &|_| None) {
        Ok(default) if default == path => resolver.add_builtin_or_create(path, RootReason::Profile, src),
        default => resolver.add_from_variable(
            path,
            default.ok().as_deref(),
            RootReason::Profile,
            &format!("{src} ({template})"),
        ),
    }
}

/// What the git guard and the agent files' guard decide.
struct Guarded {
    watched: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    create_before: Vec<PathBuf>,
    git_layouts: Vec<GitLayout>,
    pinned: Vec<PathBuf>,
    repos: Found,
}

/// The agent files' guard and the git guard over the writable roots; the
/// paths they protect join the read-only specs.
fn guard(sc: &Scope, workspace: &Path, r: &mut Roots, review: bool) -> Guarded {
    let s = sc.s;
    let watched = if !review && !s.allow_agent_files.value {
        agent_files::find(workspace).guard(&mut r.ro_specs, &mut r.dropped)
    } else {
        Vec::new()
    };
    let (guard, repos) = git_guard::for_roots(
        &r.git,
        &r.writable,
        s.allow_git_config.value || review,
        &user_git(sc),
    );
    if let Some(n) = &guard.note {
        r.git.note.get_or_insert_with(|| n.clone());
    }
    let writable = &r.writable;
    let in_roots = |p: &Path| writable.iter().any(|w| p.starts_with(&w.path));
    let protected: Vec<PathBuf> = guard.protect.into_iter().filter(|p| in_roots(p)).collect();
    let create_before: Vec<PathBuf> = std::mem::take(&mut r.made)
        .into_iter()
        .chain(guard.create.into_iter().filter(|p| in_roots(p)))
        .collect();
    let git_layouts: Vec<GitLayout> = guard.layouts.into_iter().filter(|l| in_roots(&l.dir)).collect();
    // Pins that are roots themselves are mount points already.
    let pinned: Vec<PathBuf> = guard
        .pins
        .into_iter()
        .filter(|p| in_roots(p) && !writable.iter().any(|w| w.path == *p))
        .collect();
    r.ro_specs.extend(protected.iter().map(|p| {
        let why = match guard.host_config.contains(p) {
            true => "host tool config",
            false => "protected git path",
        };
        Sourced::new(PathSpec::Literal(p.clone()), why)
    }));
    Guarded {
        watched,
        protected,
        create_before,
        git_layouts,
        pinned,
        repos,
    }
}

/// The caller's own git configs (git_guard::UserGit::of).
fn user_git(sc: &Scope) -> git_guard::UserGit {
    git_guard::UserGit::of(sc.env, sc.home, sc.cwd)
}

/// The read-only specs that name something inside a writable root (the
/// rest of the host is read-only already), first source kept, by path.
fn read_only_paths(sc: &Scope, r: &mut Roots, g: &mut Guarded) -> Vec<ReadOnlyPath> {
    let in_roots = |p: &Path| r.writable.iter().any(|w| p.starts_with(&w.path));
    let mut read_only: Vec<ReadOnlyPath> = Vec::new();
    for spec in &r.ro_specs {
        let abs = match sc.path(&spec.value) {
            Ok(p) => p,
            Err(why) => {
                r.dropped.push(unusable(&spec.value, &spec.source, why));
                continue;
            }
        };
        let real = match std::fs::canonicalize(&abs) {
            Ok(r) => Some(r),
            // A protected directory created just before the sandbox starts.
            Err(_) if g.create_before.contains(&abs) => Some(abs.clone()),
            Err(_) => None,
        };
        let Some(real) = real else {
            // A profile's settings file made inside is named at exit.
            if spec.source.starts_with("profile ") && in_roots(&abs) {
                g.watched.push(abs.clone());
            }
            r.dropped.push(Dropped {
                path: abs,
                why: format!("{}: read-only path does not exist", spec.source),
            });
            continue;
        };
        match r.writable.iter().find(|w| real.starts_with(&w.path)) {
            Some(root) => {
                if !read_only.iter().any(|o| o.path == real) {
                    read_only.push(ReadOnlyPath {
                        path: real,
                        within: root.path.clone(),
                        source: spec.source.clone(),
                    });
                }
            }
            None => r.dropped.push(Dropped {
                path: real,
                why: format!("{}: outside every writable root (already read-only)", spec.source),
            }),
        }
    }
    read_only.sort_by(|a, b| a.path.cmp(&b.path));
    read_only
}

/// The sockets the user keeps reachable, each once.
fn sockets(sc: &Scope, r: &mut Roots) -> Vec<Sourced<PathBuf>> {
    let mut allowed: Vec<Sourced<PathBuf>> = Vec::new();
    for spec in &r.socket_specs {
        match sc.path(&spec.value) {
            Ok(p) => {
                let p = canonical_or_self(&p);
                if !allowed.iter().any(|a| a.value == p) {
                    allowed.push(Sourced::new(p, spec.source.clone()));
                }
            }
            Err(why) => r.dropped.push(unusable(&spec.value, &spec.source, why)),
        }
    }
    allowed
}

/// What the command sees of the home and the host: the hidden set, the
/// redacted start-up files, the minimal view's entries or the listed home.
struct Seen {
    hidden: Vec<HiddenPath>,
    shown: Vec<PathBuf>,
    redacted_rc: Vec<rc_files::Redacted>,
    tmp_sockets: Vec<PathBuf>,
    view_entries: Vec<view::ViewEntry>,
    home_listing: Option<home_view::Listing>,
}

fn seen(
    sc: &Scope,
    workspace: &Path,
    r: &mut Roots,
    allowed_sockets: &[Sourced<PathBuf>],
    profiles: &[Sourced<String>],
    defs: &toolchains::Defs,
) -> Result<Seen, PolicyError> {
    let s = sc.s;
    let show = secrets::show_paths(s, sc.home, sc.env, sc.cwd);
    let tmp_sockets: Vec<PathBuf> = allowed_sockets
        .iter()
        .map(|a| a.value.clone())
        .filter(|p| {
            s.tmp.value == TmpMode::Private && p.starts_with("/tmp") && std::fs::symlink_metadata(p).is_ok()
        })
        .collect();
    let (hidden, shown) =
        secrets::hidden_paths(s, sc.homes, &r.writable, sc.env, sc.cwd, &show, &mut r.dropped);
    let rc_state = toolchains::state_dir(sc.home, (sc.env)("XDG_STATE_HOME"));
    let start_up: Vec<Vec<rc_files::StartUp>> =
        sc.homes.iter().map(|h| rc_files::start_up_files(h)).collect();
    let redacted_rc: Vec<rc_files::Redacted> =
        rc_files::redact(start_up.concat().as_slice(), &show, rc_state.as_deref())
            .into_iter()
            .filter(|rc| !hidden.iter().any(|h| rc.path.starts_with(&h.path)))
            .filter(|rc| !r.writable.iter().any(|w| rc.copy.starts_with(&w.path)))
            .collect();
    if s.home.value == HomeMode::Overlay && s.view.value == ViewMode::Minimal {
        return Err(PolicyError::Conflict(format!(
            "--home overlay (from {}) shows the whole home directory, and --view minimal (from {}) none of it: choose one",
            s.home.source, s.view.source
        )));
    }
    let listed = s.home.value == HomeMode::Listed && s.view.value == ViewMode::Host;
    let exposed = if listed || s.view.value == ViewMode::Minimal {
        exposed(sc, allowed_sockets, profiles, defs, &mut r.dropped)
    } else {
        Vec::new()
    };
    let view_entries = match s.view.value {
        ViewMode::Host => Vec::new(),
        ViewMode::Minimal => view::minimal(&exposed),
    };
    let mut extra = exposed;
    extra.extend(show.iter().map(|p| (p.clone(), "--show".to_string())));
    // Nothing to list in a home that is no directory, or at `/`.
    let home_listing = sc
        .home
        .filter(|h| listed && home_view::listable(h))
        .map(|h| listing(sc, h, workspace, &r.git, &r.writable, extra, &start_up));
    // In the minimal view, what is not shown does not exist: nothing to hide.
    let hidden: Vec<HiddenPath> = match s.view.value {
        ViewMode::Host => match &home_listing {
            Some(l) => l.hidden(hidden, sc.homes, &r.writable),
            None => hidden,
        },
        ViewMode::Minimal => hidden
            .into_iter()
            .filter(|h| view::shows(&r.writable, &view_entries, &h.path))
            .collect(),
    };
    Ok(Seen {
        hidden,
        shown,
        redacted_rc,
        tmp_sockets,
        view_entries,
        home_listing,
    })
}

/// What `--expose` and the profiles show, and the kept sockets (a socket
/// must exist inside to be reached).
fn exposed(
    sc: &Scope,
    allowed_sockets: &[Sourced<PathBuf>],
    profiles: &[Sourced<String>],
    defs: &toolchains::Defs,
    dropped: &mut Vec<Dropped>,
) -> Vec<(PathBuf, String)> {
    let mut exposed = Vec::new();
    let profile_exposes = profiles.iter().flat_map(|p| {
        defs[&p.value]
            .value
            .expose
            .iter()
            .map(move |t| Sourced::new(PathSpec::Template(t.clone()), format!("profile {}", p.value)))
    });
    for e in sc.s.expose.iter().cloned().chain(profile_exposes) {
        match sc.path(&e.value) {
            Ok(p) if std::fs::symlink_metadata(&p).is_ok() => exposed.push((p, e.source.clone())),
            Ok(p) => dropped.push(Dropped {
                path: p,
                why: format!("{}: exposed path does not exist", e.source),
            }),
            Err(why) => dropped.push(unusable(&e.value, &e.source, why)),
        }
    }
    exposed.extend(
        allowed_sockets
            .iter()
            .map(|a| (a.value.clone(), a.source.clone())),
    );
    exposed
}

/// The listed home: its entries (the list's, the extra ones, the start-up
/// files, the checkout above the workspace), its mode, /home's cover.
fn listing(
    sc: &Scope,
    h: &Path,
    workspace: &Path,
    git: &GitInfo,
    writable: &[WritableRoot],
    mut extra: Vec<(PathBuf, String)>,
    start_up: &[Vec<rc_files::StartUp>],
) -> home_view::Listing {
    let root_paths: Vec<PathBuf> = writable.iter().map(|r| r.path.clone()).collect();
    let own = sc
        .homes
        .iter()
        .position(|x| x == h)
        .map_or(&[][..], |i| &start_up[i][..]);
    extra.extend(own.iter().map(|f| {
        (
            f.path.clone(),
            "a shell start-up file (redacted where it assigns a credential)".to_string(),
        )
    }));
    // The checkout the workspace lies in, where its top is above it.
    if let Some(top) = git
        .top
        .as_ref()
        .filter(|t| workspace.starts_with(t) && **t != workspace)
    {
        extra.push((top.clone(), "the checkout the workspace lies in".to_string()));
    }
    let homes = home_view::homes_dir(h, &root_paths);
    home_view::Listing {
        home: h.to_path_buf(),
        entries: home_view::entries(h, sc.env, &extra, &root_paths),
        mode: std::fs::metadata(h).map_or(0o700, |m| {
            std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777
        }),
        tops: homes
            .as_deref()
            .map(|d| home_view::tops(d, h, &root_paths))
            .unwrap_or_default(),
        homes,
    }
}

/// The domains the proxy lets through: the settings', then the profiles'.
fn domains(
    s: &Settings,
    profiles: &[Sourced<String>],
    defs: &toolchains::Defs,
) -> Result<Vec<Sourced<crate::egress::Rule>>, PolicyError> {
    let mut allowed_domains = s.allow_domains.clone();
    for p in profiles {
        for d in &defs[&p.value].value.allow_domains {
            let source = format!("profile {}", p.value);
            let rule = d.parse().map_err(|why| PolicyError::BadDomain {
                source_name: source.clone(),
                why,
            })?;
            allowed_domains.push(Sourced::new(rule, source));
        }
    }
    Ok(allowed_domains)
}

/// Where the proxy records egress: outside every writable root, so that the
/// command cannot rewrite its own record.
fn egress_log(sc: &Scope, writable: &[WritableRoot]) -> Result<Option<PathBuf>, PolicyError> {
    let Some(l) = &sc.s.egress_log else {
        return Ok(None);
    };
    let bad = |path: PathBuf, why: String| PolicyError::BadPath {
        path,
        source_name: l.source.clone(),
        why,
    };
    let path = sc
        .path(&l.value)
        .map_err(|why| bad(spec_display(&l.value), why))?;
    let real = toolchains::canonical_prefix(&path);
    if let Some(r) = writable.iter().find(|r| real.starts_with(&r.path)) {
        let why = format!(
            "the egress log must lie outside the writable roots (it is in {})",
            r.path.display()
        );
        return Err(bad(real, why));
    }
    Ok(Some(path))
}

/// The command's environment: the rules, the variables removed as
/// credentials, and the names the user set or unset.
fn environment(
    req: &Request,
    caller: &Caller,
    keep_env: &[String],
) -> (EnvRules, Vec<OsString>, Vec<String>) {
    let removed_variables = secrets::removed_variables(caller.env.iter(), keep_env, &req.setenv);
    let mut env_rules = EnvRules::build(req.settings.tmp.value, &req.setenv, &req.unsetenv);
    let user_env_names: Vec<String> = req
        .setenv
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .chain(req.unsetenv.iter().map(|k| k.to_string_lossy().into_owned()))
        .collect();
    env_rules.unset.extend(removed_variables.iter().cloned());
    home_variable(caller, &mut env_rules);
    (env_rules, removed_variables, user_env_names)
}

/// `--tmp host`: the host's temp directory ($TMPDIR, else /tmp) a writable
/// root, never inside a home.
fn host_tmp(
    caller: &Caller,
    cwd: &Path,
    homes: &[PathBuf],
    source: &str,
    resolver: &mut roots::Resolver,
) -> Result<(), PolicyError> {
    let (tmp, src) = match caller.var("TMPDIR") {
        Some(t) => (PathBuf::from(t), "$TMPDIR"),
        None => (PathBuf::from("/tmp"), "/tmp"),
    };
    let tmp = absolutize(&tmp, cwd);
    // The host's temp dir inside home would make part of home writable
    // on the word of an environment variable.
    if let Ok(real) = std::fs::canonicalize(&tmp)
        && let Some(h) = homes.iter().find(|h| real.starts_with(h) && real != **h)
    {
        return Err(PolicyError::InsideHome {
            path: real,
            source_name: format!("{src} with --tmp host"),
            home: h.to_path_buf(),
        });
    }
    resolver.add_builtin_if_exists(
        &tmp,
        RootReason::Temp,
        &format!("{src} (tmp = host from {source})"),
    )?;
    Ok(())
}

/// Where a variable chose a cache's path (`path` is not what the template
/// names without variables): `Some` of that default, which the path must
/// lie within; `None` when no variable chose it.
fn variable_default(template: &str, home: Option<&Path>, path: &Path) -> Option<Option<PathBuf>> {
    let default = profile::expand(template, home, &|_| None).ok();
    (default.as_deref() != Some(path)).then_some(default)
}

/// A `$HOME` that is no home (relative, or `/`) gives way to the account's,
/// where the caches and the listed home are; `--setenv HOME` wins.
fn home_variable(caller: &Caller, env_rules: &mut EnvRules) {
    let replaced =
        caller.home_source == "/etc/passwd" && caller.env.contains_key(std::ffi::OsStr::new("HOME"));
    if let Some(h) = caller.home.as_ref().filter(|_| replaced)
        && !env_rules.set.iter().any(|(k, _)| k == "HOME")
    {
        env_rules
            .set
            .insert(0, ("HOME".into(), h.clone().into_os_string()));
    }
}
