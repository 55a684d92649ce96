use super::*;
use std::collections::HashMap;

fn decide(
    env: &[(&str, &str)],
    ldconfig: Option<&str>,
    files: &[(&str, &[u8])],
) -> Result<(), ZeOff> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let files: HashMap<PathBuf, Vec<u8>> = files
        .iter()
        .map(|(p, b)| (PathBuf::from(p), b.to_vec()))
        .collect();
    let var = |k: &str| env.get(k).cloned();
    let read = |p: &Path| files.get(p).cloned();
    let is_file = |p: &Path| files.contains_key(p);
    level_zero(
        Path::new("/opt/gl/libgpuledger_tracer.so"),
        &ZeInputs {
            var: &var,
            ldconfig,
            read: &read,
            is_file: &is_file,
        },
    )
}

const CACHE: &str =
    "\tlibze_loader.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libze_loader.so.1\n";

#[test]
fn the_loader_is_found_in_ldconfig_or_a_known_folder() {
    assert_eq!(decide(&[], Some(CACHE), &[]), Ok(()));
    assert_eq!(decide(&[], Some("libc.so.6\n"), &[]), Err(ZeOff::NoLoader));
    assert_eq!(
        decide(&[], None, &[("/usr/lib64/libze_loader.so.1", b"")]),
        Ok(())
    );
    let custom = [("LD_LIBRARY_PATH", "/x/lib")];
    assert_eq!(
        decide(&custom, None, &[("/x/lib/libze_loader.so.1", b"")]),
        Ok(())
    );
}

#[test]
fn another_level_zero_tool_keeps_the_interposer_out() {
    let shim: &[u8] = b"\x7fELF....zeContextMakeMemoryResident\0zeMemFree\0";
    let preload = [("LD_PRELOAD", "/home/u/libshim.so /usr/lib/libjemalloc.so")];
    let files = [
        ("/home/u/libshim.so", shim),
        ("/usr/lib/libjemalloc.so", b"malloc\0" as &[u8]),
    ];
    assert_eq!(
        decide(&preload, Some(CACHE), &files),
        Err(ZeOff::Preloaded("/home/u/libshim.so".into()))
    );
    let harmless = [(
        "LD_PRELOAD",
        "/usr/lib/libjemalloc.so:/opt/gl/libgpuledger_tracer.so",
    )];
    assert_eq!(decide(&harmless, Some(CACHE), &files), Ok(()));
    let layer = [(TRACING_LAYER_ENV, "1")];
    assert_eq!(
        decide(&layer, Some(CACHE), &[]),
        Err(ZeOff::TracingLayer("1".into()))
    );
    assert_eq!(
        decide(&[(TRACING_LAYER_ENV, "0")], Some(CACHE), &[]),
        Ok(())
    );
}

#[test]
fn the_tracer_goes_first_in_the_preload_list() {
    let t = Path::new("/opt/gl/libgpuledger_tracer.so");
    assert_eq!(preload_value(t, None), "/opt/gl/libgpuledger_tracer.so");
    assert_eq!(
        preload_value(t, Some(" ")),
        "/opt/gl/libgpuledger_tracer.so"
    );
    assert_eq!(
        preload_value(t, Some("/usr/lib/libjemalloc.so")),
        "/opt/gl/libgpuledger_tracer.so:/usr/lib/libjemalloc.so"
    );
    // Under an enclosing gpuledger whose copy of the tracer is already preloaded.
    assert_eq!(
        preload_value(
            t,
            Some("/usr/lib/libjemalloc.so /tmp/x/libgpuledger_tracer.so")
        ),
        "/opt/gl/libgpuledger_tracer.so:/usr/lib/libjemalloc.so"
    );
}

#[test]
fn only_another_tool_is_worth_saying_in_show() {
    let off = format!("off: {}", ZeOff::TracingLayer("1".into()));
    assert!(off_worth_saying(&off).is_some_and(|w| w.contains("ZE_ENABLE_TRACING_LAYER=1")));
    assert_eq!(off_worth_saying(&format!("off: {}", ZeOff::NoLoader)), None);
    assert_eq!(off_worth_saying("on"), None);
}

#[test]
fn a_tracer_path_ld_preload_would_split_is_refused() {
    let var = |_: &str| None;
    let read = |_: &Path| None;
    let is_file = |_: &Path| true;
    let i = ZeInputs {
        var: &var,
        ldconfig: Some(CACHE),
        read: &read,
        is_file: &is_file,
    };
    let odd = Path::new("/home/a b/libgpuledger_tracer.so");
    assert_eq!(
        level_zero(odd, &i),
        Err(ZeOff::UnpreloadablePath(odd.into()))
    );
}

#[test]
fn a_preload_that_is_no_regular_file_or_is_huge_is_read_within_a_bound() {
    let started = std::time::Instant::now();
    assert!(super::read_library(Path::new("/dev/zero")).is_err());
    assert!(super::read_library(Path::new("/")).is_err());
    let big = tempfile::NamedTempFile::new().unwrap();
    big.as_file().set_len(super::MAX_LIBRARY_BYTES * 2).unwrap();
    let bytes = super::read_library(big.path()).unwrap();
    assert_eq!(bytes.len() as u64, super::MAX_LIBRARY_BYTES);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
