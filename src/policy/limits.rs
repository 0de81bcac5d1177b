//! The resource limits a run may ask for, each `none` by default: the
//! whole tree's memory (`--memory`), its tasks (`--max-processes`), its CPU
//! time (`--cpus`) and its wall-clock time (`--time-limit`). Parsed here;
//! plan/limits.rs decides how each is enforced on the host, or refuses.

use super::TmpfsSize;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// `--memory`: bytes or a share of the host's memory, for every process
/// of the sandbox together, swap included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryLimit(pub Option<TmpfsSize>);

/// `--max-processes`: tasks (processes and threads) the command's tree
/// may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessLimit(pub Option<u32>);

/// `--cpus`: CPU time per wall-clock time, in thousandths of a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuLimit(pub Option<u32>);

/// `--time-limit`: wall-clock time in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeLimit(pub Option<u64>);

/// The smallest memory limit taken: below it the command cannot start.
const MIN_MEMORY: u64 = 1 << 20;
/// The most tasks a limit may name (the kernel's largest pid_max).
const MAX_TASKS: u32 = 1 << 22;

fn none(s: &str) -> bool {
    matches!(s.trim(), "none" | "off")
}

impl MemoryLimit {
    /// In bytes on a host with `mem_total` bytes of memory (None: no
    /// limit, or a share of an unknown total).
    pub fn bytes(self, mem_total: u64) -> Option<u64> {
        self.0.and_then(|s| s.bytes(mem_total))
    }
}

impl FromStr for MemoryLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if none(s) {
            return Ok(MemoryLimit(None));
        }
        let bad = || {
            format!(
                "invalid memory limit {s:?}: expected a size (512M, 4G; at least 1M), a share of the memory (50%) or none"
            )
        };
        match s.parse::<TmpfsSize>() {
            Ok(TmpfsSize::Bytes(b)) if b < MIN_MEMORY => Err(bad()),
            Ok(size) => Ok(MemoryLimit(Some(size))),
            Err(_) => Err(bad()),
        }
    }
}

impl FromStr for ProcessLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if none(s) {
            return Ok(ProcessLimit(None));
        }
        match s.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_TASKS).contains(&n) => Ok(ProcessLimit(Some(n))),
            _ => Err(format!(
                "invalid process limit {s:?}: expected a number of tasks from 1 to {MAX_TASKS}, or none"
            )),
        }
    }
}

impl FromStr for CpuLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if none(s) {
            return Ok(CpuLimit(None));
        }
        let bad = || {
            format!(
                "invalid CPU limit {s:?}: expected a number of CPUs from 0.01 to 4096 (1, 0.5, 2.25), or none"
            )
        };
        let milli = thousandths(s.trim()).ok_or_else(bad)?;
        if !(10..=4096 * 1000).contains(&milli) {
            return Err(bad());
        }
        Ok(CpuLimit(Some(milli as u32)))
    }
}

impl FromStr for TimeLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if none(s) {
            return Ok(TimeLimit(None));
        }
        let bad = || {
            format!(
                "invalid time limit {s:?}: expected a duration (90, 90s, 1.5m, 2h, 500ms; at least 1ms), or none"
            )
        };
        let t = s.trim();
        let (number, unit_ms) = if let Some(n) = t.strip_suffix("ms") {
            (n, 1)
        } else if let Some(n) = t.strip_suffix('s') {
            (n, 1000)
        } else if let Some(n) = t.strip_suffix('m') {
            (n, 60_000)
        } else if let Some(n) = t.strip_suffix('h') {
            (n, 3_600_000)
        } else if let Some(n) = t.strip_suffix('d') {
            (n, 86_400_000)
        } else {
            (t, 1000)
        };
        // Thousandths of the unit, then milliseconds.
        let ms = thousandths(number)
            .and_then(|n| n.checked_mul(unit_ms))
            .map(|n| n / 1000)
            .ok_or_else(bad)?;
        if ms == 0 {
            return Err(bad());
        }
        Ok(TimeLimit(Some(ms)))
    }
}

/// A decimal number with at most three places, in thousandths.
fn thousandths(t: &str) -> Option<u64> {
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty() && frac.is_empty()
        || frac.len() > 3
        || !whole.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let frac: u64 = format!("{frac:0<3}").parse().ok()?;
    whole.checked_mul(1000)?.checked_add(frac)
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(TmpfsSize::Bytes(b)) => {
                // In the largest unit that divides it: 512M, 4G.
                let unit = [(40, 'T'), (30, 'G'), (20, 'M'), (10, 'K')]
                    .into_iter()
                    .find(|(shift, _)| b % (1u64 << shift) == 0);
                match unit {
                    Some((shift, u)) => write!(f, "{}{u}", b >> shift),
                    None => write!(f, "{b}"),
                }
            }
            Some(s) => write!(f, "{s}"),
        }
    }
}

impl fmt::Display for ProcessLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(n) => write!(f, "{n}"),
        }
    }
}

impl fmt::Display for CpuLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(m) => f.write_str(&decimal(u64::from(m))),
        }
    }
}

impl fmt::Display for TimeLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(ms) if ms % 1000 != 0 => write!(f, "{ms}ms"),
            Some(ms) => write!(f, "{}s", ms / 1000),
        }
    }
}

/// Thousandths as a decimal number: 1500 → "1.5".
fn decimal(milli: u64) -> String {
    let frac = format!("{:03}", milli % 1000);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        format!("{}", milli / 1000)
    } else {
        format!("{}.{frac}", milli / 1000)
    }
}

/// Bytes for people: "512 MiB", "1.5 GiB", "4096 bytes".
pub fn human_bytes(b: u64) -> String {
    const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (unit, shift) in UNITS {
        if b >= 1 << shift {
            let milli = ((u128::from(b) * 1000) >> shift) as u64;
            // At most one place: 1.46 GiB reads 1.4 GiB, never more than it is.
            return format!("{} {unit}", decimal(milli / 100 * 100));
        }
    }
    format!("{b} bytes")
}

macro_rules! serialize_as_text {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
serialize_as_text!(MemoryLimit, ProcessLimit, CpuLimit, TimeLimit);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_and_print() {
        assert_eq!("none".parse::<MemoryLimit>(), Ok(MemoryLimit(None)));
        assert_eq!("512M".parse::<MemoryLimit>().unwrap().bytes(0), Some(512 << 20));
        assert_eq!(
            "50%".parse::<MemoryLimit>().unwrap().bytes(8 << 30),
            Some((8 << 30) / 100 * 50)
        );
        assert!("4K".parse::<MemoryLimit>().is_err());
        assert_eq!("2048M".parse::<MemoryLimit>().unwrap().to_string(), "2G");
        assert_eq!("50%".parse::<MemoryLimit>().unwrap().to_string(), "50%");
        assert!(
            "lots"
                .parse::<MemoryLimit>()
                .unwrap_err()
                .contains("invalid memory limit")
        );
        assert_eq!("100".parse::<ProcessLimit>(), Ok(ProcessLimit(Some(100))));
        assert!("0".parse::<ProcessLimit>().is_err());
        assert!("-3".parse::<ProcessLimit>().is_err());
        assert_eq!("1.5".parse::<CpuLimit>(), Ok(CpuLimit(Some(1500))));
        assert_eq!(".25".parse::<CpuLimit>(), Ok(CpuLimit(Some(250))));
        assert_eq!("2".parse::<CpuLimit>().unwrap().to_string(), "2");
        assert_eq!("0.75".parse::<CpuLimit>().unwrap().to_string(), "0.75");
        assert!("0.001".parse::<CpuLimit>().is_err());
        assert!("1.2345".parse::<CpuLimit>().is_err());
        assert!("1e3".parse::<CpuLimit>().is_err());
        for (text, ms) in [
            ("90", 90_000),
            ("90s", 90_000),
            ("1.5m", 90_000),
            ("2h", 7_200_000),
            ("500ms", 500),
            ("1d", 86_400_000),
        ] {
            assert_eq!(text.parse::<TimeLimit>(), Ok(TimeLimit(Some(ms))), "{text}");
        }
        assert_eq!("1500ms".parse::<TimeLimit>().unwrap().to_string(), "1500ms");
        assert_eq!("2m".parse::<TimeLimit>().unwrap().to_string(), "120s");
        assert!("0s".parse::<TimeLimit>().is_err());
        assert!("soon".parse::<TimeLimit>().is_err());
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 bytes");
    }
}
