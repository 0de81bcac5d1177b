//! Capabilities: all dropped in `run`; in bwrap mode, all but those kept.

use super::Fail;
use crate::plan::Ambient;
use crate::sys::kernel as k;
use rustix::io::Errno;
use rustix::thread::{CapabilitySet, CapabilitySets};

/// Every capability but `keep` leaves the effective, permitted, inheritable
/// and ambient sets, and the bounding set when asked; `ambient` says what
/// the kept ones do in the ambient set (Ambient's variants). Walks
/// capability numbers until the kernel says EINVAL, which covers
/// capabilities newer than any list compiled in here. Each failing call is
/// named.
pub(super) fn drop_capabilities(keep: &[u32], bounding: bool, ambient: Ambient) -> Result<(), Fail> {
    let keep_across_exec = ambient == Ambient::Raise;
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
                Err(e) => return Err(Fail::call("prctl", format!("PR_CAPBSET_DROP, {cap}"), e)),
            }
        }
    }
    if keep.is_empty() {
        k::clear_ambient_set()
            .map_err(|e| Fail::call("prctl", "PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL", e))?;
    } else {
        for cap in (0..64u32).filter(|&c| !kept(c)) {
            match k::set_ambient(CapabilitySet::from_bits_retain(1 << cap), false) {
                Ok(()) => {}
                Err(Errno::INVAL) => break,
                Err(e) => return Err(Fail::call("prctl", format!("PR_CAP_AMBIENT_LOWER, {cap}"), e)),
            }
        }
    }
    let now = k::capabilities().map_err(|e| Fail::call("capget", "", e))?;
    let permitted = now.permitted & keep_set;
    let target = CapabilitySets {
        effective: now.effective & keep_set,
        permitted,
        inheritable: if keep_across_exec {
            permitted
        } else {
            now.inheritable & keep_set
        },
    };
    // Where nothing changes, no capset: a seccomp policy may deny it (as
    // systemd-nspawn's does) and bubblewrap does not call it then either.
    let unchanged = !keep.is_empty()
        && target.effective == now.effective
        && target.permitted == now.permitted
        && target.inheritable == now.inheritable;
    if !unchanged {
        k::set_capabilities(target).map_err(|e| Fail::call("capset", "", e))?;
    }
    if ambient == Ambient::Offer {
        for cap in keep {
            match k::set_ambient(CapabilitySet::from_bits_retain(1 << cap), true) {
                Ok(()) | Err(Errno::PERM | Errno::INVAL) => {}
                Err(e) => return Err(Fail::call("prctl", format!("PR_CAP_AMBIENT_RAISE, {cap}"), e)),
            }
        }
    }
    if keep_across_exec {
        for cap in keep {
            let one = CapabilitySet::from_bits_retain(1 << cap);
            if permitted.contains(one) {
                k::set_ambient(one, true)
                    .map_err(|e| Fail::call("prctl", format!("PR_CAP_AMBIENT_RAISE, {cap}"), e))?;
            }
        }
    }
    Ok(())
}
