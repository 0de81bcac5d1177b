//! Capabilities: all dropped in `run`; in bwrap mode, the ones named.

use super::Fail;
use rustix::io::Errno;

/// Empties the bounding, ambient, effective, permitted and inheritable sets.
pub(super) fn drop_capabilities() -> Result<(), Fail> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    // Walk until the kernel says EINVAL: that covers capabilities newer than
    // any list compiled in here.
    for cap in 0..64u32 {
        match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << cap)) {
            Ok(()) => {}
            Err(Errno::INVAL) => break,
            Err(e) => return Err(Fail::with(e, format!("prctl(PR_CAPBSET_DROP, {cap})"))),
        }
    }
    rustix::thread::clear_ambient_capability_set()
        .map_err(|e| Fail::with(e, "prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)"))?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|e| Fail::with(e, "capset(effective=0, permitted=0, inheritable=0)"))
}

/// Removes the given capabilities from the effective, permitted,
/// inheritable and ambient sets, and from the bounding set when asked.
pub(super) fn drop_capability_list(caps: &[u32], bounding: bool, keep_across_exec: bool) -> Result<(), Fail> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    let mut mask = CapabilitySet::empty();
    for &cap in caps {
        let one = CapabilitySet::from_bits_retain(1 << cap);
        if bounding {
            match rustix::thread::remove_capability_from_bounding_set(one) {
                Ok(()) | Err(Errno::INVAL) => {}
                Err(e) => return Err(Fail::with(e, format!("prctl(PR_CAPBSET_DROP, {cap})"))),
            }
        }
        match rustix::thread::configure_capability_in_ambient_set(one, false) {
            Ok(()) | Err(Errno::INVAL) => {}
            Err(e) => return Err(Fail::with(e, format!("prctl(PR_CAP_AMBIENT_LOWER, {cap})"))),
        }
        mask |= one;
    }
    let now = rustix::thread::capabilities(None).map_err(|e| Fail::with(e, "capget()"))?;
    let permitted = now.permitted - mask;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: now.effective - mask,
            permitted,
            inheritable: if keep_across_exec {
                permitted
            } else {
                now.inheritable - mask
            },
        },
    )
    .map_err(|e| Fail::with(e, "capset()"))?;
    if keep_across_exec {
        for cap in 0..64u32 {
            let one = CapabilitySet::from_bits_retain(1 << cap);
            if permitted.contains(one) {
                rustix::thread::configure_capability_in_ambient_set(one, true)
                    .map_err(|e| Fail::with(e, format!("prctl(PR_CAP_AMBIENT_RAISE, {cap})")))?;
            }
        }
    }
    Ok(())
}
