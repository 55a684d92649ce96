//! Value parsers: every value is parsed and range-checked here, so that a bad one is a usage
//! error (exit 2) naming the value and the fix, before any work.

use crate::help_text;
use clap::builder::PossibleValue;
use gpuledger::job_output::RateSpec;
use gpuledger::sim::Scenario;
use gpuledger::units::{parse_bytes, parse_size_spec, short_unit_note, SizeError, SizeSpec};
use std::collections::BTreeSet;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;

/// `--label KEY=VALUE`.
pub(crate) fn label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v))
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!(
            "{s:?} is not KEY=VALUE with a KEY of letters, digits and _"
        )),
    }
}

/// `--slurm-job ID`: digits, as Slurm numbers jobs.
pub(crate) fn slurm_job_id(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a Slurm job id (digits, as in $SLURM_JOB_ID)"
        ))
    }
}

/// `--rate NAME=REGEX[:UNIT]`.
pub(crate) fn parse_rate(s: &str) -> Result<RateSpec, String> {
    RateSpec::parse(s).map_err(|e| e.to_string())
}

/// A size that must be above zero (a machine's RAM, an allocator segment).
pub(crate) fn nonzero_bytes(text: &str) -> Result<u64, String> {
    match size(text) {
        Ok(0) => Err(format!("invalid size {text:?}: must be more than 0")),
        Ok(b) => Ok(b),
        Err(e) => Err(e.to_string()),
    }
}

/// Prints "8G read as 8 GiB" for a size with a short unit, once per value for the whole run.
pub(crate) fn note_short_unit(text: &str) {
    static NOTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let Some(note) = short_unit_note(text) else {
        return;
    };
    let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
    if noted.insert(note.clone()) {
        eprintln!("gpuledger: {note}");
    }
}

/// An absolute size with a unit (`24GiB`, `8G`); a bare number is refused with the fix.
pub(crate) fn size(text: &str) -> Result<u64, SizeError> {
    let bytes = parse_bytes(text)?;
    note_short_unit(text);
    Ok(bytes)
}

/// A size with a unit, or a share of a reference total (`10%`).
pub(crate) fn size_spec(text: &str) -> Result<SizeSpec, SizeError> {
    let spec = parse_size_spec(text)?;
    note_short_unit(text);
    Ok(spec)
}

/// Checks one `--threshold NAME=VALUE` so that a bad one is a usage error naming its cause (clap
/// prints only the error's own message, so the chain is joined here); the context applies it.
pub(crate) fn threshold(text: &str) -> Result<String, String> {
    if let Err(e) = gpuledger::findings::Thresholds::default().set(text) {
        let mut message = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            message.push_str(&format!(": {c}"));
            cause = c.source();
        }
        return Err(message);
    }
    if let Some((_, value)) = text.split_once('=') {
        note_short_unit(value);
    }
    Ok(text.to_string())
}

/// A scenario's name with what it models, for `simulate --help`.
pub(crate) fn scenario_value(s: Scenario) -> PossibleValue {
    PossibleValue::new(s.name()).help(help_text::scenario(s))
}

/// A scenario by name (the possible-values parser in front of it lists the names).
pub(crate) fn scenario(name: String) -> Result<Scenario, String> {
    Scenario::parse(&name).ok_or_else(|| format!("unknown scenario {name:?}"))
}

/// A `--visible` value by name (the possible-values parser in front of it lists the names).
pub(crate) fn visibility(name: String) -> Result<gpuledger::sim::Visibility, String> {
    gpuledger::sim::Visibility::parse(&name).ok_or_else(|| format!("unknown visibility {name:?}"))
}

/// `--listen`: `HOST:PORT` (resolved through the system resolver, first address wins) or `:PORT`,
/// which means every interface, as in Prometheus exporters' `--web.listen-address`.
pub(crate) fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    let wanted = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    let bad = |why: String| {
        format!("invalid address {text:?}: {why}; write HOST:PORT or :PORT, e.g. 127.0.0.1:9464")
    };
    wanted
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("the name resolves to no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_port_only_is_every_interface_and_names_resolve() {
        assert_eq!(listen_addr(":9464"), Ok("0.0.0.0:9464".parse().unwrap()));
        assert!(listen_addr("localhost:9464").unwrap().ip().is_loopback());
        assert_eq!(listen_addr("[::1]:1"), Ok("[::1]:1".parse().unwrap()));
        assert!(listen_addr("9464").is_err());
        assert!(listen_addr(":99999").is_err());
    }
}
