//! Bases a user updates without a new binary: directories of entry files (`*.toml`, the schema
//! of `known-issues/entries/`) read after the built-in base, each entry checked exactly as a
//! built-in one. A new id is added; an id the base already has is replaced only by an entry
//! whose date (`updated`, else `last_checked`) is later, else it is ignored and the source says
//! why. The directories are gpuledger's own configuration, not part of the machine observed, so
//! they are read from this machine's filesystem, never through a capture's `Root`.

use super::base::{Base, KnowledgeError};
use super::schema::Entry;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The system directory read when it exists.
pub const SYSTEM_DIR: &str = "/etc/gpuledger/known-issues.d";

/// One base the entries came from, as doctor reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseSource {
    /// `built-in`, or the directory read.
    pub origin: String,
    /// Entries it holds.
    pub entries: usize,
    /// The latest entry date in it (`YYYY-MM-DD`), if any.
    pub date: Option<String>,
    /// Ids it added to the base.
    pub added: Vec<String>,
    /// Ids whose entry it replaced (its entry was newer).
    pub replaced: Vec<String>,
    /// Ids it also had but did not replace, each with why.
    pub ignored: Vec<(String, String)>,
}

impl BaseSource {
    /// The built-in base's source.
    pub(crate) fn built_in(entries: &[Entry]) -> BaseSource {
        BaseSource {
            origin: "built-in".into(),
            entries: entries.len(),
            date: latest(entries.iter()),
            added: Vec::new(),
            replaced: Vec::new(),
            ignored: Vec::new(),
        }
    }

    /// `built-in (16 entries, newest 2026-12-05)`, with what a user base changed.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "{} ({} entries, newest {})",
            self.origin,
            self.entries,
            self.date.as_deref().unwrap_or("-")
        );
        if !self.added.is_empty() {
            s.push_str(&format!("; adds {}", self.added.join(", ")));
        }
        if !self.replaced.is_empty() {
            s.push_str(&format!("; replaces {}", self.replaced.join(", ")));
        }
        for (id, why) in &self.ignored {
            s.push_str(&format!("; ignores {id}: {why}"));
        }
        s
    }
}

fn latest<'a>(entries: impl Iterator<Item = &'a Entry>) -> Option<String> {
    entries.map(|e| e.date().to_string()).max()
}

/// The directories a run reads after the built-in base: the system directory when it exists,
/// then `extra` (`--known-issues DIR`), which must exist.
pub fn directories(extra: Option<&Path>) -> Vec<PathBuf> {
    let system = Path::new(SYSTEM_DIR);
    let mut out: Vec<PathBuf> = system
        .is_dir()
        .then(|| system.to_path_buf())
        .into_iter()
        .collect();
    out.extend(extra.map(Path::to_path_buf));
    out
}

impl Base {
    /// The built-in base with the system directory and `extra` read over it ([`directories`]).
    pub fn installed(extra: Option<&Path>) -> Result<Base, KnowledgeError> {
        let mut base = Base::embedded()?;
        for dir in directories(extra) {
            base.overlay(&dir)?;
        }
        Ok(base)
    }

    /// Reads the entry files of `dir` over this base; an unreadable directory or a bad entry is
    /// an error naming the file and the field.
    pub fn overlay(&mut self, dir: &Path) -> Result<(), KnowledgeError> {
        let read_err = |path: &Path, source| KnowledgeError::Read {
            path: path.display().to_string(),
            source,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| read_err(dir, e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        let mut read = Vec::new();
        for path in &files {
            let text = std::fs::read_to_string(path).map_err(|e| read_err(path, e))?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let label = path.display().to_string();
            read.push(self.parse_entry(&label, name.as_deref().unwrap_or(""), &text)?);
        }
        let mut source = BaseSource {
            origin: dir.display().to_string(),
            entries: read.len(),
            date: latest(read.iter()),
            added: Vec::new(),
            replaced: Vec::new(),
            ignored: Vec::new(),
        };
        for entry in read {
            self.merge(entry, &mut source);
        }
        self.entries.sort_by(|a, b| a.id.cmp(&b.id));
        self.sources.push(source);
        Ok(())
    }

    fn merge(&mut self, entry: Entry, source: &mut BaseSource) {
        match self.entries.iter_mut().find(|e| e.id == entry.id) {
            None => {
                source.added.push(entry.id.clone());
                self.entries.push(entry);
            }
            Some(old) if entry.date() > old.date() => {
                source.replaced.push(entry.id.clone());
                *old = entry;
            }
            Some(old) => source.ignored.push((
                entry.id.clone(),
                format!(
                    "dated {}, not newer than the base's {}",
                    entry.date(),
                    old.date()
                ),
            )),
        }
    }
}
