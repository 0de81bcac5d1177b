//! Resolution: a request and the caller's facts become a Policy. The
//! filesystem is read only to canonicalise paths and to find the checkout,
//! the credential stores and the view; never the workspace's contents.

use super::*;

/// Resolves a request against the caller's facts.
pub fn resolve(req: &Request, caller: &Caller) -> Result<Policy, PolicyError> {
    if req.command.is_empty() {
        return Err(PolicyError::NoCommand);
    }
    let s = &req.settings;
    let cwd = caller.cwd()?;
    let home = caller.home.as_deref().map(canonical_or_self);
    let env = |k: &str| caller.var(k);
    let mut homes: Vec<PathBuf> = home.iter().cloned().collect();
    if let Some(account) = caller.account_home().map(canonical_or_self)
        && !homes.contains(&account)
    {
        homes.push(account);
    }
    let mut resolver = roots::Resolver::new(&homes);
    let mut dropped_templates = Vec::new();

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
    resolver.add_builtin(&workspace, RootReason::Workspace, "workspace")?;

    if s.tmp.value == TmpMode::Host {
        host_tmp(caller, cwd, &homes, &s.tmp.source, &mut resolver)?;
    }

    let cache_mode = s.cache.value;
    let default_cache = home.as_ref().map(|h| h.join(".cache"));
    match caller
        .var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        // Written through, a variable may only name what an include could.
        Some(c) if cache_mode == CacheMode::Shared => {
            resolver.add_from_variable(&c, default_cache.as_deref(), RootReason::Cache, "$XDG_CACHE_HOME")?
        }
        Some(c) => resolver.add_cache(
            &c,
            cache_mode,
            Some(default_cache.as_deref()),
            false,
            "$XDG_CACHE_HOME",
        )?,
        None => {
            if let Some(cache) = &default_cache {
                resolver.add_cache(cache, cache_mode, None, true, "~/.cache")?;
            }
        }
    }

    let mut git = git::discover(&workspace);
    // A repository at or above the home directory (a dotfiles repository
    // in ~/.git) would make every checkout-less directory in home part of a
    // writable git dir: its roots are withheld unless named with --include.
    if let Some(top) = &git.top
        && let Some(h) = homes.iter().find(|h| h.starts_with(top))
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

    // Profiles: shipped ones are built-in roots; a user's own obey the
    // include rules.
    let mut ro_specs: Vec<Sourced<PathSpec>> = Vec::new();
    let mut socket_specs: Vec<Sourced<PathSpec>> = Vec::new();
    let mut user_includes: Vec<(PathBuf, String)> = Vec::new();
    let (profiles, defs) = toolchains::with_detected(s, &workspace);
    for p in &profiles {
        let def = &defs[&p.value];
        let src = format!("profile {}", p.value);
        for t in &def.value.cache {
            match profile::expand(t, home.as_deref(), &env) {
                Ok(path) => {
                    // Where a variable chose the path, the include rules
                    // judge it, or its template's own default.
                    let default = variable_default(t, home.as_deref(), &path);
                    let by_variable = default.as_ref().map(Option::as_deref);
                    resolver.add_cache(&path, cache_mode, by_variable, def.source == "shipped", &src)?
                }
                Err(why) => dropped_templates.push(Dropped {
                    path: PathBuf::from(t),
                    why: format!("{src}: {why}"),
                }),
            }
        }
        for t in &def.value.include {
            match profile::expand(t, home.as_deref(), &env) {
                Ok(path) if def.source == "shipped" => {
                    // Where a variable chose the path, the include rules
                    // judge it; the template's own default is built in.
                    match profile::expand(t, home.as_deref(), &|_| None) {
                        Ok(default) if default == path => {
                            resolver.add_builtin_or_create(&path, RootReason::Profile, &src)?
                        }
                        default => resolver.add_from_variable(
                            &path,
                            default.ok().as_deref(),
                            RootReason::Profile,
                            &format!("{src} ({t})"),
                        )?,
                    }
                }
                Ok(path) => user_includes.push((path, src.clone())),
                Err(why) => dropped_templates.push(Dropped {
                    path: PathBuf::from(t),
                    why: format!("{src}: {why}"),
                }),
            }
        }
        ro_specs.extend(
            def.value
                .read_only
                .iter()
                .map(|t| Sourced::new(PathSpec::Template(t.clone()), src.clone())),
        );
    }

    // Every known tool's cache that exists on the host, whether or not its
    // profile applies (`npx` in a directory without package.json): one
    // overlay of the home serves them all, so they cost next to nothing.
    // Never made on the host: a profile that applies makes its own.
    if s.detect.value {
        for t in profile::shipped_caches() {
            if let Ok(path) = profile::expand(t, home.as_deref(), &env) {
                let default = variable_default(t, home.as_deref(), &path);
                resolver.add_known_cache(&path, cache_mode, default.as_ref().map(Option::as_deref));
            }
        }
    }

    for inc in &s.include {
        match spec_path(&inc.value, home.as_deref(), &env, cwd) {
            Ok(path) => user_includes.push((path, inc.source.clone())),
            Err(why) => dropped_templates.push(Dropped {
                path: spec_display(&inc.value),
                why: format!("{}: {why}", inc.source),
            }),
        }
    }
    for (path, src) in &user_includes {
        resolver.add_include(path, src)?;
    }

    let (mut writable_roots, mut dropped, made_roots) = resolver.finish();
    dropped.extend(dropped_templates);
    let cache_set = toolchains::layer_set(
        home.as_deref(),
        &env,
        &workspace,
        &mut writable_roots,
        &mut dropped,
        s.home.value == HomeMode::Overlay,
    );

    ro_specs.extend(s.read_only.iter().cloned());
    // Review mode: the workspace and its git roots are overlaid whole, so
    // the guard's copies, pins and read-only paths give way to the layer.
    let review = review::policy(s, home.as_deref(), &env, &workspace, &writable_roots)?;
    let mut watched = if review.is_none() && !s.allow_agent_files.value {
        agent_files::find(&workspace).guard(&mut ro_specs, &mut dropped)
    } else {
        Vec::new()
    };
    let (guard, repos) = git_guard::for_roots(
        &git,
        &writable_roots,
        s.allow_git_config.value || review.is_some(),
    );
    if let Some(n) = &guard.note {
        git.note.get_or_insert_with(|| n.clone());
    }
    let in_roots = |p: &Path| writable_roots.iter().any(|r| p.starts_with(&r.path));
    let protected: Vec<PathBuf> = guard.protect.into_iter().filter(|p| in_roots(p)).collect();
    let create_before: Vec<PathBuf> = made_roots
        .into_iter()
        .chain(guard.create.into_iter().filter(|p| in_roots(p)))
        .collect();
    let git_layouts: Vec<GitLayout> = guard.layouts.into_iter().filter(|l| in_roots(&l.dir)).collect();
    // Pins that are roots themselves are mount points already.
    let pinned: Vec<PathBuf> = guard
        .pins
        .into_iter()
        .filter(|p| in_roots(p) && !writable_roots.iter().any(|r| r.path == *p))
        .collect();
    ro_specs.extend(
        protected
            .iter()
            .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "protected git path")),
    );
    let mut read_only: Vec<ReadOnlyPath> = Vec::new();
    for spec in &ro_specs {
        let abs = match spec_path(&spec.value, home.as_deref(), &env, cwd) {
            Ok(p) => p,
            Err(why) => {
                dropped.push(Dropped {
                    path: spec_display(&spec.value),
                    why: format!("{}: {why}", spec.source),
                });
                continue;
            }
        };
        let real = match std::fs::canonicalize(&abs) {
            Ok(r) => Some(r),
            // A protected directory created just before the sandbox starts.
            Err(_) if create_before.contains(&abs) => Some(abs.clone()),
            Err(_) => None,
        };
        let Some(real) = real else {
            // A profile's settings file made inside is named at exit.
            if spec.source.starts_with("profile ") && in_roots(&abs) {
                watched.push(abs.clone());
            }
            dropped.push(Dropped {
                path: abs,
                why: format!("{}: read-only path does not exist", spec.source),
            });
            continue;
        };
        match writable_roots.iter().find(|r| real.starts_with(&r.path)) {
            Some(root) => {
                if !read_only.iter().any(|r| r.path == real) {
                    read_only.push(ReadOnlyPath {
                        path: real,
                        within: root.path.clone(),
                        source: spec.source.clone(),
                    });
                }
            }
            None => dropped.push(Dropped {
                path: real,
                why: format!("{}: outside every writable root (already read-only)", spec.source),
            }),
        }
    }
    read_only.sort_by(|a, b| a.path.cmp(&b.path));

    socket_specs.extend(s.allow_socket.iter().cloned());
    let mut allowed_sockets: Vec<Sourced<PathBuf>> = Vec::new();
    for spec in &socket_specs {
        match spec_path(&spec.value, home.as_deref(), &env, cwd) {
            Ok(p) => {
                let p = canonical_or_self(&p);
                if !allowed_sockets.iter().any(|a| a.value == p) {
                    allowed_sockets.push(Sourced::new(p, spec.source.clone()));
                }
            }
            Err(why) => dropped.push(Dropped {
                path: spec_display(&spec.value),
                why: format!("{}: {why}", spec.source),
            }),
        }
    }

    let show = secrets::show_paths(s, home.as_deref(), &env, cwd);
    let tmp_sockets: Vec<PathBuf> = allowed_sockets
        .iter()
        .map(|a| a.value.clone())
        .filter(|p| {
            s.tmp.value == TmpMode::Private && p.starts_with("/tmp") && std::fs::symlink_metadata(p).is_ok()
        })
        .collect();
    let (hidden, shown) = secrets::hidden_paths(s, &homes, &writable_roots, &env, cwd, &show, &mut dropped);
    let rc_state = toolchains::state_dir(home.as_deref(), env("XDG_STATE_HOME"));
    let start_up: Vec<Vec<rc_files::StartUp>> = homes.iter().map(|h| rc_files::start_up_files(h)).collect();
    let redacted_rc: Vec<rc_files::Redacted> =
        rc_files::redact(start_up.concat().as_slice(), &show, rc_state.as_deref())
            .into_iter()
            .filter(|r| !hidden.iter().any(|h| r.path.starts_with(&h.path)))
            .filter(|r| !writable_roots.iter().any(|w| r.copy.starts_with(&w.path)))
            .collect();
    if s.home.value == HomeMode::Overlay && s.view.value == ViewMode::Minimal {
        return Err(PolicyError::Conflict(format!(
            "--home overlay (from {}) shows the whole home directory, and --view minimal (from {}) none of it: choose one",
            s.home.source, s.view.source
        )));
    }
    let listed = s.home.value == HomeMode::Listed && s.view.value == ViewMode::Host;
    let mut exposed = Vec::new();
    if listed || s.view.value == ViewMode::Minimal {
        let profile_exposes = profiles.iter().flat_map(|p| {
            defs[&p.value]
                .value
                .expose
                .iter()
                .map(move |t| Sourced::new(PathSpec::Template(t.clone()), format!("profile {}", p.value)))
        });
        for e in s.expose.iter().cloned().chain(profile_exposes) {
            match spec_path(&e.value, home.as_deref(), &env, cwd) {
                Ok(p) if std::fs::symlink_metadata(&p).is_ok() => exposed.push((p, e.source.clone())),
                Ok(p) => dropped.push(Dropped {
                    path: p,
                    why: format!("{}: exposed path does not exist", e.source),
                }),
                Err(why) => dropped.push(Dropped {
                    path: spec_display(&e.value),
                    why: format!("{}: {why}", e.source),
                }),
            }
        }
        // A socket the user keeps must exist inside to be reached.
        exposed.extend(
            allowed_sockets
                .iter()
                .map(|a| (a.value.clone(), a.source.clone())),
        );
    }
    let view_entries = match s.view.value {
        ViewMode::Host => Vec::new(),
        ViewMode::Minimal => view::minimal(&exposed),
    };
    let root_paths: Vec<PathBuf> = writable_roots.iter().map(|r| r.path.clone()).collect();
    // Nothing to list in a home that is no directory, or at `/`.
    let home_listing = home
        .as_ref()
        .filter(|h| listed && home_view::listable(h))
        .map(|h| {
            let mut extra = exposed.clone();
            extra.extend(show.iter().map(|p| (p.clone(), "--show".to_string())));
            let own = homes
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
                home: h.clone(),
                entries: home_view::entries(h, &env, &extra, &root_paths),
                mode: std::fs::metadata(h).map_or(0o700, |m| {
                    std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777
                }),
                tops: homes
                    .as_deref()
                    .map(|d| home_view::tops(d, h, &root_paths))
                    .unwrap_or_default(),
                homes,
            }
        });
    // In the minimal view, what is not shown does not exist: nothing to hide.
    let hidden: Vec<HiddenPath> = match s.view.value {
        ViewMode::Host => match &home_listing {
            Some(l) => l.hidden(hidden, &homes, &writable_roots),
            None => hidden,
        },
        ViewMode::Minimal => hidden
            .into_iter()
            .filter(|h| view::shows(&writable_roots, &view_entries, &h.path))
            .collect(),
    };
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
    let mut allowed_domains = s.allow_domains.clone();
    for p in &profiles {
        for d in &defs[&p.value].value.allow_domains {
            let source = format!("profile {}", p.value);
            let rule = d.parse().map_err(|why| PolicyError::BadDomain {
                source_name: source.clone(),
                why,
            })?;
            allowed_domains.push(Sourced::new(rule, source));
        }
    }
    let egress_log = match &s.egress_log {
        Some(l) => {
            let bad = |path: PathBuf, why: String| PolicyError::BadPath {
                path,
                source_name: l.source.clone(),
                why,
            };
            let path = spec_path(&l.value, home.as_deref(), &env, cwd)
                .map_err(|why| bad(spec_display(&l.value), why))?;
            // The command must not be able to rewrite its own record.
            let real = toolchains::canonical_prefix(&path);
            if let Some(r) = writable_roots.iter().find(|r| real.starts_with(&r.path)) {
                let why = format!(
                    "the egress log must lie outside the writable roots (it is in {})",
                    r.path.display()
                );
                return Err(bad(real, why));
            }
            Some(path)
        }
        None => None,
    };
    let removed_variables = secrets::removed_variables(caller.env.iter(), &keep_env, &req.setenv);
    let mut env_rules = EnvRules::build(s.tmp.value, &req.setenv, &req.unsetenv);
    let user_env_names: Vec<String> = req
        .setenv
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .chain(req.unsetenv.iter().map(|k| k.to_string_lossy().into_owned()))
        .collect();
    env_rules.unset.extend(removed_variables.iter().cloned());
    home_variable(caller, &mut env_rules);

    Ok(Policy {
        workspace,
        writable_roots,
        read_only,
        dropped,
        git,
        network: s.network.value,
        tmp: s.tmp.value,
        landlock: s.landlock.value,
        die_with_parent: s.die_with_parent.value,
        new_session: s.new_session.value,
        protected,
        create_before,
        pinned,
        git_layouts,
        repos,
        allowed_sockets,
        tmp_sockets,
        env: env_rules,
        keep_fds: req.keep_fds.clone(),
        hidden,
        redacted_rc,
        user_env_names,
        quiet: false,
        denials: None,
        shown,
        view: s.view.value,
        view_entries,
        home_listing,
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
        watched,
    })
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
