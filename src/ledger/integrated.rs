//! Which devices are integrated GPUs, from the facts the snapshot holds.

use super::{classify, Client, MemClass};
use crate::sources::drm_devices::{DeviceInfo, IntegratedBy};

/// i915 and xe print every memory region of the device in each client's fdinfo (zero or not): a
/// device whose clients name no device-local region has none, so it is integrated.
pub(super) fn mark(devices: &mut [DeviceInfo], clients: &[Client]) {
    for d in devices.iter_mut().filter(|d| d.integrated.is_none()) {
        let on_device: Vec<&Client> = clients
            .iter()
            .filter(|c| c.device == d.id && !c.regions.is_empty())
            .collect();
        let driver = d
            .driver
            .as_deref()
            .or_else(|| on_device.first().and_then(|c| c.driver.as_deref()));
        let no_local = on_device
            .iter()
            .all(|c| c.regions.keys().all(|r| classify(r) != MemClass::Device));
        if matches!(driver, Some("i915" | "xe")) && !on_device.is_empty() && no_local {
            d.integrated = Some(IntegratedBy::NoLocalRegion);
        }
    }
}
