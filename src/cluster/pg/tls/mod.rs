//! TLS for [`PgLock`](super::PgLock): what a connection asks of TLS, read as libpq reads
//! it (the connection string, then the environment, then libpq's files under `~`), and,
//! with the cargo feature `postgres-tls`, the rustls connector that does it.
//!
//! # Design
//! The `postgres` crate parses `sslmode` itself but knows only `disable`, `prefer` and
//! `require`, and none of `sslrootcert`, `sslcert`, `sslkey` or the `PGSSL*` variables.
//! So the four keys are taken out of the string first (`conninfo.rs`), completed from the
//! environment and the defaults here ([`Settings`]), the crate is given the mode it knows
//! (`require` for the verifying ones), and the connector (`connector.rs`) verifies what
//! the mode says and presents the client certificate. Every file is read when the lock is
//! built, so a bad file is a [`LockError::Config`] from
//! [`build`](super::PgLockBuilder::build), not an error at the first call. The
//! environment reaches [`read`] as a lookup function ([`Env`]): the lock passes the
//! process's, the unit tests a map, so no test changes the process's environment.
//!
//! # Where each setting comes from
//! Each key is taken from the string; if the string does not name it, from its
//! environment variable; if that is unset too, from libpq's default:
//!
//! | key | variable | default |
//! |---|---|---|
//! | `sslmode` | `PGSSLMODE` | `verify-full` if `sslrootcert` is `system`, else `prefer` |
//! | `sslrootcert` | `PGSSLROOTCERT` | `~/.postgresql/root.crt`, if the file exists |
//! | `sslcert` | `PGSSLCERT` | `~/.postgresql/postgresql.crt`, if the file exists |
//! | `sslkey` | `PGSSLKEY` | `~/.postgresql/postgresql.key` |
//!
//! `~` is `$HOME`; on Windows the files are in `%APPDATA%\postgresql\`. An empty value
//! (in the string or the variable) means the default, as in libpq.
//!
//! # What each mode does
//! | `sslmode` | encrypted | server certificate |
//! |---|---|---|
//! | `disable` | no | — (no file is looked at) |
//! | `allow`, `prefer` | if the server offers it | not verified |
//! | `require` | yes | not verified; verified as `verify-ca` if there is a root file (libpq's rule) |
//! | `verify-ca` | yes | signed by a root in `sslrootcert` |
//! | `verify-full` | yes | as `verify-ca`, and issued for the host connected to |
//!
//! `sslrootcert=system` trusts the operating system's store (`rustls-native-certs`;
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` replace it when set, as with OpenSSL), and then
//! only `verify-full` is allowed, as in libpq: a weaker mode (from the string or
//! `PGSSLMODE`) is an error, since anyone can get a certificate the system trusts for a
//! name they control. The verifying modes without a root file are an error that names
//! the default path and `sslrootcert=system`.
//!
//! A client certificate (`sslcert`: PEM, the certificate and any intermediates; `sslkey`:
//! its PEM key, PKCS#8, PKCS#1 or SEC1, unencrypted) is presented when the server asks
//! for one (`clientcert=verify-ca` or `verify-full`, or `cert` authentication in
//! `pg_hba.conf`). A key that does not match the certificate is refused at build.
//!
//! A Unix-domain socket never carries TLS (libpq's rule): a connection whose hosts are
//! all socket directories connects in plain text whatever the mode, and reads no file.
//!
//! # Where PgLock departs from libpq
//! - Stricter: a file that the string or a variable names must exist. libpq goes on
//!   without a missing `sslcert`, and without a missing `sslrootcert` under `require`,
//!   which turns a typing error into a weaker connection; and it ignores an `sslkey`
//!   without a certificate, which is an error here.
//! - `prefer` checks no certificate, even with a root file (libpq checks the chain then).
//! - Not read: `sslpassword` (encrypted keys), `sslcertmode`, `sslcrl`, `sslcrldir`,
//!   `sslsni`, the protocol-version keys (the `postgres` crate refuses unknown keys, so
//!   naming one is a configuration error, never ignored), `PGREQUIRESSL`, service files,
//!   and the `PG*` variables other than these four. The key file's permissions are not
//!   checked (libpq refuses a key that others may read). Without `$HOME` there are no
//!   defaults (libpq asks the password database).
//!
//! Without the feature, a connection that asks for TLS (a mode from `require` up, from
//! the string or `PGSSLMODE`, or a named `sslrootcert`, `sslcert` or `sslkey`) is refused
//! at build with an error that names the feature; otherwise it connects in plain text,
//! as libpq built without TLS does, and the files under `~` are not looked at.

use std::ffi::OsString;
use std::path::PathBuf;

use postgres::config::SslMode;

use crate::cluster::LockError;

#[cfg(feature = "postgres-tls")]
mod connector;
mod conninfo;
#[cfg(test)]
mod tests;

#[cfg(feature = "postgres-tls")]
pub(super) use connector::connector;

/// An environment: the value of a variable, if set. The lock passes [`process_env`].
pub(super) type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The process's environment.
pub(super) fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// `sslmode`, as libpq reads it (`allow` is taken as `prefer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(value: &str, from: &str) -> Result<Mode, LockError> {
        Ok(match value {
            "disable" => Mode::Disable,
            "allow" | "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(LockError::Config(format!(
                    "{from} {other:?}: expected disable, allow, prefer, require, verify-ca or \
                     verify-full"
                )))
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// `sslrootcert` before any file is looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RootSetting {
    /// Not given: `~/.postgresql/root.crt` if it exists.
    Default,
    /// `system`: the operating system's store.
    System,
    /// A file named in the string or the environment.
    File(PathBuf),
}

/// A file named in the string or the environment, with where it was named (`sslcert`,
/// `PGSSLCERT`, ...), for messages.
type Named = (PathBuf, &'static str);

/// A connection's TLS settings: the string's, else the environment's, else libpq's
/// defaults (module notes), before any file is read.
#[derive(Clone, Debug)]
pub(super) struct Settings {
    mode: Mode,
    /// Where `mode` came from: `sslmode`, `PGSSLMODE`, or the default.
    mode_from: &'static str,
    root: RootSetting,
    /// Where `root` was named (`sslrootcert`, `PGSSLROOTCERT`), if it was.
    root_from: &'static str,
    /// `sslcert` and `sslkey` where named; `None`: the default file.
    cert: Option<Named>,
    key: Option<Named>,
    /// `~/.postgresql` (`%APPDATA%\postgresql`), where the defaults live; `None` without
    /// a home directory. (Without the feature, no file is looked at.)
    #[cfg(any(test, feature = "postgres-tls"))]
    dir: Option<PathBuf>,
}

/// The connection string without its TLS keys (for the `postgres` crate), and the TLS
/// settings of the connection, completed from `env`.
///
/// # Errors
/// [`LockError::Config`] for a string that does not parse, an unknown `sslmode`, or
/// `sslrootcert=system` with a mode weaker than `verify-full`.
pub(super) fn read(conn: &str, env: Env<'_>) -> Result<(String, Settings), LockError> {
    let (rest, given) = conninfo::take_tls_keys(conn)?;
    // The string's value (even empty), else the variable's.
    let pick = |value: Option<String>, key: &'static str, var: &'static str| {
        value
            .map(|v| (OsString::from(v), key))
            .or_else(|| env(var).map(|v| (v, var)))
    };
    let non_empty = |p: Option<(OsString, &'static str)>| p.filter(|(v, _)| !v.is_empty());
    let (root, root_from) = match non_empty(pick(given.sslrootcert, "sslrootcert", "PGSSLROOTCERT"))
    {
        Some((v, from)) if v == "system" => (RootSetting::System, from),
        Some((v, from)) => (RootSetting::File(v.into()), from),
        None => (RootSetting::Default, "default"),
    };
    let (mode, mode_from) = match pick(given.sslmode, "sslmode", "PGSSLMODE") {
        Some((v, from)) => (Mode::parse(&v.to_string_lossy(), from)?, from),
        None if root == RootSetting::System => (Mode::VerifyFull, "sslrootcert=system"),
        None => (Mode::Prefer, "default"),
    };
    if root == RootSetting::System && mode != Mode::VerifyFull {
        return Err(LockError::Config(format!(
            "{mode_from}={} may not be used with {root_from}=system: use verify-full, since \
             anyone can get a certificate the system trusts for a name they control",
            mode.name()
        )));
    }
    let named = |p: Option<(OsString, &'static str)>| non_empty(p).map(|(v, f)| (v.into(), f));
    let settings = Settings {
        mode,
        mode_from,
        root,
        root_from,
        cert: named(pick(given.sslcert, "sslcert", "PGSSLCERT")),
        key: named(pick(given.sslkey, "sslkey", "PGSSLKEY")),
        #[cfg(any(test, feature = "postgres-tls"))]
        dir: user_dir(env),
    };
    Ok((rest, settings))
}

/// libpq's directory of default files: `$HOME/.postgresql` (`%APPDATA%\postgresql` on
/// Windows).
#[cfg(any(test, feature = "postgres-tls"))]
fn user_dir(env: Env<'_>) -> Option<PathBuf> {
    let (var, sub) = if cfg!(windows) {
        ("APPDATA", "postgresql")
    } else {
        ("HOME", ".postgresql")
    };
    env(var)
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(sub))
}

impl Settings {
    /// The mode to give the `postgres` crate: `require` for the verifying modes, whose
    /// checks the connector makes.
    pub(super) fn crate_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The mode and where it came from: `PGSSLMODE=require`, `sslmode=verify-full`.
    fn mode_said(&self) -> String {
        match self.mode_from {
            from @ ("sslmode" | "PGSSLMODE") => format!("{from}={}", self.mode.name()),
            from => format!("sslmode={} (from {from})", self.mode.name()),
        }
    }

    /// What asks for TLS, if anything does (what a build without the feature refuses).
    #[cfg(any(test, not(feature = "postgres-tls")))]
    pub(super) fn asks_for_tls(&self) -> Option<String> {
        if self.mode == Mode::Disable {
            return None;
        }
        if self.mode != Mode::Prefer {
            return Some(self.mode_said());
        }
        if self.root != RootSetting::Default {
            return Some(format!("{} is given", self.root_from));
        }
        self.cert
            .as_ref()
            .or(self.key.as_ref())
            .map(|(_, from)| format!("{from} is given"))
    }

    /// The files the connector reads, found as the module notes say.
    ///
    /// # Errors
    /// [`LockError::Config`] for a named file that does not exist, a file that cannot be
    /// looked at, a verifying mode without roots, or a certificate without its key (and
    /// a key without a certificate).
    #[cfg(any(test, feature = "postgres-tls"))]
    pub(super) fn locate(&self) -> Result<TlsSpec, LockError> {
        if self.mode == Mode::Disable {
            return Ok(TlsSpec::plain());
        }
        let roots = self.roots()?;
        let verify = match (self.mode, roots) {
            (Mode::Disable | Mode::Prefer, _) | (Mode::Require, None) => Verify::Nothing,
            (Mode::Require | Mode::VerifyCa, Some(roots)) => Verify::Chain(roots),
            (Mode::VerifyFull, Some(roots)) => Verify::Full(roots),
            (Mode::VerifyCa | Mode::VerifyFull, None) => return Err(self.no_roots()),
        };
        Ok(TlsSpec {
            verify,
            client: self.client()?,
        })
    }

    /// The roots, if any: named, the system's, or the default file if it exists.
    #[cfg(any(test, feature = "postgres-tls"))]
    fn roots(&self) -> Result<Option<Roots>, LockError> {
        Ok(match &self.root {
            RootSetting::System => Some(Roots::System),
            RootSetting::File(path) => {
                must_exist(path, self.root_from)?;
                Some(Roots::File(path.clone()))
            }
            RootSetting::Default => self.default_file("root.crt")?.map(Roots::File),
        })
    }

    /// A verifying mode found no roots: libpq's message, with this crate's names.
    #[cfg(any(test, feature = "postgres-tls"))]
    fn no_roots(&self) -> LockError {
        let missing = match &self.dir {
            Some(dir) => format!("{} does not exist", dir.join("root.crt").display()),
            None => "no sslrootcert is given and there is no home directory ($HOME)".into(),
        };
        LockError::Config(format!(
            "{} verifies the server's certificate, but {missing}: name a PEM file of the \
             root certificates to trust in sslrootcert (or PGSSLROOTCERT), use \
             sslrootcert=system for the system's trust store, or choose a mode that does not \
             verify",
            self.mode_said()
        ))
    }

    /// The client certificate and its key, if there is a certificate.
    #[cfg(any(test, feature = "postgres-tls"))]
    fn client(&self) -> Result<Option<(PathBuf, PathBuf)>, LockError> {
        let cert = match &self.cert {
            Some((path, from)) => {
                must_exist(path, from)?;
                Some(path.clone())
            }
            None => self.default_file("postgresql.crt")?,
        };
        let Some(cert) = cert else {
            return match &self.key {
                Some((path, from)) => Err(LockError::Config(format!(
                    "{from} names the key {} but there is no client certificate (sslcert, \
                     PGSSLCERT or ~/.postgresql/postgresql.crt)",
                    path.display()
                ))),
                None => Ok(None),
            };
        };
        let key = match &self.key {
            Some((path, from)) => {
                must_exist(path, from)?;
                path.clone()
            }
            None => self.default_file("postgresql.key")?.ok_or_else(|| {
                let looked = match &self.dir {
                    Some(dir) => format!("{} does not exist", dir.join("postgresql.key").display()),
                    None => "there is no home directory ($HOME) for the default".into(),
                };
                LockError::Config(format!(
                    "the client certificate {} has no private key: {looked}; name it in sslkey \
                     (or PGSSLKEY)",
                    cert.display()
                ))
            })?,
        };
        Ok(Some((cert, key)))
    }

    /// `~/.postgresql/<name>` if it exists.
    #[cfg(any(test, feature = "postgres-tls"))]
    fn default_file(&self, name: &str) -> Result<Option<PathBuf>, LockError> {
        let Some(path) = self.dir.as_ref().map(|d| d.join(name)) else {
            return Ok(None);
        };
        match std::fs::metadata(&path) {
            Ok(_) => Ok(Some(path)),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            // libpq's rule too: only absence means "no such default".
            Err(e) => Err(LockError::Config(format!("{}: {e}", path.display()))),
        }
    }
}

/// A named file: there, or a configuration error that says who named it.
#[cfg(any(test, feature = "postgres-tls"))]
fn must_exist(path: &std::path::Path, from: &str) -> Result<(), LockError> {
    std::fs::metadata(path)
        .map(|_| ())
        .map_err(|e| LockError::Config(format!("{from} {}: {e}", path.display())))
}

/// What the connector does: how it checks the server, and what it presents.
#[cfg(any(test, feature = "postgres-tls"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TlsSpec {
    pub(super) verify: Verify,
    /// The client certificate (PEM chain) and its key, presented when the server asks.
    pub(super) client: Option<(PathBuf, PathBuf)>,
}

#[cfg(any(test, feature = "postgres-tls"))]
impl TlsSpec {
    /// No checks and no client certificate: for connections that never use TLS.
    fn plain() -> TlsSpec {
        TlsSpec {
            verify: Verify::Nothing,
            client: None,
        }
    }
}

/// How the server's certificate is checked.
#[cfg(any(test, feature = "postgres-tls"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verify {
    /// Not at all (`prefer`; `require` without roots); the handshake's signatures are.
    Nothing,
    /// Its chain up to one of the roots (`verify-ca`; `require` with roots).
    Chain(Roots),
    /// Its chain and its name (`verify-full`).
    Full(Roots),
}

/// Where the roots come from.
#[cfg(any(test, feature = "postgres-tls"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Roots {
    /// The operating system's store (`sslrootcert=system`).
    System,
    /// A PEM file of root certificates.
    File(PathBuf),
}
