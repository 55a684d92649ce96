//! Matching the base against facts. A match on versions and conditions is a warning; with the
//! entry's finding signature present it is critical; informational entries match at info. With
//! the signature present (or, the job gone, a critical kernel-log failure of an `after_exit`
//! kind) and no version of the component found, the entry matches at the evidence's severity:
//! it cannot be ruled out. Matches are ranked by severity, then evidence (the signature, then
//! after-exit failures), then version (in a range from the introducing release, from the
//! earliest report, not tied to a release, unknown).

use super::base::{range_of, Base};
use super::facts::{DeviceFact, Facts};
use super::next_step::NextStep;
use super::schema::{Claim, Conditions, Entry, Hardware, Quote, Speaker, Topology, Workaround};
use super::version::Version;
use super::visible::visible;
use crate::findings::{Finding, Severity};
use serde::Serialize;
use std::collections::BTreeSet;

/// One entry that applies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Match {
    /// Entry id.
    pub id: String,
    /// Entry title.
    pub title: String,
    /// warning (versions and conditions), critical (and the finding signature), info
    /// (informational entries).
    pub severity: Severity,
    /// The facts that matched, one human sentence each.
    pub facts: Vec<String>,
    /// What to do.
    pub workarounds: Vec<Workaround>,
    /// Public reports.
    pub links: Vec<String>,
    /// What the entry asserts, each confirmed or suspected.
    pub claims: Vec<Claim>,
    /// What the component's vendor said on the record (its quotes by `vendor`), kept apart
    /// from reporters' measurements.
    pub vendor_statements: Vec<Quote>,
    /// Upstream status.
    pub status: &'static str,
    /// What the job showed of the entry's signature.
    pub evidence: Evidence,
    /// How the entry's version range was checked.
    pub version: VersionCheck,
    /// The first workaround to try and the others.
    pub next_step: Option<NextStep>,
}

/// What the job showed of an entry's signature; orders matches (strongest last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// None: the machine fits the entry, the job showed nothing of it.
    None,
    /// A kernel-log failure of the entry's `after_exit` kinds: the job is gone.
    AfterExit,
    /// The signature finding itself.
    Signature,
}

/// How an entry's version range was checked; orders matches (strongest last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionCheck {
    /// No version of the component was found: the entry cannot be ruled out.
    Unknown,
    /// The entry names no versions.
    NotTied,
    /// A detected version lies in a range that starts at the earliest report.
    InReportedRange,
    /// A detected version lies at or after the release that introduced the defect.
    InIntroducedRange,
}

/// An entry whose hardware is present but that did not match, and why (a version outside its
/// range, no version found, a workaround in effect, too few visible devices).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotMatched {
    /// Entry id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// The outcome of matching.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Assessment {
    /// Matches, most severe first.
    pub matches: Vec<Match>,
    /// Entries for this hardware that did not match.
    pub not_matched: Vec<NotMatched>,
    /// The one thing to try first (the strongest match's first workaround) and the other
    /// matches' workarounds, each once.
    pub next_step: Option<NextStep>,
}

/// Matches every entry of `base` against `facts`.
pub fn assess(base: &Base, facts: &Facts) -> Assessment {
    let mut out = Assessment::default();
    for e in &base.entries {
        match match_entry(base, e, facts) {
            Ok(Some(m)) => out.matches.push(m),
            Ok(None) => {}
            Err(reason) => out.not_matched.push(NotMatched {
                id: e.id.clone(),
                reason,
            }),
        }
    }
    out.matches.sort_by(|a, b| {
        (b.severity, b.evidence, b.version)
            .cmp(&(a.severity, a.evidence, a.version))
            .then(a.id.cmp(&b.id))
    });
    out.next_step = next_step(&out.matches);
    out
}

/// The strongest group's step ([`groups`]).
fn next_step(matches: &[Match]) -> Option<NextStep> {
    group_step(groups(matches).first()?)
}

/// Ranked matches cut into groups that are one verdict: matches of one severity on the same
/// evidence (the signature, or an after-exit failure); a match on no evidence is a group alone.
pub fn groups(matches: &[Match]) -> Vec<&[Match]> {
    let mut out: Vec<&[Match]> = Vec::new();
    let mut start = 0;
    for i in 1..=matches.len() {
        let joins = matches.get(i).is_some_and(|m| {
            let g = &matches[start];
            m.evidence != Evidence::None && (g.severity, g.evidence) == (m.severity, m.evidence)
        });
        if !joins {
            out.push(&matches[start..i]);
            start = i;
        }
    }
    out
}

/// A group's step: its first match's workarounds and the others' as alternatives, ranked by what
/// the reports measured ([`NextStep::rank_by_measurements`]).
pub fn group_step(group: &[Match]) -> Option<NextStep> {
    let (first, rest) = group.split_first()?;
    let mut step = first.next_step.clone()?;
    for m in rest {
        step.add_alternatives(&m.id, &m.workarounds);
    }
    step.rank_by_measurements();
    Some(step)
}

fn hardware_matches(base: &Base, hw: &Hardware, d: &DeviceFact) -> bool {
    let any = hw.devices.is_empty() && hw.families.is_empty() && hw.vendors.is_empty();
    let id = d.pci_id.as_deref();
    (any && d.vendor().is_some())
        || hw.vendors.iter().any(|v| Some(v.as_str()) == d.vendor())
        || hw.devices.iter().any(|x| Some(x.as_str()) == id)
        || hw
            .families
            .iter()
            .filter_map(|f| base.families.get(f))
            .any(|f| f.devices.iter().any(|x| Some(x.as_str()) == id))
}

/// `Ok(None)`: hardware absent (nothing to say); `Err`: present but not matched, and why.
fn match_entry(base: &Base, e: &Entry, facts: &Facts) -> Result<Option<Match>, String> {
    let devices: Vec<&DeviceFact> = facts
        .devices
        .iter()
        .filter(|d| hardware_matches(base, &e.hardware, d))
        .collect();
    let Some(first) = devices.first() else {
        return Ok(None);
    };
    let mut why = vec![describe_devices(&devices)];
    let c = &e.conditions;
    check_conditions(c, first.vendor().unwrap_or(""), &devices, facts, &mut why)?;
    let evidence = signature(e, facts);
    if c.needs_signature && evidence.is_none() {
        let kind = e
            .signature
            .as_ref()
            .map_or("signature", |s| s.kind.as_str());
        return Err(format!("no {kind} finding, which the issue needs"));
    }
    let version = match &e.versions {
        Some(v) => {
            let (check, fact) = version_fact(e, v, facts, evidence.is_some())?;
            why.push(fact);
            check
        }
        None => VersionCheck::NotTied,
    };
    if let Some((_, _, fact)) = &evidence {
        why.push(fact.clone());
    }
    let severity = match &evidence {
        _ if e.informational => Severity::Info,
        // Without a version, the signature's own severity: the evidence alone.
        Some((_, f, _)) if version == VersionCheck::Unknown => f.severity,
        Some(_) => Severity::Critical,
        None => Severity::Warning,
    };
    Ok(Some(Match {
        id: e.id.clone(),
        title: e.title.clone(),
        severity,
        facts: why,
        workarounds: e.workarounds.clone(),
        links: e.links.clone(),
        claims: e.claims.clone(),
        vendor_statements: e
            .quotes
            .iter()
            .filter(|q| q.by == Speaker::Vendor)
            .cloned()
            .collect(),
        status: e.status.as_str(),
        evidence: evidence.map_or(Evidence::None, |(k, _, _)| k),
        version,
        next_step: NextStep::of(&e.id, &e.workarounds, &facts.command),
    }))
}

/// The entry's conditions against the facts: each that holds adds its sentence to `why`; the
/// first that fails is the reason the entry does not match.
fn check_conditions(
    c: &Conditions,
    vendor: &str,
    devices: &[&DeviceFact],
    facts: &Facts,
    why: &mut Vec<String>,
) -> Result<(), String> {
    let (seen, masks) = visible(vendor, devices.len(), &facts.env);
    if let Some(min) = c.min_visible {
        let masked = if masks.is_empty() {
            "no device mask".to_string()
        } else {
            masks.join(" ")
        };
        if seen < min as usize {
            return Err(format!("{seen} visible to the job ({masked}); needs {min}"));
        }
        why.push(format!(
            "{seen} visible to the job ({masked}); the issue needs {min}"
        ));
    }
    if c.topology == Some(Topology::DifferentRootPorts) {
        let ports: BTreeSet<&str> = devices
            .iter()
            .filter_map(|d| d.root_port.as_deref())
            .collect();
        if ports.len() < 2 {
            return Err("the devices are not known to sit under different root ports".into());
        }
        why.push(format!(
            "under different root ports: {}",
            ports.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    for (k, v) in &c.env_present {
        match facts.env.get(k) {
            Some(x) if v == "*" || x == v => why.push(format!("{k}={x} in the job's environment")),
            _ => return Err(format!("{k} is not set to {v} in the job's environment")),
        }
    }
    let wa = &c.env_workaround;
    if !wa.is_empty() && wa.iter().all(|(k, v)| facts.env.get(k) == Some(v)) {
        let set: Vec<String> = wa.iter().map(|(k, v)| format!("{k}={v}")).collect();
        return Err(format!("workaround in effect: {}", set.join(" ")));
    }
    if let Some(fixed) = &c.kernel_fixed {
        why.push(kernel_fact(fixed, facts.kernel.as_deref())?);
    }
    Ok(())
}

/// The entry's signature among the findings (else one of its `after_exit` kinds at critical),
/// and the sentence that says so.
fn signature<'a>(e: &Entry, facts: &'a Facts) -> Option<(Evidence, &'a Finding, String)> {
    let s = e.signature.as_ref()?;
    let whose = |f: &Finding| match (f.rank, f.pid) {
        (Some(r), Some(p)) => format!(" (rank {r}, pid {p})"),
        (None, Some(p)) => format!(" (pid {p})"),
        _ => String::new(),
    };
    if let Some(f) = facts
        .findings
        .iter()
        .find(|f| f.kind == s.kind && s.backing.is_none_or(|b| f.backing == Some(b)))
    {
        let backing = s
            .backing
            .and_then(|b| serde_json::to_value(b).ok())
            .and_then(|v| v.as_str().map(|b| format!(" with {b} backing")))
            .unwrap_or_default();
        let fact = format!("{} finding{backing} present{}", f.kind.as_str(), whose(f));
        return Some((Evidence::Signature, f, fact));
    }
    let f = facts
        .findings
        .iter()
        .find(|f| s.after_exit.contains(&f.kind) && f.severity == Severity::Critical)?;
    let fact = format!(
        "{} of a GPU job process{} in the kernel log: the end of this issue's {} pattern, after \
         the job is gone",
        f.kind.as_str(),
        whose(f),
        s.kind.as_str()
    );
    Some((Evidence::AfterExit, f, fact))
}

fn describe_devices(devices: &[&DeviceFact]) -> String {
    let ids: BTreeSet<String> = devices
        .iter()
        .filter_map(|d| {
            d.pci_id
                .clone()
                .or_else(|| d.vendor().map(|v| format!("{v}:?")))
        })
        .collect();
    let ids: Vec<String> = ids.into_iter().collect();
    format!(
        "{} matching device(s) on the machine ({})",
        devices.len(),
        ids.join(", ")
    )
}

/// Where a detected version lies in the entry's range; no version found is
/// [`VersionCheck::Unknown`] (a fact, not a reason to rule the entry out) when the job showed
/// the signature, else an `Err`.
fn version_fact(
    e: &Entry,
    v: &super::schema::Versions,
    facts: &Facts,
    signature: bool,
) -> Result<(VersionCheck, String), String> {
    let range = range_of(&e.id, v).map_err(|err| err.to_string())?;
    let all: Vec<_> = facts
        .versions
        .iter()
        .filter(|f| f.component == v.component)
        .collect();
    // What the job loaded decides over what is installed.
    let loaded: Vec<_> = all
        .iter()
        .copied()
        .filter(|f| f.loaded_by.is_some())
        .collect();
    let found = if loaded.is_empty() { all } else { loaded };
    if found.is_empty() {
        if signature {
            return Ok((
                VersionCheck::Unknown,
                format!(
                    "{} version unknown, cannot be ruled out ({range})",
                    v.component
                ),
            ));
        }
        return Err(format!("no {} version found", v.component));
    }
    for f in &found {
        if Version::parse(&f.version).is_some_and(|x| range.contains(&x)) {
            let check = if range.low_is_introduced {
                VersionCheck::InIntroducedRange
            } else {
                VersionCheck::InReportedRange
            };
            return Ok((
                check,
                format!("{} {} from {}: {range}", v.component, f.version, f.source),
            ));
        }
    }
    let seen: BTreeSet<&str> = found.iter().map(|f| f.version.as_str()).collect();
    Err(format!(
        "{} {} is outside the affected range ({range})",
        v.component,
        seen.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

/// `Err` when the running kernel is at or after the release that fixes the defect.
fn kernel_fact(fixed: &str, running: Option<&str>) -> Result<String, String> {
    let fix = Version::parse(fixed);
    match (running, running.and_then(Version::parse)) {
        (Some(text), Some(k)) if fix.as_ref().is_some_and(|f| k >= *f) => Err(format!(
            "kernel {text} has the fix (Linux {fixed} and later)"
        )),
        (Some(text), Some(_)) => Ok(format!("kernel {text} is before the fix in Linux {fixed}")),
        _ => Ok(format!(
            "kernel release not known (the fix is in Linux {fixed})"
        )),
    }
}
