//! The user information of URLs: `scheme://user:PASSWORD@host` keeps the user, and a user alone
//! that is not a plain login name (`https://ghp_…@github.com`, a token passed as the user) is
//! hidden whole. The user information runs to the last `@` before the next URL, so a password
//! holding `/` or `@` (which RFC 3986 wants percent-encoded, but shells pass as typed) is hidden
//! whole. A `@` in a path (`https://registry/@scope/pkg`) is not user information: a user before a
//! `:` holds no `/`, and without a `:` what follows the `@` must read as a host.

use super::REDACTED;
use std::borrow::Cow;

/// `word` with the password of every URL in it replaced by [`REDACTED`].
pub(super) fn userinfo(word: &str) -> Cow<'_, str> {
    if !word.contains("://") || !word.contains('@') {
        return Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let region = tail.find("://").map_or(tail, |next| &tail[..next]);
        let Some(end) = region.rfind('@') else {
            rest = tail;
            continue;
        };
        let info = &tail[..end];
        match info.split_once(':') {
            Some((user, _)) if !user.contains(['/', '?', '#']) => {
                out.push_str(user);
                out.push(':');
                out.push_str(REDACTED);
            }
            _ if !host_follows(&tail[end + 1..]) => {
                rest = tail;
                continue;
            }
            _ if login_name(info) => out.push_str(info),
            _ => out.push_str(REDACTED),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Whether `text` (what follows an `@`) starts with a host name as URLs write one: with a dot,
/// a port or `localhost` (`github.com/…`, `db:5432`), unlike a path's `@scope/pkg`.
fn host_follows(text: &str) -> bool {
    let end = text.find(['/', '?', '#']).unwrap_or(text.len());
    let host = &text[..end];
    let (name, port) = host.split_once(':').unwrap_or((host, ""));
    !name.is_empty()
        && (name.contains('.') || name == "localhost" || !port.is_empty())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']'))
}

/// A user that reads as a login (`git`, `alice`, `svc-ci`), not a token: lower-case letters,
/// `.`, `_`, `-`, at most 16 of them.
fn login_name(user: &str) -> bool {
    !user.is_empty()
        && user.len() <= 16
        && user
            .bytes()
            .all(|b| b.is_ascii_lowercase() || matches!(b, b'.' | b'_' | b'-'))
}
