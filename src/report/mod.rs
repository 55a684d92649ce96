//! `report`: a Markdown bug report a maintainer can act on without asking back. The
//! `intel-compute-runtime` template follows that project's Linux GPU driver issue form (checklist,
//! GPU hardware, DRI devices, hardware info, driver version and installation, distribution,
//! kernel, packages, behaviour, steps, reproduction rate, regression, logs); `generic` is the same
//! evidence without the form's fields. Whatever was not found says "not found".

mod sections;

use crate::findings::Finding;
use crate::ledger::Ledger;
use crate::recording::Recording;
use crate::sources::system_info::SystemInfo;

/// Which template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// intel/compute-runtime's issue form.
    IntelComputeRuntime,
    /// A plain report for any driver or runtime.
    Generic,
}

/// Everything a report is made from.
#[derive(Debug)]
pub struct ReportInput<'a> {
    /// Template.
    pub template: Template,
    /// Hide hostnames and user names.
    pub redact: bool,
    /// The current snapshot's ledger (the machine or `--root`).
    pub ledger: &'a Ledger,
    /// Its findings.
    pub findings: &'a [Finding],
    /// Facts about the machine.
    pub system: &'a SystemInfo,
    /// Zero, one or two recordings (name, recording): with two, the diff table is included.
    pub recordings: &'a [(String, Recording)],
}

/// Renders the report.
pub fn render(input: &ReportInput) -> String {
    let mut out = sections::render(input);
    if input.redact {
        out = redact(&out, input.system.hostname.as_deref());
    }
    out
}

/// Replaces the hostname and `/home/<user>` / `user@host` names.
fn redact(text: &str, hostname: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut l = line.to_string();
        if let Some(h) = hostname.filter(|h| h.len() > 1) {
            l = l.replace(h, "<host>");
        }
        while let Some(i) = l.find("/home/") {
            let rest = &l[i + 6..];
            let end = rest
                .find(|c: char| c == '/' || c.is_whitespace())
                .unwrap_or(rest.len());
            if &rest[..end] == "<user>" {
                break;
            }
            l = format!("{}/home/<user>{}", &l[..i], &rest[end..]);
        }
        if let Some(open) = l.find(" (") {
            if let Some(at) = l[open..].find('@') {
                let s = open + 2;
                let e = open + at;
                if l.starts_with("| kernel") || l.contains("Linux version") {
                    let close = l[e..].find(')').map(|c| e + c).unwrap_or(e);
                    l = format!("{}<user>@<host>{}", &l[..s], &l[close..]);
                }
            }
        }
        out.push_str(&l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_names() {
        let t = "| kernel | Linux version 7.1.3 (builder@buildhost) #1 |\ncmd /home/alice/run.py on node7\n";
        let r = redact(t, Some("node7"));
        assert_eq!(r, "| kernel | Linux version 7.1.3 (<user>@<host>) #1 |\ncmd /home/<user>/run.py on <host>\n");
    }
}
