//! The TLS keys of a connection string, taken out before the `postgres` crate reads the
//! rest: a `key=value` string (libpq's syntax) or a `postgres://` / `postgresql://` URL
//! (the keys in its query, percent-decoded). The crate knows `sslmode` only as
//! `disable`, `prefer` or `require`, and the other keys not at all, so it never sees them:
//! [`PgLockBuilder::build`](crate::cluster::PgLockBuilder::build) sets its mode on the
//! parsed configuration instead.

use crate::cluster::LockError;

/// What the string itself says of TLS (a key given twice: the last one, as libpq).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Given {
    pub(super) sslmode: Option<String>,
    pub(super) sslrootcert: Option<String>,
    pub(super) sslcert: Option<String>,
    pub(super) sslkey: Option<String>,
}

impl Given {
    /// The slot of a TLS key, `None` for any other key.
    fn slot(&mut self, key: &str) -> Option<&mut Option<String>> {
        match key {
            "sslmode" => Some(&mut self.sslmode),
            "sslrootcert" => Some(&mut self.sslrootcert),
            "sslcert" => Some(&mut self.sslcert),
            "sslkey" => Some(&mut self.sslkey),
            _ => None,
        }
    }
}

/// The string without its TLS keys, and what they said.
///
/// # Errors
/// [`LockError::Config`] for a `key=value` string that does not parse (an unterminated
/// quote, a key without `=`, a trailing `\`).
pub(super) fn take_tls_keys(conn: &str) -> Result<(String, Given), LockError> {
    let mut given = Given::default();
    let rest = match url_query(conn) {
        Some((base, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| !p.is_empty())
                .filter(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    match given.slot(&percent_decode(k)) {
                        Some(slot) => {
                            *slot = Some(percent_decode(v));
                            false
                        }
                        None => true,
                    }
                })
                .collect();
            if kept.is_empty() {
                base.to_owned()
            } else {
                format!("{base}?{}", kept.join("&"))
            }
        }
        None if is_url(conn) => conn.to_owned(),
        None => {
            let mut kept = Vec::new();
            for (k, v) in key_values(conn)? {
                match given.slot(&k) {
                    Some(slot) => *slot = Some(v),
                    None => kept.push(format!(
                        "{k}='{}'",
                        v.replace('\\', "\\\\").replace('\'', "\\'")
                    )),
                }
            }
            kept.join(" ")
        }
    };
    Ok((rest, given))
}

fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A URL's part before `?` and its query, if it is a URL with a query.
fn url_query(s: &str) -> Option<(&str, &str)> {
    if is_url(s) {
        s.split_once('?')
    } else {
        None
    }
}

/// `%XX` sequences decoded (others kept as they are; bytes that are not UTF-8 become
/// U+FFFD), by the `percent-encoding` crate that `postgres` itself uses.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The pairs of a `key=value` connection string, values unquoted (libpq's syntax: spaces
/// around `=` allowed; a value in single quotes may hold spaces, `\'` and `\\`).
fn key_values(s: &str) -> Result<Vec<(String, String)>, LockError> {
    let bad = |why: &str| LockError::Config(format!("connection string: {why}"));
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(bad(&format!("{key:?} has no '='")));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(bad("an unterminated quote")),
                    Some('\'') => break,
                    Some('\\') => value.push(chars.next().ok_or_else(|| bad("a trailing '\\'"))?),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.push(chars.next().ok_or_else(|| bad("a trailing '\\'"))?);
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}
