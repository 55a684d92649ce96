//! Which option, variable and header names hold a secret. A name is split into lower-case parts
//! at `-`, `_`, `.` and camelCase boundaries (`clientSecret`, `HFToken`, `AWS_SECRET_ACCESS_KEY`
//! and `--api-key` split alike, by `heck`), and the parts are matched against the tables below.

use heck::ToSnakeCase;

/// What follows a secret name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    /// The secret itself.
    Value,
    /// An HTTP authorization: a scheme (`Bearer`, `Basic`) may come before the secret.
    Credentials,
}

/// Parts that are a secret wherever they stand in a name, and one-word compounds ending in one
/// of them (`pgpassword`, `clientsecret`, `hftoken`).
const ALWAYS: [&str; 14] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secrets",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "credentials",
    "cookie",
    "jwt",
    "token",
    "sshpass",
];

/// Parts that are a secret as a whole part only (`--pass`, not `--passes`; `--auth`, not
/// `--author`).
const WHOLE: [&str; 8] = [
    "pwd", "pass", "creds", "auth", "oauth", "session", "pat", "bearer",
];

/// Parts naming an HTTP authorization header, whose value may start with a scheme word.
const AUTHORIZATION: [&str; 2] = ["authorization", "authentication"];

/// Parts before `key` that make it a secret key (`api_key`, `--private-key`); a `key` alone, or
/// the last part of an upper-case variable (`STRIPE_KEY`), is one too. `--sort-key` is not.
const KEY_KINDS: [&str; 20] = [
    "api",
    "access",
    "secret",
    "private",
    "client",
    "encryption",
    "signing",
    "sign",
    "master",
    "license",
    "app",
    "account",
    "service",
    "auth",
    "subscription",
    "admin",
    "root",
    "deploy",
    "hmac",
    "shared",
];

/// Parts before `token` that make it a vocabulary entry or a count, not a credential
/// (`--pad-token-id`, `--eos-token`, `--max-token`).
const TOKEN_NOT_SECRET: [&str; 14] = [
    "pad", "bos", "eos", "unk", "sep", "cls", "mask", "special", "max", "min", "num", "start",
    "end", "stop",
];

/// Last parts that name something about a secret rather than the secret: `--token-file PATH`,
/// `--secret-name NAME`, `--auth-type basic`, `--password-timeout 30`.
const ABOUT: [&str; 22] = [
    "file", "files", "path", "dir", "name", "type", "method", "mode", "url", "uri", "endpoint",
    "host", "server", "port", "len", "length", "size", "count", "limit", "budget", "timeout",
    "ttl",
];

/// First parts that make a switch that takes no value: `--no-password`, `--disable-auth`.
const NEGATIONS: [&str; 4] = ["no", "disable", "without", "skip"];

/// Variables whose names look like a password but are the shell's working directories.
const SHELL_DIRS: [&str; 2] = ["PWD", "OLDPWD"];

/// Whether `name` (without its leading dashes or with them) names a secret, and what form the
/// secret takes.
pub(super) fn classify(name: &str) -> Option<Expect> {
    let name = name.trim_start_matches('-');
    if SHELL_DIRS.contains(&name) {
        return None;
    }
    let parts: Vec<String> = name
        .to_snake_case()
        .split('_')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    let (first, last) = (parts.first()?, parts.last()?);
    if NEGATIONS.contains(&first.as_str()) || ABOUT.contains(&last.as_str()) {
        return None;
    }
    if parts.iter().any(|p| AUTHORIZATION.contains(&p.as_str())) {
        return Some(Expect::Credentials);
    }
    let upper_variable = name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    let secret_at = |i: usize| secret_part(&parts, i, upper_variable);
    (0..parts.len()).any(secret_at).then_some(Expect::Value)
}

/// Whether `parts[i]` makes the name a secret.
fn secret_part(parts: &[String], i: usize, upper_variable: bool) -> bool {
    let part = parts[i].as_str();
    let before = i.checked_sub(1).map(|b| parts[b].as_str());
    match part {
        "token" => !before.is_some_and(|b| TOKEN_NOT_SECRET.contains(&b)),
        "key" => {
            parts.len() == 1
                || before.is_some_and(|b| KEY_KINDS.contains(&b))
                || (upper_variable && i == parts.len() - 1)
        }
        _ => WHOLE.contains(&part) || ALWAYS.iter().any(|w| part.ends_with(w)),
    }
}

/// Whether `word` is an HTTP authorization scheme, which stands before the credentials.
pub(super) fn is_auth_scheme(word: &str) -> bool {
    ["bearer", "basic", "digest", "token", "negotiate", "ntlm"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}
