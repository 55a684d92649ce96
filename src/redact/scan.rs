//! The walk over a command line, word by word, remembering what the last word said comes next.
//! An argv element is split into words at whitespace as well, since a process that rewrote its
//! title (setproctitle) shows its whole command line as one element.

use super::names::{self, Expect};
use super::tools::{self, Flag, Shape};
use super::{url, REDACTED};
use std::borrow::Cow;

/// What the next word is, after a word that names a secret without holding its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A secret (`--token` VALUE).
    Secret(Expect),
    /// `USER:PASSWORD` (`curl -u` VALUE).
    UserPassword,
}

/// The state of a walk over one command line.
#[derive(Debug, Default)]
pub(super) struct Scanner {
    /// What the next word holds, if a secret.
    next: Option<Next>,
    /// The last program named that has password options of its own ([`tools`]).
    program: Option<&'static str>,
}

/// Bytes that may be part of an option or variable name.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Bytes that end a secret that is not the whole rest of its word (`a=b,token=X,c=d`).
fn ends_inner_value(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b',' | b';' | b'&' | b'"' | b'\'' | b')' | b']' | b'}')
}

impl Scanner {
    /// One argv element. A secret expected from the previous element is this whole element,
    /// spaces and all (`--password 'correct horse'`).
    pub(super) fn element<'a>(&mut self, element: &'a str) -> Cow<'a, str> {
        if let Some(next) = self.next.take() {
            if next == Next::Secret(Expect::Credentials) && names::is_auth_scheme(element) {
                self.next = Some(next);
                return Cow::Borrowed(element);
            }
            // The element is consumed as a value, but may itself announce one (`--auth --token X`).
            let _ = self.words(element);
            return match next {
                Next::UserPassword => user_password(element),
                Next::Secret(_) => Cow::Borrowed(REDACTED),
            };
        }
        self.words(element)
    }

    /// Every whitespace-separated word of `text`, the whitespace kept.
    pub(super) fn words<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        if !text.contains(char::is_whitespace) {
            return self.word(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while !rest.is_empty() {
            let start = rest
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(rest.len());
            out.push_str(&rest[..start]);
            rest = &rest[start..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push_str(&self.word(&rest[..end]));
            rest = &rest[end..];
        }
        Cow::Owned(out)
    }

    /// One word (no whitespace in it).
    fn word<'a>(&mut self, word: &'a str) -> Cow<'a, str> {
        if let Some(next) = self.next.take() {
            return match next {
                Next::Secret(Expect::Credentials) if names::is_auth_scheme(word) => {
                    self.next = Some(next);
                    Cow::Borrowed(word)
                }
                Next::UserPassword => user_password(word),
                Next::Secret(_) => {
                    let _ = self.word(word);
                    Cow::Borrowed(REDACTED)
                }
            };
        }
        if let Some(out) = self.program_flag(word) {
            return out;
        }
        if !word.starts_with('-') {
            if let Some(p) = tools::program(word) {
                self.program = Some(p);
                return Cow::Borrowed(word);
            }
        }
        let (out, next) = keys(&url::userinfo(word));
        self.next = next;
        if out == word {
            Cow::Borrowed(word)
        } else {
            Cow::Owned(out)
        }
    }

    /// `word` redacted as a password option of the current program, if it is one.
    fn program_flag<'a>(&mut self, word: &'a str) -> Option<Cow<'a, str>> {
        let program = self.program?;
        let flag = tools::flag(program, word)?;
        if tools::wraps(program) {
            // What follows the password is another program's command line (`sshpass -p X ssh`).
            self.program = None;
        }
        match flag {
            Flag::Next(Shape::Password) => self.next = Some(Next::Secret(Expect::Value)),
            Flag::Next(Shape::UserPassword) => self.next = Some(Next::UserPassword),
            Flag::Glued(at, Shape::Password) => {
                return Some(Cow::Owned(format!("{}{REDACTED}", &word[..at])))
            }
            Flag::Glued(at, Shape::UserPassword) => {
                let (flag, value) = word.split_at(at);
                return Some(Cow::Owned(format!("{flag}{}", user_password(value))));
            }
        }
        Some(Cow::Borrowed(word))
    }
}

/// `USER:PASSWORD` with the password hidden; a value without `:` is all password.
fn user_password(value: &str) -> Cow<'_, str> {
    match value.split_once(':') {
        Some((user, _)) => Cow::Owned(format!("{user}:{REDACTED}")),
        None => Cow::Borrowed(REDACTED),
    }
}

/// `word` with the value of every secret-named key in it hidden (`--token=X`, `TOKEN:X`,
/// `--opt=a=b,token=X`, `{"password":"X"}`), and what the next word holds when the word ends
/// with a secret's name and no value (`--token`, `Authorization:`, `Bearer`).
fn keys(word: &str) -> (String, Option<Next>) {
    let b = word.as_bytes();
    let mut out = String::with_capacity(word.len());
    let (mut copied, mut i, mut separated) = (0, 0, false);
    while i < b.len() {
        if !matches!(b[i], b'=' | b':') {
            i += 1;
            continue;
        }
        separated = true;
        let Some((start, expect)) = secret_name_before(word, i) else {
            i += 1;
            continue;
        };
        // A key that opens the word owns the rest of it: `--password=a,b` hides `a,b`.
        let opens = word[..start].bytes().all(|c| c == b'-');
        let mut from = i + 1;
        if matches!(b.get(from), Some(b'"' | b'\'')) {
            from += 1;
        }
        let to = if opens {
            b.len()
        } else {
            b[from..]
                .iter()
                .position(|&c| ends_inner_value(c))
                .map_or(b.len(), |n| from + n)
        };
        let value = &word[from..to];
        let awaited = expect == Expect::Credentials && names::is_auth_scheme(value);
        if (value.is_empty() || awaited) && to == b.len() {
            out.push_str(&word[copied..]);
            return (out, Some(Next::Secret(expect)));
        }
        if !value.is_empty() {
            out.push_str(&word[copied..from]);
            out.push_str(REDACTED);
            copied = to;
        }
        i = to.max(i + 1);
    }
    out.push_str(&word[copied..]);
    (out, (!separated).then(|| announces(word)).flatten())
}

/// Where the secret name that ends at the separator `at` starts (a closing quote between them
/// is skipped), and what it expects.
fn secret_name_before(word: &str, at: usize) -> Option<(usize, Expect)> {
    let b = word.as_bytes();
    let mut end = at;
    if end > 0 && matches!(b[end - 1], b'"' | b'\'') {
        end -= 1;
    }
    let start = b[..end]
        .iter()
        .rposition(|&c| !is_name_byte(c))
        .map_or(0, |p| p + 1);
    let name = word[start..end].trim_start_matches('-');
    if name.is_empty() {
        return None;
    }
    names::classify(name).map(|e| (start, e))
}

/// What a word without any separator announces: an option named for a secret (`--token`,
/// `-password`) is followed by it, and so is the scheme word `Bearer`.
fn announces(word: &str) -> Option<Next> {
    if word.starts_with('-') {
        if !word.bytes().all(is_name_byte) {
            return None;
        }
        return names::classify(word).map(Next::Secret);
    }
    word.eq_ignore_ascii_case("bearer")
        .then_some(Next::Secret(Expect::Value))
}
