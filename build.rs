//! Embeds the known-issues base (`known-issues/`) so that adding an entry is adding a TOML file:
//! the list of entry files is generated here, each file is included with `include_str!`.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("known-issues");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(dir.join("entries"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".toml"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out = String::from("/// Entry files of the embedded base: (file name, text).\n");
    out.push_str("pub(crate) const ENTRIES: &[(&str, &str)] = &[\n");
    for n in &names {
        let path = dir.join("entries").join(n);
        let _ = writeln!(
            out,
            "    ({n:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    for f in ["families.toml", "components.toml"] {
        let path = dir.join(f);
        let name = f.trim_end_matches(".toml").to_uppercase();
        let _ = writeln!(
            out,
            "/// `known-issues/{f}`.\npub(crate) const {name}: &str = include_str!({:?});",
            path.display().to_string()
        );
    }
    let dest =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("known_issues.rs");
    std::fs::write(dest, out).expect("write known_issues.rs");
}
