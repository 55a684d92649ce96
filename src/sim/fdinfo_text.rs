//! fdinfo text as the kernel prints it, for simulated clients.
//!
//! ref: drivers/gpu/drm/drm_file.c `drm_fdinfo_print_size`: the largest unit that divides the
//! size exactly (bytes, KiB, MiB), never rounding.

use std::fmt::Write;

/// A size the way the DRM core prints it.
pub fn print_size(bytes: u64) -> String {
    let units = ["", " KiB", " MiB"];
    let (mut v, mut u) = (bytes, 0);
    while v != 0 && v % 1024 == 0 && u + 1 < units.len() {
        v /= 1024;
        u += 1;
    }
    format!("{v}{}", units[u])
}

/// One xe client of a discrete card: generic header, memory stats of every xe region, engine
/// cycles.
pub fn xe(client_id: u64, pdev: &str, gtt: u64, vram: u64) -> String {
    xe_regions(
        client_id,
        pdev,
        &[("system", 0), ("gtt", gtt), ("vram0", vram), ("stolen", 0)],
    )
}

/// One xe client of an integrated card: the same, without a VRAM region (an integrated part
/// has none, so xe prints none).
pub fn xe_integrated(client_id: u64, pdev: &str, gtt: u64) -> String {
    xe_regions(
        client_id,
        pdev,
        &[("system", 0), ("gtt", gtt), ("stolen", 0)],
    )
}

fn xe_regions(client_id: u64, pdev: &str, regions: &[(&str, u64)]) -> String {
    let mut s = format!(
        "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t{}\n",
        1000 + client_id
    );
    let _ = write!(
        s,
        "drm-driver:\txe\ndrm-client-id:\t{client_id}\ndrm-pdev:\t{pdev}\n"
    );
    for &(region, bytes) in regions {
        let b = print_size(bytes);
        let _ = write!(
            s,
            "drm-total-{region}:\t{b}\ndrm-shared-{region}:\t0\ndrm-active-{region}:\t0\ndrm-resident-{region}:\t{b}\n"
        );
        if region == "system" {
            s.push_str("drm-purgeable-system:\t0\n");
        }
    }
    s.push_str("drm-cycles-rcs:\t0\ndrm-total-cycles-rcs:\t1000\ndrm-cycles-ccs:\t0\ndrm-total-cycles-ccs:\t1000\ndrm-engine-capacity-ccs:\t4\n");
    s
}

/// One amdgpu client in the current format, with the legacy `drm-memory-*` aliases and amdgpu's
/// space before the tab.
pub fn amdgpu(client_id: u64, pdev: &str, gtt: u64, vram: u64) -> String {
    let kib = |b: u64| b / 1024;
    format!(
        "pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t{ino}\ndrm-driver:\tamdgpu\ndrm-client-id:\t{client_id}\n\
drm-pdev:\t{pdev}\npasid:\t{pasid}\ndrm-total-cpu:\t0\ndrm-total-gtt:\t{g}\ndrm-resident-gtt:\t{g}\n\
drm-total-vram:\t{v}\ndrm-shared-vram:\t0\ndrm-resident-vram:\t{v}\ndrm-memory-vram:\t{vk} KiB\n\
drm-memory-gtt: \t{gk} KiB\ndrm-memory-cpu: \t0 KiB\namd-evicted-vram:\t0 KiB\namd-requested-vram:\t{vk} KiB\n\
amd-requested-gtt:\t{gk} KiB\ndrm-engine-gfx:\t1000 ns\n",
        ino = 2000 + client_id,
        pasid = 32768 + client_id,
        g = print_size(gtt),
        v = print_size(vram),
        vk = kib(vram),
        gk = kib(gtt),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::drm_fdinfo::FdInfo;

    #[test]
    fn sizes_follow_the_kernel_printer() {
        assert_eq!(print_size(0), "0");
        assert_eq!(print_size(1000), "1000");
        assert_eq!(print_size(1 << 20), "1 MiB");
        assert_eq!(print_size(3_174_400 * 1024), "3100 MiB");
        assert_eq!(print_size(1536), "1536");
        assert_eq!(print_size(4 << 30), "4096 MiB");
    }

    #[test]
    fn generated_text_parses_back() {
        let x = FdInfo::parse(&xe(7, "0000:03:00.0", 5 << 20, 3 << 30));
        assert_eq!(x.malformed, 0);
        assert_eq!(x.regions["gtt"].resident, Some(5 << 20));
        let i = FdInfo::parse(&xe_integrated(9, "0000:00:02.0", 7 << 20));
        assert_eq!(i.malformed, 0);
        assert!(!i.regions.contains_key("vram0"));
        let a = FdInfo::parse(&amdgpu(8, "0000:c1:00.0", 1 << 20, 2 << 30));
        assert_eq!(a.malformed, 0);
        assert_eq!(a.regions["vram"].resident_bytes(), Some(2 << 30));
    }
}
