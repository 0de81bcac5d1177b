//! A runaway command cannot fill the host's memory through the sandbox's
//! own tmpfs: the private /tmp and /dev/shm are a fifth of the memory each
//! by default (the kernel's default is half, each), `--tmpfs-size` sets
//! them, and a write past the size fails with ENOSPC inside. As root and
//! unprivileged, on both mount APIs.

mod common;

use common::*;

fn mem_total() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = m
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    kib * 1024
}

#[test]
fn the_private_tmpfs_are_a_fifth_of_the_memory_by_default() {
    let want = mem_total() / 100 * 20;
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let out = ok(&f.run_sh(api, &[], "stat -f -c '%b %S' /tmp /dev/shm"));
            for line in out.lines() {
                let (blocks, bsize) = line.split_once(' ').unwrap();
                let size = blocks.parse::<u64>().unwrap() * bsize.parse::<u64>().unwrap();
                assert!(
                    size.abs_diff(want) < 1 << 20,
                    "{who:?} {api}: {size} bytes, want {want}"
                );
            }
        }
    }
}

#[test]
fn a_write_past_the_size_fails_inside() {
    let script = "for d in /tmp /dev/shm; do head -c 16M /dev/zero > $d/fill 2>/dev/null && echo \"$d filled\" || echo \"$d full $(stat -c %s $d/fill)\"; done";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let out = ok(&f.run_sh(api, &["--tmpfs-size", "8M"], script));
            for d in ["/tmp", "/dev/shm"] {
                let line = out.lines().find(|l| l.starts_with(d)).unwrap_or_default();
                let size: u64 = line.rsplit(' ').next().unwrap_or("0").parse().unwrap_or(u64::MAX);
                assert!(line.contains("full") && size <= 8 << 20, "{who:?} {api}: {out}");
            }
        }
    }
    // A size that is none is refused before anything runs.
    let f = Fixture::new(Who::all()[0]);
    let o = f.run_sh("new", &["--tmpfs-size", "5X"], "touch ran");
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid tmpfs size"), "{}", stderr(&o));
    assert!(!f.ws().join("ran").exists());
}
