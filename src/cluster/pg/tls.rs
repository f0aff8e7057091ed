//! TLS for [`PgLock`](super::PgLock): what a connection string asks for (`sslmode`,
//! `sslrootcert`, read as libpq reads them) and, with the cargo feature `postgres-tls`,
//! the rustls connector that does it.
//!
//! The `postgres` crate parses `sslmode` itself but knows only `disable`, `prefer` and
//! `require`, and no `sslrootcert`. So a connection string is read here first: the two
//! verifying modes and the root certificate are taken out, the crate is given `require`,
//! and the connector verifies what the mode says:
//!
//! | `sslmode` | encrypted | server certificate |
//! |---|---|---|
//! | `disable` | no | — |
//! | `prefer` (the default) | if the server offers it | not verified |
//! | `require` | yes | not verified; verified as `verify-ca` if `sslrootcert` is given (libpq's rule) |
//! | `verify-ca` | yes | signed by a root in `sslrootcert` |
//! | `verify-full` | yes | as `verify-ca`, and issued for the host connected to |
//!
//! Without the feature, a string that asks for `require`, `verify-ca`, `verify-full` or
//! gives `sslrootcert` is refused with [`LockError::Config`] (not a handshake error at the
//! first call), and `prefer` connects in plain text, as libpq built without TLS does.

use std::path::PathBuf;

use crate::cluster::LockError;

/// What a connection string asks of TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TlsSpec {
    pub(super) mode: Mode,
    /// `sslrootcert`: a PEM file of root certificates.
    pub(super) root: Option<PathBuf>,
}

/// `sslmode`, as libpq reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl TlsSpec {
    /// Whether the connection must be encrypted (the modes the `postgres` crate alone
    /// cannot do).
    #[cfg(any(test, not(feature = "postgres-tls")))]
    pub(super) fn needs_tls(&self) -> bool {
        matches!(self.mode, Mode::Require | Mode::VerifyCa | Mode::VerifyFull)
            || self.root.is_some()
    }

    /// How the server's certificate is checked.
    #[cfg(any(test, feature = "postgres-tls"))]
    fn verify(&self) -> Mode {
        match self.mode {
            Mode::Require if self.root.is_some() => Mode::VerifyCa,
            mode => mode,
        }
    }
}

/// Takes `sslmode` and `sslrootcert` out of a connection string (a `key=value` string or a
/// `postgres://` / `postgresql://` URL): the string to give the `postgres` crate (with
/// `sslmode=require` in place of a verifying mode) and what was asked.
///
/// # Errors
/// [`LockError::Config`] for an unknown `sslmode` or a `key=value` string that does not
/// parse (an unterminated quote, a key without `=`).
pub(super) fn split_tls(conn: &str) -> Result<(String, TlsSpec), LockError> {
    let mut spec = TlsSpec {
        mode: Mode::Prefer,
        root: None,
    };
    let mut take = |key: &str, value: &str| -> Result<Option<String>, LockError> {
        match key {
            "sslmode" => {
                spec.mode = match value {
                    "disable" => Mode::Disable,
                    "allow" | "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(LockError::Config(format!(
                            "sslmode {other:?}: expected disable, allow, prefer, require, \
                             verify-ca or verify-full"
                        )))
                    }
                };
                let for_crate = match spec.mode {
                    Mode::Disable => "disable",
                    Mode::Prefer => "prefer",
                    _ => "require",
                };
                Ok(Some(for_crate.to_owned()))
            }
            "sslrootcert" => {
                spec.root = Some(PathBuf::from(value));
                Ok(None)
            }
            _ => Ok(Some(value.to_owned())),
        }
    };
    let out = match url_query(conn) {
        Some((base, query)) => {
            let mut kept = Vec::new();
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let value = percent_decode(v);
                if let Some(v) = take(&percent_decode(k), &value)? {
                    kept.push(if v == value {
                        pair.to_owned()
                    } else {
                        format!("{k}={v}")
                    });
                }
            }
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
                if let Some(v) = take(&k, &v)? {
                    kept.push(format!(
                        "{k}='{}'",
                        v.replace('\\', "\\\\").replace('\'', "\\'")
                    ));
                }
            }
            kept.join(" ")
        }
    };
    Ok((out, spec))
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

/// `%XX` sequences decoded (others kept as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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

#[cfg(feature = "postgres-tls")]
pub(super) use connector::connector;

#[cfg(feature = "postgres-tls")]
mod connector {
    use std::sync::Arc;

    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::client::WebPkiServerVerifier;
    use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{
        CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
    };
    use tokio_postgres_rustls::MakeRustlsConnect;

    use super::{Mode, TlsSpec};
    use crate::cluster::LockError;

    /// The connector for `spec` (module notes' table).
    pub(in crate::cluster) fn connector(spec: &TlsSpec) -> Result<MakeRustlsConnect, LockError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match spec.verify() {
            Mode::Disable | Mode::Prefer | Mode::Require => Arc::new(Unverified(provider.clone())),
            Mode::VerifyCa => Arc::new(AnyName(webpki(spec, &provider)?)),
            Mode::VerifyFull => webpki(spec, &provider)?,
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| LockError::Config(format!("TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }

    /// The standard verifier (chain and host name) over the roots in `sslrootcert`.
    fn webpki(
        spec: &TlsSpec,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<WebPkiServerVerifier>, LockError> {
        let Some(path) = &spec.root else {
            return Err(LockError::Config(
                "sslmode=verify-ca and verify-full need sslrootcert (a PEM file of the root \
                 certificates to trust)"
                    .into(),
            ));
        };
        let mut roots = RootCertStore::empty();
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| LockError::Config(format!("sslrootcert {}: {e}", path.display())))?;
        for cert in certs {
            let cert = cert
                .map_err(|e| LockError::Config(format!("sslrootcert {}: {e}", path.display())))?;
            roots
                .add(cert)
                .map_err(|e| LockError::Config(format!("sslrootcert {}: {e}", path.display())))?;
        }
        if roots.is_empty() {
            return Err(LockError::Config(format!(
                "sslrootcert {}: no certificate in it",
                path.display()
            )));
        }
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| LockError::Config(format!("TLS: {e}")))
    }

    /// `require` and `prefer`: encrypted, the certificate not checked (libpq's
    /// semantics); the handshake's signatures still are.
    #[derive(Debug)]
    struct Unverified(Arc<CryptoProvider>);

    impl ServerCertVerifier for Unverified {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            verify_tls12_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            verify_tls13_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    /// `verify-ca`: the chain is checked against the roots, the host name is not.
    #[derive(Debug)]
    struct AnyName(Arc<WebPkiServerVerifier>);

    impl ServerCertVerifier for AnyName {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
            ocsp: &[u8],
            now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            match self
                .0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Err(rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                )) => Ok(ServerCertVerified::assertion()),
                other => other,
            }
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            self.0.verify_tls12_signature(message, cert, dss)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            self.0.verify_tls13_signature(message, cert, dss)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.supported_verify_schemes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> (String, TlsSpec) {
        split_tls(s).expect("parses")
    }

    #[test]
    fn key_value_strings_lose_the_verifying_mode_and_the_root() {
        let (out, spec) =
            split("host=db user=app sslmode=verify-full sslrootcert='/etc/ca dir/root.pem'");
        assert_eq!(out, "host='db' user='app' sslmode='require'");
        assert_eq!(spec.mode, Mode::VerifyFull);
        assert_eq!(
            spec.root.as_deref(),
            Some(std::path::Path::new("/etc/ca dir/root.pem"))
        );
        assert!(spec.needs_tls());

        let (out, spec) = split("host = db password='it\\'s' sslmode=require");
        assert_eq!(out, "host='db' password='it\\'s' sslmode='require'");
        assert_eq!((spec.mode, spec.verify()), (Mode::Require, Mode::Require));

        let (_, spec) = split("host=db sslmode=require sslrootcert=/ca.pem");
        assert_eq!(
            spec.verify(),
            Mode::VerifyCa,
            "libpq: a root file makes require verify-ca"
        );

        let (out, spec) = split("host=db");
        assert_eq!(out, "host='db'");
        assert_eq!(spec.mode, Mode::Prefer);
        assert!(!spec.needs_tls());
    }

    #[test]
    fn urls_lose_them_from_the_query() {
        let (out, spec) = split(
            "postgresql://app@db:5432/app?sslmode=verify-ca&sslrootcert=%2Fetc%2Froot.pem&application_name=x",
        );
        assert_eq!(
            out,
            "postgresql://app@db:5432/app?sslmode=require&application_name=x"
        );
        assert_eq!(spec.mode, Mode::VerifyCa);
        assert_eq!(
            spec.root.as_deref(),
            Some(std::path::Path::new("/etc/root.pem"))
        );
        let (out, spec) = split("postgres://db/app?sslrootcert=/r.pem");
        assert_eq!(out, "postgres://db/app");
        assert!(spec.needs_tls());
        assert_eq!(split("postgres://db/app").0, "postgres://db/app");
    }

    #[test]
    fn bad_strings_are_config_errors() {
        for bad in [
            "host=db sslmode=maybe",
            "host='db",
            "host",
            "postgres://db?sslmode=nope",
        ] {
            assert!(matches!(split_tls(bad), Err(LockError::Config(_))), "{bad}");
        }
    }
}

#[cfg(all(test, not(feature = "postgres-tls")))]
mod without_the_feature {
    use crate::cluster::{LockError, PgLock};

    #[test]
    fn asking_for_tls_is_a_config_error_that_names_the_feature() {
        for conn in [
            "host=db sslmode=require",
            "host=db sslmode=verify-full sslrootcert=/ca.pem",
            "postgres://db/app?sslrootcert=/ca.pem",
        ] {
            match PgLock::new(conn) {
                Err(LockError::Config(msg)) => assert!(msg.contains("postgres-tls"), "{msg}"),
                other => panic!("{conn}: {other:?}"),
            }
        }
        assert!(
            PgLock::new("host=db sslmode=prefer").is_ok(),
            "plain text, as libpq without TLS"
        );
    }
}
