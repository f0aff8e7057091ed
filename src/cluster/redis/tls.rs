//! TLS for a [`RedisLock`](super::RedisLock) (cargo feature `redis-tls`): the files a
//! `rediss://` connection uses, read and checked when the lock is built, and the rustls
//! provider the `redis` crate's connector needs.
//!
//! # Design
//! The `redis` crate makes its rustls configuration itself at each connection (the
//! system's roots unless a CA is given, a client certificate if one is), with rustls's
//! process-wide default provider. So `build` reads every file and makes the same
//! configuration once with ring's provider, so that a file that is missing, does not
//! parse, or a key that does not match its certificate is a [`LockError::Config`] there
//! and never an error at the first run; and it installs ring's provider as the process
//! default if none is installed, as rustls itself does when ring is its only provider
//! (where another crate also brings aws-lc-rs, rustls would otherwise panic at the
//! first connection).

use crate::sync::Arc;
use std::path::PathBuf;

use redis::{Client, ClientTlsConfig, ConnectionInfo, TlsCertificates};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::RedisLockBuilder;
use crate::cluster::LockError;

/// The files a TLS connection uses (none: the system's roots, no client certificate).
#[derive(Clone, Debug, Default)]
pub(super) struct Files {
    root: Option<PathBuf>,
    client: Option<(PathBuf, PathBuf)>,
}

impl RedisLockBuilder {
    /// The CA (PEM) that signed the server's certificate, instead of the system's roots,
    /// for a `rediss://` URL (feature `redis-tls`). The host name is checked all the same.
    #[must_use]
    pub fn tls_root_certificate(mut self, ca_file: impl Into<PathBuf>) -> Self {
        self.tls.root = Some(ca_file.into());
        self
    }

    /// A client certificate (PEM) and its key (PEM: PKCS#8, PKCS#1 or SEC1,
    /// unencrypted), presented when the server asks for one (`tls-auth-clients`), for a
    /// `rediss://` URL (feature `redis-tls`).
    #[must_use]
    pub fn tls_client_certificate(
        mut self,
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> Self {
        self.tls.client = Some((cert_file.into(), key_file.into()));
        self
    }
}

impl Files {
    /// The client for `info` (a `rediss://` URL's) with these files, checked.
    pub(super) fn client(&self, info: ConnectionInfo) -> Result<Client, LockError> {
        let root = self.root.as_ref().map(read).transpose()?;
        let client = match &self.client {
            Some((cert, key)) => Some((read(cert)?, read(key)?)),
            None => None,
        };
        check(root.as_deref(), client.as_ref())?;
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Lost only to a thread that installed one meanwhile, which serves as well.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let certificates = TlsCertificates {
            client_tls: client.map(|(client_cert, client_key)| ClientTlsConfig {
                client_cert,
                client_key,
            }),
            root_cert: root,
        };
        Client::build_with_tls(info, certificates)
            .map_err(|e| LockError::Config(format!("TLS settings: {e}")))
    }
}

/// A file's bytes, or an error that names it.
fn read(path: &PathBuf) -> Result<Vec<u8>, LockError> {
    std::fs::read(path).map_err(|e| LockError::Config(format!("{}: {e}", path.display())))
}

/// Makes the configuration the connections will make, with ring's provider: the roots
/// parse, the client's chain and key parse and match.
fn check(root: Option<&[u8]>, client: Option<&(Vec<u8>, Vec<u8>)>) -> Result<(), LockError> {
    let config = |what: &str, e: &dyn std::fmt::Display| {
        LockError::Config(format!("TLS settings: {what}: {e}"))
    };
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = root {
        let certs = certificates(pem).map_err(|e| config("the CA file", &e))?;
        if certs.is_empty() {
            return Err(config("the CA file", &"no certificate in it"));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| config("the CA file", &e))?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| config("the provider", &e))?
    .with_root_certificates(roots);
    if let Some((cert, key)) = client {
        let chain = certificates(cert).map_err(|e| config("the client certificate", &e))?;
        if chain.is_empty() {
            return Err(config("the client certificate", &"no certificate in it"));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| config("the client key", &e))?;
        builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| config("the client certificate and key", &e))?;
    }
    Ok(())
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, rustls::pki_types::pem::Error> {
    CertificateDer::pem_slice_iter(pem).collect()
}
