//! What gpuledger hides in text that leaves the machine: secrets in command lines and
//! environment values (serve's `/snapshot.json`, `report`, `capture`), and with `report
//! --redact` the host and user names ([`hosts`]).
//!
//! A secret value is replaced by [`REDACTED`]; the argument count and every other argument stay,
//! so the command stays readable. What counts as a secret:
//! - the value of an option, variable or key whose name has a secret part ([`names`]: password,
//!   passwd, pwd, pass, passphrase, secret, token, auth, session, cookie, credential(s), jwt,
//!   bearer, pat, authorization, api/access/private/client… `key`; camelCase, snake and kebab
//!   spellings alike, any case), written `--k V`, `--k=V`, `-k V`, `k=V`, `k:V`, `--k:V`, or as a
//!   later key of one argument (`--opt=a=b,token=V`, `{"password":"V"}`). The word after such an
//!   option is the secret even when it starts with `-`. Names about a secret (`--token-file`,
//!   `--secret-name`, `--auth-type`), switches (`--no-password`), vocabulary tokens
//!   (`--pad-token-id`, `--eos-token`) and `PWD`/`OLDPWD` are not secrets; nor are `--tokenizer`,
//!   `--author`, `--passes`, `--max-tokens`;
//! - HTTP credentials: `Authorization: Bearer V` (the scheme word stays), `Bearer V`;
//! - a URL's password (`scheme://user:V@host`, up to the last `@`, so `/` in it is hidden too),
//!   or a user that is not a plain login name (`https://TOKEN@host`);
//! - short password options of the programs in [`tools`] (`mysql -pV`, `mysql -p V`,
//!   `sshpass -p V`, `curl -u user:V` …), only after that program's name: `-p 8080` of any
//!   other program is a port and stays.
//!
//! An argv element holding spaces (a process that rewrote its title) is read word by word.

pub mod hosts;
mod names;
mod scan;
mod tools;
mod url;

#[cfg(test)]
mod tests;

use crate::ledger::Ledger;
use scan::Scanner;
use std::borrow::Cow;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Whether command lines and environment values leave as they are or with secrets hidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cmdlines {
    /// Secrets replaced by [`REDACTED`] (the default).
    #[default]
    Redacted,
    /// As the process shows them (`--show-cmdline`).
    AsIs,
}

/// `argv` with its secrets replaced by [`REDACTED`]; as many elements as `argv`.
pub fn argv(argv: &[String]) -> Vec<String> {
    let mut scanner = Scanner::default();
    argv.iter()
        .map(|a| scanner.element(a).into_owned())
        .collect()
}

/// A command line held as one string (words separated by spaces) with its secrets replaced.
pub fn line(line: &str) -> Cow<'_, str> {
    Scanner::default().words(line)
}

/// An environment variable's value, hidden whole when the name is a secret's
/// (`HF_TOKEN`, `WANDB_API_KEY`), else with the secrets in it hidden (a URL's password).
pub fn env_value<'a>(name: &str, value: &'a str) -> Cow<'a, str> {
    if names::classify(name).is_some() {
        Cow::Borrowed(REDACTED)
    } else {
        line(value)
    }
}

/// `ledger` with every process's command line and environment redacted.
pub fn ledger(ledger: &mut Ledger) {
    for p in &mut ledger.processes {
        p.cmdline = argv(&p.cmdline);
        for (k, v) in p.env.iter_mut() {
            *v = env_value(k, v).into_owned();
        }
    }
}
