//! Command lines as the exporter discloses them. `/snapshot.json` carries each GPU process's
//! command line, and command lines carry secrets (`--hf-token=…`, `AWS_SECRET_ACCESS_KEY=…`,
//! `https://user:pass@host/…`); anyone who reaches the port reads them. By default the exporter
//! replaces what looks like a secret with [`REDACTED`]; `serve --show-cmdline` opts out.
//!
//! What counts as secret-looking: the value of an option or an assignment whose name has a part
//! (split at `-`, `_`, `.`) such as `token`, `password`, `secret`, `key` or `credentials`, whether
//! the value follows `=` or is the next argument; and the password of a URL's user information.

use crate::ledger::Ledger;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Name parts that mark an option or variable as holding a secret.
const SECRET_PARTS: [&str; 12] = [
    "token",
    "password",
    "passwd",
    "pass",
    "secret",
    "key",
    "apikey",
    "credential",
    "credentials",
    "auth",
    "pat",
    "pwd",
];

/// Whether an option or variable name (`--hf-token`, `AWS_SECRET_ACCESS_KEY`) names a secret.
fn names_secret(name: &str) -> bool {
    name.trim_start_matches('-')
        .split(['-', '_', '.'])
        .any(|part| {
            let part = part.to_ascii_lowercase();
            SECRET_PARTS.contains(&part.as_str())
                || part.ends_with("token")
                || part.ends_with("password")
        })
}

/// A URL's password replaced (`https://user:<redacted>@host`); other text unchanged.
fn redact_url_password(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority_end = after.find(['/', '?', '#', ' ']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                let userinfo = &authority[..userinfo_end];
                match userinfo.split_once(':') {
                    Some((user, _)) => out.push_str(&format!("{user}:{REDACTED}")),
                    None => out.push_str(REDACTED),
                }
                out.push_str(&authority[userinfo_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    out.push_str(rest);
    out
}

/// `argv` with secret-looking values replaced by [`REDACTED`].
pub fn redact_args(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_is_secret = false;
    for arg in argv {
        if std::mem::take(&mut next_is_secret) && !arg.starts_with('-') {
            out.push(REDACTED.to_string());
            continue;
        }
        if let Some((name, _)) = arg.split_once('=') {
            if names_secret(name) && !name.contains("://") {
                out.push(format!("{name}={REDACTED}"));
                continue;
            }
        } else if arg.starts_with('-') && names_secret(arg) {
            next_is_secret = true;
        }
        out.push(redact_url_password(arg));
    }
    out
}

/// `ledger` with every process's command line redacted.
pub fn redact_ledger(ledger: &mut Ledger) {
    for p in &mut ledger.processes {
        p.cmdline = redact_args(&p.cmdline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn secret_looking_arguments_are_redacted() {
        let got = redact_args(&args(&[
            "python3",
            "train.py",
            "--hf-token=hf_abcdef",
            "--token",
            "tok123",
            "--api-key",
            "k-1",
            "AWS_SECRET_ACCESS_KEY=wJalr",
            "HF_TOKEN=hf_x",
            "--password=hunter2",
            "--db=postgres://admin:s3cret@db:5432/x",
            "https://user:pw@example.com/path?q=1",
            "--lr=0.1",
            "--keep",
            "--epochs",
            "3",
        ]));
        assert_eq!(
            got,
            args(&[
                "python3",
                "train.py",
                "--hf-token=<redacted>",
                "--token",
                "<redacted>",
                "--api-key",
                "<redacted>",
                "AWS_SECRET_ACCESS_KEY=<redacted>",
                "HF_TOKEN=<redacted>",
                "--password=<redacted>",
                "--db=postgres://admin:<redacted>@db:5432/x",
                "https://user:<redacted>@example.com/path?q=1",
                "--lr=0.1",
                "--keep",
                "--epochs",
                "3",
            ])
        );
    }

    #[test]
    fn a_flag_without_a_value_does_not_swallow_the_next_option() {
        assert_eq!(
            redact_args(&args(&["--use-auth", "--verbose"])),
            args(&["--use-auth", "--verbose"])
        );
    }

    proptest! {
        #[test]
        fn a_secret_never_survives(
            secret in "[A-Za-z0-9]{12,20}",
            name in "--(hf-token|api-key|PASSWORD|db-secret)|HF_TOKEN|AWS_SECRET_ACCESS_KEY",
        ) {
            for argv in [
                vec![format!("{name}={secret}")],
                vec![format!("--{}", name.trim_start_matches('-')), secret.clone()],
                vec![format!("https://u:{secret}@h/x")],
            ] {
                let out = redact_args(&argv).join(" ");
                prop_assert!(!out.contains(&secret), "{argv:?} -> {out}");
            }
        }
    }
}
