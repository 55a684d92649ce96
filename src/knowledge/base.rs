//! Loading and checking the base: the entries embedded at build time (`build.rs` lists
//! `known-issues/entries/*.toml`), or any directory of the same layout.

use super::schema::{Component, Entry, Family, Status};
use super::version::{Range, Version};
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/known_issues.rs"));
}

/// A base that does not load; names the file and, for a bad value, the field.
#[derive(Debug, Error)]
pub enum KnowledgeError {
    /// TOML syntax, an unknown field, a missing field or a wrong type.
    #[error("{file}: {source}")]
    Parse {
        /// The file.
        file: String,
        /// The parser's message (it names the field).
        source: toml::de::Error,
    },
    /// A value the schema cannot express as wrong.
    #[error("{file}: field `{field}`: {problem}")]
    Invalid {
        /// The file.
        file: String,
        /// The field.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A base directory that cannot be read.
    #[error("cannot read known-issues directory {path}")]
    Read {
        /// The directory.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// The loaded base.
#[derive(Debug, Clone)]
pub struct Base {
    /// Entries, sorted by id.
    pub entries: Vec<Entry>,
    /// Device families by name.
    pub families: BTreeMap<String, Family>,
    /// Components by name.
    pub components: BTreeMap<String, Component>,
    /// Where the entries came from: the built-in base, then each user directory read.
    pub sources: Vec<super::overlay::BaseSource>,
}

fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, KnowledgeError> {
    toml::from_str(text).map_err(|source| KnowledgeError::Parse {
        file: file.to_string(),
        source,
    })
}

impl Base {
    /// The base compiled into this binary.
    pub fn embedded() -> Result<Base, KnowledgeError> {
        Base::from_texts(embedded::FAMILIES, embedded::COMPONENTS, embedded::ENTRIES)
    }

    /// Loads a directory with `families.toml`, `components.toml` and `entries/*.toml`.
    pub fn from_dir(dir: &Path) -> Result<Base, KnowledgeError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|source| KnowledgeError::Read {
                path: p.display().to_string(),
                source,
            })
        };
        let families = read(&dir.join("families.toml"))?;
        let components = read(&dir.join("components.toml"))?;
        let entries_dir = dir.join("entries");
        let listing = std::fs::read_dir(&entries_dir).map_err(|source| KnowledgeError::Read {
            path: entries_dir.display().to_string(),
            source,
        })?;
        let mut files = Vec::new();
        for e in listing.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".toml") {
                files.push((name, read(&e.path())?));
            }
        }
        files.sort();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        Base::from_texts(&families, &components, &refs)
    }

    /// Parses and checks the three parts; `entries` are (file name, text).
    pub fn from_texts(
        families: &str,
        components: &str,
        entries: &[(&str, &str)],
    ) -> Result<Base, KnowledgeError> {
        let mut base = Base {
            families: parse("known-issues/families.toml", families)?,
            components: parse("known-issues/components.toml", components)?,
            entries: Vec::new(),
            sources: Vec::new(),
        };
        for (name, fam) in &base.families {
            for d in &fam.devices {
                check_pci_pair("known-issues/families.toml", &format!("{name}.devices"), d)?;
            }
        }
        for (file, text) in entries {
            let entry = base.parse_entry(&format!("known-issues/entries/{file}"), file, text)?;
            base.entries.push(entry);
        }
        base.entries.sort_by(|a, b| a.id.cmp(&b.id));
        base.sources
            .push(super::overlay::BaseSource::built_in(&base.entries));
        Ok(base)
    }

    /// Parses and checks one entry file; `label` names it in errors, `name` is its file name.
    pub(crate) fn parse_entry(
        &self,
        label: &str,
        name: &str,
        text: &str,
    ) -> Result<Entry, KnowledgeError> {
        let entry: Entry = parse(label, text)?;
        self.check(label, name, &entry)?;
        Ok(entry)
    }

    /// The entry with `id`.
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }
}

fn invalid(file: &str, field: &str, problem: impl Into<String>) -> KnowledgeError {
    KnowledgeError::Invalid {
        file: file.to_string(),
        field: field.to_string(),
        problem: problem.into(),
    }
}

fn check_pci_pair(file: &str, field: &str, v: &str) -> Result<(), KnowledgeError> {
    let ok = v.split_once(':').is_some_and(|(a, b)| {
        [a, b]
            .iter()
            .all(|x| x.len() == 4 && x.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
    });
    if ok {
        Ok(())
    } else {
        Err(invalid(
            file,
            field,
            format!("{v:?} is not a PCI id pair such as \"8086:e223\" (lower-case hex)"),
        ))
    }
}

fn check_date(file: &str, field: &str, v: &str) -> Result<(), KnowledgeError> {
    let b = v.as_bytes();
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(invalid(
            file,
            field,
            format!("{v:?} is not a date YYYY-MM-DD"),
        ))
    }
}

impl Base {
    fn check(&self, file: &str, name: &str, e: &Entry) -> Result<(), KnowledgeError> {
        if Some(e.id.as_str()) != name.strip_suffix(".toml") {
            return Err(invalid(
                file,
                "id",
                format!("{:?} must equal the file name without .toml", e.id),
            ));
        }
        check_date(file, "last_checked", &e.last_checked)?;
        if let Some(u) = &e.updated {
            check_date(file, "updated", u)?;
        }
        check_sources(file, e)?;
        check_measured(file, e)?;
        for d in &e.hardware.devices {
            check_pci_pair(file, "hardware.devices", d)?;
        }
        for f in &e.hardware.families {
            if !self.families.contains_key(f) {
                return Err(invalid(
                    file,
                    "hardware.families",
                    format!("{f:?} is not in families.toml"),
                ));
            }
        }
        for v in &e.hardware.vendors {
            check_pci_pair(file, "hardware.vendors", &format!("{v}:0000"))?;
        }
        if e.versions.is_none() && e.status == Status::Fixed {
            return Err(invalid(
                file,
                "versions",
                "a fixed issue needs [versions] with `fixed`",
            ));
        }
        if let Some(v) = &e.versions {
            if !self.components.contains_key(&v.component) {
                return Err(invalid(
                    file,
                    "versions.component",
                    format!("{:?} is not in components.toml", v.component),
                ));
            }
            range_of(file, v)?;
            if e.status == Status::Fixed && v.fixed.is_none() {
                return Err(invalid(
                    file,
                    "versions.fixed",
                    "status is \"fixed\": name the fixed release",
                ));
            }
        }
        if e.conditions.needs_signature && e.signature.is_none() {
            return Err(invalid(
                file,
                "conditions.needs_signature",
                "give the [signature] the issue needs",
            ));
        }
        if let Some(k) = &e.conditions.kernel_fixed {
            version(file, "conditions.kernel_fixed", k)?;
        }
        Ok(())
    }
}

/// Links are public reports; every entry quotes at least one of them and states at least one
/// claim with its confidence.
fn check_sources(file: &str, e: &Entry) -> Result<(), KnowledgeError> {
    if e.links.is_empty() {
        return Err(invalid(file, "links", "give at least one public report"));
    }
    if let Some(l) = e.links.iter().find(|l| !l.starts_with("https://")) {
        return Err(invalid(
            file,
            "links",
            format!(
                "{l:?} is not an https:// URL of a public report (gpuledger's own limitations \
                 go to README.md, not into the base)"
            ),
        ));
    }
    if e.quotes.is_empty() {
        return Err(invalid(
            file,
            "quotes",
            "quote at least one public report: [[quotes]] link, date, text",
        ));
    }
    for q in &e.quotes {
        if !e.links.contains(&q.link) {
            return Err(invalid(
                file,
                "quotes.link",
                format!("{:?} is not one of the entry's links", q.link),
            ));
        }
        check_date(file, "quotes.date", &q.date)?;
        if q.text.trim().is_empty() {
            return Err(invalid(file, "quotes.text", "empty quote"));
        }
    }
    if e.claims.is_empty() {
        return Err(invalid(
            file,
            "claims",
            "state at least one claim: [[claims]] claim, confidence = confirmed | suspected",
        ));
    }
    if e.claims.iter().any(|c| c.claim.trim().is_empty()) {
        return Err(invalid(file, "claims.claim", "empty claim"));
    }
    Ok(())
}

/// A measured workaround names one of the entry's reports, a date, and host RAM held with it
/// no larger than without it.
fn check_measured(file: &str, e: &Entry) -> Result<(), KnowledgeError> {
    for m in e.workarounds.iter().filter_map(|w| w.measured.as_ref()) {
        if !e.links.contains(&m.link) {
            return Err(invalid(
                file,
                "workarounds.measured.link",
                format!("{:?} is not one of the entry's links", m.link),
            ));
        }
        check_date(file, "workarounds.measured.date", &m.date)?;
        for (field, text) in [
            ("host_held", &m.host_held),
            ("baseline_held", &m.baseline_held),
        ] {
            if let Err(e) = crate::units::parse_bytes(text) {
                return Err(invalid(
                    file,
                    &format!("workarounds.measured.{field}"),
                    format!("{text:?}: {e}"),
                ));
            }
        }
        if m.baseline_held_bytes() == 0 {
            return Err(invalid(
                file,
                "workarounds.measured.baseline_held",
                "the default run held no host RAM: nothing to compare against",
            ));
        }
        if m.host_held_bytes() > m.baseline_held_bytes() {
            return Err(invalid(
                file,
                "workarounds.measured.host_held",
                "more than baseline_held: a workaround that holds more is not one",
            ));
        }
    }
    Ok(())
}

fn version(file: &str, field: &str, text: &str) -> Result<Version, KnowledgeError> {
    Version::parse(text)
        .ok_or_else(|| invalid(file, field, format!("{text:?} is not a dotted version")))
}

/// The affected range of `v`; `file` names the entry in errors.
pub(crate) fn range_of(file: &str, v: &super::schema::Versions) -> Result<Range, KnowledgeError> {
    let mut reported = Vec::new();
    for r in &v.reported {
        reported.push(version(file, "versions.reported", r)?);
    }
    let introduced = v
        .introduced
        .as_deref()
        .map(|t| version(file, "versions.introduced", t))
        .transpose()?;
    let fixed = v
        .fixed
        .as_deref()
        .map(|t| version(file, "versions.fixed", t))
        .transpose()?;
    let (low, low_is_introduced) =
        match (introduced, reported.iter().min()) {
            (Some(i), _) => (i, true),
            (None, Some(r)) => (r.clone(), false),
            (None, None) => return Err(invalid(
                file,
                "versions",
                "give `introduced` or at least one `reported` release (or leave out [versions])",
            )),
        };
    if let Some(f) = &fixed {
        if *f <= low {
            return Err(invalid(
                file,
                "versions.fixed",
                format!("{f} is not after {low}"),
            ));
        }
        if let Some(r) = reported.iter().find(|r| *r >= f) {
            return Err(invalid(
                file,
                "versions.reported",
                format!("{r} is at or after the fix {f}"),
            ));
        }
    }
    Ok(Range {
        low,
        low_is_introduced,
        fixed,
    })
}
