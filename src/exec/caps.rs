//! Capabilities: all dropped in `run`; in bwrap mode, all but those kept.

use super::Fail;
use crate::sys::kernel as k;
use rustix::io::Errno;
use rustix::thread::{CapabilitySet, CapabilitySets};

/// Every capability but `keep` leaves the effective, permitted, inheritable
/// and ambient sets, and the bounding set when asked; with
/// `keep_across_exec` the kept ones become inheritable and ambient. Walks
/// capability numbers until the kernel says EINVAL, which covers
/// capabilities newer than any list compiled in here. Each failing call is
/// named.
pub(super) fn drop_capabilities(keep: &[u32], bounding: bool, keep_across_exec: bool) -> Result<(), Fail> {
    let kept = |cap: u32| keep.contains(&cap);
    let mut keep_set = CapabilitySet::empty();
    for &cap in keep {
        keep_set |= CapabilitySet::from_bits_retain(1 << cap);
    }
    if bounding {
        for cap in (0..64u32).filter(|&c| !kept(c)) {
            match k::drop_from_bounding_set(CapabilitySet::from_bits_retain(1 << cap)) {
                Ok(()) => {}
                Err(Errno::INVAL) => break,
                Err(e) => return Err(Fail::with(e, format!("prctl(PR_CAPBSET_DROP, {cap})"))),
            }
        }
    }
    if keep.is_empty() {
        k::clear_ambient_set()
            .map_err(|e| Fail::with(e, "prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)"))?;
    } else {
        for cap in (0..64u32).filter(|&c| !kept(c)) {
            match k::set_ambient(CapabilitySet::from_bits_retain(1 << cap), false) {
                Ok(()) => {}
                Err(Errno::INVAL) => break,
                Err(e) => return Err(Fail::with(e, format!("prctl(PR_CAP_AMBIENT_LOWER, {cap})"))),
            }
        }
    }
    let now = k::capabilities().map_err(|e| Fail::with(e, "capget()"))?;
    let permitted = now.permitted & keep_set;
    k::set_capabilities(CapabilitySets {
        effective: now.effective & keep_set,
        permitted,
        inheritable: if keep_across_exec {
            permitted
        } else {
            now.inheritable & keep_set
        },
    })
    .map_err(|e| Fail::with(e, "capset()"))?;
    if keep_across_exec {
        for cap in keep {
            let one = CapabilitySet::from_bits_retain(1 << cap);
            if permitted.contains(one) {
                k::set_ambient(one, true)
                    .map_err(|e| Fail::with(e, format!("prctl(PR_CAP_AMBIENT_RAISE, {cap})")))?;
            }
        }
    }
    Ok(())
}
